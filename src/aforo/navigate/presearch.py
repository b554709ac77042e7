"""The pre-search: before the first model call, aforo itself looks for what the question names.

A 0.5B model cannot plan a search through a real repository (it copies the file list into one read, or
asks Read for `hashlib.py`), but it can read a few right lines and answer from them: the harness finds,
the model reads. For each name of the question (navigate.terms), its definitions come from the symbol
index and its mentions from ripgrep (whole words, fixed strings); definitions rank first, then mentions
of the rarer names. The best few regions, a few numbered lines each, fit in `max_chars` and are handed
to the model as the result of a Grep call, saying how they were found: the governor clears it like any
other tool result, `/undo` brings it back, and the model can still call tools for more.

What the harness knows exactly is said, not left to the model to work out: each mention is labelled
with what the line does (`calls`, `assigns`, `imports`) and the definition it is in (`in
Signer.get_signature`), which answers "what calls derive_key?" (both models named the lines, 182, 218
and 237, and not the functions); the files the question names come with their line counts, the longest
named (the 1.5B model read both outlines, each headed with its count, and named the shorter file).
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from aforo.errors import ToolError
from aforo.limits import MAP_FILE_BYTES
from aforo.navigate.index import SymbolIndex
from aforo.navigate.symbols import Definition
from aforo.navigate.terms import compound_terms, looks_like_code, question_paths, question_terms, stem
from aforo.protocols import ToolContext
from aforo.tools.deadline import Interrupted
from aforo.tools.names import show
from aforo.tools.ripgrep import RgProcess, strip_dot

DEFINITION_LINES = 8  # the signature and what follows (a docstring, the first statements)
MENTION_AROUND = 1  # lines shown before and after a mention
MENTIONS_PER_TERM = 60  # rg records read per name: enough to rank, never a whole repository's worth
MENTIONS_PER_FILE = 12
MENTION_LINE_CHARS = 200
CALLERS_SHOWN = 12
STEM_NAMES = 3  # names found by a word's stem, for one word of the question
NAMED_FILES = 12  # files of the question counted: "the ten files mod00.py … mod09.py" and a margin
# A question about callers ranks the lines that call the name before its assignments and imports.
_ASKS_CALLERS = re.compile(r"\b(calls?|called|callers?|invoke[sd]?|uses?)\b", re.IGNORECASE)


@dataclass(frozen=True)
class Region:
    path: str
    line: int  # the line that matched, 1-based
    start: int
    end: int
    why: str  # "defines group", "calls derive_key"
    mention: bool = False  # labelled with the definition it is in


@dataclass(frozen=True)
class Found:
    terms: tuple[str, ...]
    text: str  # the block the model gets
    tool: str  # the call that stands for the search: Grep of the names found, else Glob of the files
    input: dict[str, str]


def search(
    workspace: Path, index: SymbolIndex, question: str, max_chars: int, ctx: ToolContext
) -> Found | None:
    """The best regions for `question` within `max_chars`, or None when it names nothing found."""
    terms = (*compound_terms(question), *question_terms(question))
    callers = _ASKS_CALLERS.search(question) is not None
    regions: list[Region] = []
    found: list[str] = []
    mentions: list[tuple[int, int, int, Region]] = []
    for rank, term in enumerate(terms):
        defined = _definitions(index, term)
        regions += defined
        hits = _mentions(workspace, term, ctx)
        if defined or hits:
            found.append(term)
        spread = len({path for path, _, _ in hits})  # files that mention it
        # Every line that defines it (an overload the regions skip too) is no use of it.
        defining = {(path, d.line) for path, d in index.definitions.get(term, ())}
        for path, line, said in hits:
            if (path, line) not in defining and not any(r.path == path and r.line == line for r in regions):
                weight, verb = _kind(said, term, callers)
                start, end = max(1, line - MENTION_AROUND), line + MENTION_AROUND
                mentions.append(
                    (-weight, spread, rank, Region(path, line, start, end, f"{verb} {term}", True))
                )
    # Assignments and imports first (a default value, who imports it), prose last; then a name mentioned
    # in few files, which says more about where to look than one mentioned everywhere.
    regions += [m[-1] for m in sorted(mentions, key=lambda m: (*m[:3], m[3].path, m[3].line))]
    files = _Files(workspace)
    named = _named_files(files, index, question_paths(question))
    if not regions and len(named) < 2:
        return None
    lengths = _lengths(named) if named else ""
    if not found:
        text = f"Before asking you, aforo counted the lines of the files the question names: {lengths}."
        return Found((), text, "Glob", {"pattern": "{" + ",".join(path for path, _ in named) + "}"})
    heading = (
        f"Before asking you, aforo looked in the workspace for {', '.join(f'`{t}`' for t in found)} "
        "(definitions from its symbol index, uses from ripgrep); the best matches, `path:line` then the "
        "numbered lines:"
    )
    if callers:
        heading = "\n".join([*_callers(files, index, regions), heading])
    if named:
        heading = f"The files the question names: {lengths}.\n{heading}"
    shown = _render(files, index, heading, regions, max_chars)
    if shown is None:
        return None
    pattern = r"\b(" + "|".join(re.escape(t) for t in found) + r")\b"
    return Found(tuple(found), shown, "Grep", {"pattern": pattern})


def _callers(files: _Files, index: SymbolIndex, regions: Sequence[Region]) -> list[str]:
    """For a question about callers, one line per name: the definitions its calls are in, each once."""
    where: dict[str, dict[tuple[str, str], str]] = {}  # name called -> (caller, path) -> path:line
    for region in regions:
        verb, _, term = region.why.partition(" ")
        if verb != "calls":
            continue
        inside = _enclosing(index, region.path, files.lines(region.path), region.line)
        caller = _qualified(inside) if inside else "the top level"
        where.setdefault(term, {}).setdefault((caller, region.path), f"{show(region.path)}:{region.line}")
    lines = []
    for term, places in where.items():
        names = [caller for caller, _ in places][:CALLERS_SHOWN]
        more = f" and {len(places) - CALLERS_SHOWN} more" if len(places) > CALLERS_SHOWN else ""
        said = ", ".join(names[:-1]) + f" and {names[-1]}" if len(names) > 1 else names[0]
        at = ", ".join(list(places.values())[:CALLERS_SHOWN])
        lines.append(f"`{term}` is called by {said}{more} (at {at}).")
    return lines


def _named_files(files: _Files, index: SymbolIndex, names: Sequence[str]) -> list[tuple[str, int]]:
    """(path, lines) of each indexed file the question names (by its path, or its name when that is
    unique), longest first."""
    counted: dict[str, int] = {}
    for name in names[:NAMED_FILES]:
        matches = [p for p in index.files if p == name or p.endswith("/" + name)]
        if len(matches) == 1 and index.files[matches[0]].size <= MAP_FILE_BYTES.value:
            counted[matches[0]] = len(files.lines(matches[0]))
    return sorted(counted.items(), key=lambda item: -item[1])


def _lengths(named: Sequence[tuple[str, int]]) -> str:
    """The named files' lengths, saying which is the longest when one is: "a.py is the longest (266
    lines); then b.py (228 lines)"."""
    said = [f"{show(path)} ({lines} {'line' if lines == 1 else 'lines'})" for path, lines in named]
    if len(named) == 1:
        return said[0]
    if named[0][1] == named[1][1]:
        return f"longest first, {', '.join(said)}"
    return f"{said[0].replace(' (', ' is the longest (', 1)}; then {', '.join(said[1:])}"


def _definitions(index: SymbolIndex, term: str) -> list[Region]:
    """Where `term` is defined, top-level definitions before methods; of several in a row in one place
    (typing overloads before the implementation), the first and the last. The name as written first,
    else in any case ("the governor" asks about `Governor`), else the few names made of a word of the
    same stem ("how many times does the client retry?" asks about `MAX_RETRIES = 4`)."""
    groups: dict[tuple[str, str, str], list[int]] = {}
    places = index.definitions.get(term) or index.folded.get(term.lower(), [])
    if not places and not looks_like_code(term):
        names = index.stems.get(stem(term), [])[:STEM_NAMES]
        places = [place for name in names for place in index.definitions[name]]
    for path, d in places:
        if path in index.files:
            groups.setdefault((path, d.parent, d.name), []).append(d.line)
    regions = []
    for (path, parent, name), lines in sorted(groups.items(), key=lambda g: (bool(g[0][1]), g[0][0])):
        for line in sorted({min(lines), max(lines)}):
            what = f"defines {parent}.{name}" if parent else f"defines {name}"
            regions.append(Region(path, line, line, line + DEFINITION_LINES - 1, what))
    return regions


_PROSE = ("#", "//", "*", ":param", "..")
# An import statement of Python, JavaScript, Go, Rust, Java or C: `from x import y`, `import x`,
# `const x = require(`, `use x::y;`, `#include <x>`.
_IMPORT = re.compile(r"(from\s+\S+\s+)?import\b|.*\brequire\s*\(|use\s+[\w:]+|#\s*include\b")


def _kind(text: str, term: str, callers: bool) -> tuple[int, str]:
    """What a line that names `term` does with it, and its rank: 2 assigns it (`term = `,
    `self.term: int = `), 1 declares (`term: int`) or imports it, 0 code that calls or uses it, -1 a
    comment or docstring line that only speaks of it; a call ranks 3 when the question asks for callers."""
    name = re.escape(term)
    if re.search(rf"\b{name}\s*(:[^=]*)?=(?!=)", text):
        return 2, "assigns"
    if re.match(rf"\s*{name}\s*:", text):
        return 1, "declares"
    stripped = text.strip()
    if _IMPORT.match(stripped):
        return 1, "imports"
    if stripped.startswith(_PROSE) or "``" in stripped or "`" in stripped:
        return -1, "mentions"
    if re.search(rf"\b{name}\s*\(", text):
        return (3 if callers else 0), "calls"
    return 0, "uses"


def _mentions(workspace: Path, term: str, ctx: ToolContext) -> list[tuple[str, int, str]]:
    """(path, line, text) of whole-word mentions of `term`, at most MENTIONS_PER_TERM."""
    args = ["--line-number", "--no-heading", "--null", "--word-regexp", "--fixed-strings"]
    args += ["--max-count", str(MENTIONS_PER_FILE)]
    hits: list[tuple[str, int, str]] = []
    try:
        with RgProcess([*args, "-e", term, "--", "."], workspace.resolve(), ctx) as proc:
            for record in proc.records():
                path, sep, rest = record.partition(b"\0")
                number, _, text = rest.partition(b":")
                if sep and number.isdigit():
                    line = text[:MENTION_LINE_CHARS].decode("utf-8", "replace")
                    hits.append((strip_dot(os.fsdecode(path)), int(number), line))
                if len(hits) >= MENTIONS_PER_TERM:
                    break
    except (ToolError, Interrupted):
        pass  # what was found before the deadline is used; nothing found is no pre-search
    return hits


def _render(
    files: _Files, index: SymbolIndex, heading: str, regions: Sequence[Region], max_chars: int
) -> str | None:
    parts = [heading]
    used = len(heading)
    shown: set[tuple[str, int]] = set()
    left = 0
    for region in regions:
        lines = files.lines(region.path)
        if (region.path, region.line) in shown:  # a mention inside a region already shown
            continue
        last = min(region.end, len(lines))
        span = [n for n in range(region.start, last + 1) if (region.path, n) not in shown]
        if not span:
            continue
        body = "\n".join(f"{n}\t{lines[n - 1][:MENTION_LINE_CHARS]}" for n in span)
        inside = _enclosing(index, region.path, lines, region.line) if region.mention else None
        where = f" in {_qualified(inside)}" if inside else ""
        block = f"{show(region.path)}:{region.line}{where} {region.why}\n{body}"
        if used + len(block) + 2 > max_chars - _TAIL_ROOM:
            left += 1
            continue
        parts.append(block)
        used += len(block) + 2
        shown.update((region.path, n) for n in span)
    if len(parts) == 1:
        return None
    if left:
        parts.append(f"({left} more matches not shown: Grep or Read finds them)")
    return "\n\n".join(parts)


_TAIL_ROOM = 64  # the line that counts what was left out


def _enclosing(index: SymbolIndex, path: str, lines: list[str], line: int) -> Definition | None:
    """The innermost definition whose body holds `line`, told by indentation: every line from the
    definition to `line` is blank, a comment, the close of its signature, or indented deeper than it."""
    entry = index.files.get(path)
    if entry is None or not 0 < line <= len(lines):
        return None
    before = sorted((d for d in entry.symbols.definitions if d.line < line), key=lambda d: -d.line)
    for d in before:
        indent = _indent(lines[d.line - 1])
        if all(_inside(text, indent) for text in lines[d.line : line]):
            return d
    return None


def _qualified(d: Definition) -> str:
    return f"{d.parent}.{d.name}" if d.parent else d.name


def _indent(text: str) -> int:
    return len(text) - len(text.lstrip())


def _inside(text: str, indent: int) -> bool:
    stripped = text.strip()
    return not stripped or stripped.startswith(("#", ")", "]", "}")) or _indent(text) > indent


class _Files:
    """The workspace's files as lines, each read once in a search (the callers' line, the named files'
    counts and the regions all look at the same few files)."""

    def __init__(self, workspace: Path) -> None:
        self.workspace = workspace
        self._read: dict[str, list[str]] = {}

    def lines(self, path: str) -> list[str]:
        if path not in self._read:
            self._read[path] = _read_lines(self.workspace / path)
        return self._read[path]


def _read_lines(real: Path) -> list[str]:
    try:
        if not os.path.isfile(real) or os.path.islink(real):
            return []
        with open(real, "rb") as f:
            data = f.read(int(MAP_FILE_BYTES.value))
    except OSError:
        return []
    return data.decode("utf-8", "replace").splitlines()
