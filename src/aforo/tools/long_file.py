"""A file too long for one result, shown as what it defines plus the lines the question names.

Cut to its head, a long file hides its answer: on a real package the definition a question asked for sat
at line 263 of a file Read cut at line 137, and the model never saw it. So Read shows such a file as
its outline (each class, function and top-level constant with its line number, methods indented
under their class) and then the definitions whose names the run's question spells, a few dozen lines
each, within the same budget; it says what it left out and how to read it (`Read path:N-M`). A Python
file, that is: a file of another language is shown as its first lines, then the lines around the
first uses of the question's code words.

Its heading says "more than one Read shows", never "too long": asked which of two files is longer,
the 1.5B model named the shorter after reading both outlines, each headed "too long to show whole".
"""

from __future__ import annotations

import re
from collections.abc import Callable

from aforo.headings import FILE_LINES, LEFT_OUT, line_count
from aforo.tools.outline import summary
from aforo.tools.syntax import Site, outline

REGION_LINES = 40  # of one definition the question names: its head, where the signature and docs are
_MAX_REGIONS = 3
_AROUND = 3  # lines shown either side of a line that mentions a name of the question
_MAX_LINE_CHARS = 240
_NOTE_ROOM = 80  # for the line that says how many definitions the outline left out
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_CAMEL = re.compile(r"[a-z][A-Z]")


def question_names(question: str) -> set[str]:
    """The words of the question that may name code, lowercased (`group`, `help_formatter`)."""
    return {w.lower() for w in _IDENTIFIER.findall(question) if len(w) > 2}


def view(shown_path: str, source: str, question: str, budget: int) -> tuple[str, str] | None:
    """(the view, its one-line facts), or None when `source` does not parse or the view would show no
    definition (a file of data: then its head says more)."""
    sites = outline(source, shown_path)
    if sites is None:
        return None
    lines = source.splitlines()
    # Constants by convention (UPPER_CASE) only: a module's other assignments are its working state. The
    # top level and its classes' methods: a function nested in a function is its detail.
    classes = {s.name for s in sites if s.kind == "class"}
    listed = [
        s
        for s in sites
        if (s.kind != "const" and (s.depth == 0 or (s.depth == 1 and s.parent in classes)))
        or (s.depth == 0 and s.short.isupper())
    ]
    wanted = question_names(question)
    named = sorted((s for s in sites if s.kind != "const" and s.short.lower() in wanted), key=_rank(wanted))
    named = named[:_MAX_REGIONS]
    if not listed and not named:
        return None
    defines = summary(sites)  # as a whole file's Read says it, names bounded, counts exact
    facts = _heading(shown_path, lines) + (f"; {defines}" if defines else "")
    head = (
        f"({_heading(shown_path, lines)}, more than one Read shows. Its definitions"
        f"{', then the ones your question names' if named else ''}; Read {shown_path}:N-M for lines N to M.)"
    )
    regions = [(s.start, min(s.end, s.start + REGION_LINES - 1), s.name) for s in named]
    regions = regions or _mentioned(lines, question)
    # The regions get what they need, up to half of what is left; the outline the rest.
    room = budget - len(head) - 1 - _NOTE_ROOM
    wanted_room = sum(_size(lines, first, last) for first, last, _ in regions)
    listing = [f"{s.line}\t{'    ' * s.depth}{s.signature}" for s in listed]
    outline_lines, left_out = _fit(listing, room - min(wanted_room, room // 2))
    out = [head, *outline_lines]
    if left_out:
        out.append(f"{LEFT_OUT(count=left_out, what='definitions')}; Find NAME tells where one is)")
    return _with_regions(out, lines, regions, shown_path, budget), facts


def text_view(shown_path: str, source: str, question: str, budget: int) -> tuple[str, str] | None:
    """A long file of any other text: its first lines, then the lines around the first uses of the
    question's code words (`help_formatter`, `maxRetries`, a quoted name); None when it has none."""
    lines = source.splitlines()
    regions = _mentioned(lines, question)
    if not regions:
        return None
    head = (
        f"({_heading(shown_path, lines)}, more than one Read shows. Its first lines, then the lines your "
        f"question names; Read {shown_path}:N-M for lines N to M.)"
    )
    room = budget - len(head) - 1
    wanted_room = sum(_size(lines, first, last) for first, last, _ in regions)
    start, _ = _fit(
        [f"{n}\t{_cut(line)}" for n, line in enumerate(lines, start=1)], room - min(wanted_room, room // 2)
    )
    return _with_regions([head, *start], lines, regions, shown_path, budget), _heading(shown_path, lines)


def _heading(shown_path: str, lines: list[str]) -> str:
    return FILE_LINES(path=shown_path, count=line_count(len(lines)))


def _with_regions(
    out: list[str], lines: list[str], regions: list[tuple[int, int, str]], shown_path: str, budget: int
) -> str:
    """`out`, then each region's lines as far as `budget` goes, and where to read what did not fit."""
    size = sum(len(line) + 1 for line in out)
    for first, last, why in regions:
        pointer = f"({why}: Read {shown_path}:{first}-{last})"
        block = [f"(lines {first}-{last}: {why})"]
        block += [f"{n}\t{_cut(lines[n - 1])}" for n in range(first, last + 1)]
        # Room is kept for the line that says where the rest is, if the block is cut.
        block, cut = _fit(block, budget - size - len(pointer) - 1)
        if len(block) <= 1:
            block = [pointer] if size + len(pointer) + 1 <= budget else []
        elif cut:
            block.append(pointer)
        out += block
        size += sum(len(line) + 1 for line in block)
    return "\n".join(out)


def _rank(wanted: set[str]) -> Callable[[Site], tuple[int, bool]]:
    """Definitions the question names more of first (`Console.print` before `Console` for "the print
    method of Console"), then functions before classes (a class's head is its docstring)."""

    def key(site: Site) -> tuple[int, bool]:
        return -sum(part.lower() in wanted for part in site.name.split(".")), site.kind == "class"

    return key


def _code_words(question: str) -> list[str]:
    """Words that can only be code: with an underscore inside, camelCase, or in backquotes. Not a word in
    capitals (JSON, TODO, a task's key): prose has them too."""
    quoted = set(re.findall(r"`([A-Za-z_][A-Za-z0-9_.]*)`", question))
    marked = {w for w in _IDENTIFIER.findall(question) if "_" in w.strip("_") or _CAMEL.search(w)}
    return sorted(quoted | marked)


def _mentioned(lines: list[str], question: str) -> list[tuple[int, int, str]]:
    """A few lines around the first uses of the question's code words, when it names no definition."""
    found: list[tuple[int, int, str]] = []
    for word in _code_words(question):
        pattern = re.compile(rf"\b{re.escape(word)}\b")
        for number, text in enumerate(lines, start=1):
            if pattern.search(text):
                found.append((max(1, number - _AROUND), min(len(lines), number + _AROUND), f"{word} is used"))
                break
    return found[:_MAX_REGIONS]


def _size(lines: list[str], first: int, last: int) -> int:
    """About what a region of lines takes shown: its lines, their numbers, its heading and pointer."""
    return sum(len(_cut(line)) + 8 for line in lines[first - 1 : last]) + 120


def _fit(lines: list[str], budget: int) -> tuple[list[str], int]:
    """The first lines that fit `budget` characters, and how many did not."""
    size = 0
    for i, line in enumerate(lines):
        size += len(line) + 1
        if size > budget:
            return lines[:i], len(lines) - i
    return lines, 0


def _cut(line: str) -> str:
    return line if len(line) <= _MAX_LINE_CHARS else line[:_MAX_LINE_CHARS] + " … [line cut: too long]"
