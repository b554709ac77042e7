"""The pre-search: before the first model call, aforo itself looks for what the question names.

A 0.5B model cannot plan a search through a real repository (it copies the file list into one read, or
asks Read for `hashlib.py`), but it can read a few right lines and answer from them: the harness finds,
the model reads. For each name of the question (navigate.terms), its definitions come from the symbol
index and its mentions from ripgrep (whole words, fixed strings); definitions rank first, then mentions
of the rarer names. The best few regions, a few numbered lines each, fit in `max_chars` and are handed
to the model as the result of a Grep call, saying how they were found: the governor clears it like any
other tool result, `/undo` brings it back, and the model can still call tools for more.
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
from aforo.navigate.terms import question_terms
from aforo.protocols import ToolContext
from aforo.tools.deadline import Interrupted
from aforo.tools.names import show
from aforo.tools.ripgrep import RgProcess, strip_dot

DEFINITION_LINES = 8  # the signature and what follows (a docstring, the first statements)
MENTION_AROUND = 1  # lines shown before and after a mention
MENTIONS_PER_TERM = 60  # rg records read per name: enough to rank, never a whole repository's worth
MENTIONS_PER_FILE = 12
MENTION_LINE_CHARS = 200


@dataclass(frozen=True)
class Region:
    path: str
    line: int  # the line that matched, 1-based
    start: int
    end: int
    why: str  # "defines group", "mentions hashlib"


@dataclass(frozen=True)
class Found:
    terms: tuple[str, ...]
    text: str  # the block the model gets
    pattern: str  # the Grep pattern that stands for the search


def search(
    workspace: Path, index: SymbolIndex, question: str, max_chars: int, ctx: ToolContext
) -> Found | None:
    """The best regions for `question` within `max_chars`, or None when it names nothing found."""
    terms = question_terms(question)
    regions: list[Region] = []
    found: list[str] = []
    mentions: list[tuple[int, int, int, Region]] = []
    for rank, term in enumerate(terms):
        defined = _definitions(index, term)
        regions += defined
        hits = _mentions(workspace, term, ctx)
        if defined or hits:
            found.append(term)
        files = len({path for path, _, _ in hits})
        for path, line, said in hits:
            if not any(r.path == path and r.line == line for r in regions):
                why = f"mentions {term}"
                region = Region(path, line, max(1, line - MENTION_AROUND), line + MENTION_AROUND, why)
                mentions.append((-_weight(said, term), files, rank, region))
    # Assignments and imports first (a default value, who imports it), prose last; then a name mentioned
    # in few files, which says more about where to look than one mentioned everywhere.
    regions += [m[-1] for m in sorted(mentions, key=lambda m: (*m[:3], m[3].path, m[3].line))]
    if not regions:
        return None
    names = ", ".join(f"`{t}`" for t in found)
    heading = (
        f"aforo searched the workspace for {names} before asking you (definitions from its symbol index, "
        "mentions from ripgrep); the best matches, `path:line` then the numbered lines:"
    )
    text = _render(workspace, heading, regions, max_chars)
    if text is None:
        return None
    pattern = r"\b(" + "|".join(re.escape(t) for t in found) + r")\b"
    return Found(tuple(found), text, pattern)


def _definitions(index: SymbolIndex, term: str) -> list[Region]:
    """Where `term` is defined, top-level definitions before methods; of several in a row in one place
    (typing overloads before the implementation), the first and the last. The name as written first,
    else in any case ("the governor" asks about `Governor`)."""
    groups: dict[tuple[str, str, str], list[int]] = {}
    for path, d in index.definitions.get(term) or index.folded.get(term.lower(), []):
        if path in index.files:
            groups.setdefault((path, d.parent, d.name), []).append(d.line)
    regions = []
    for (path, parent, name), lines in sorted(groups.items(), key=lambda g: (bool(g[0][1]), g[0][0])):
        for line in sorted({min(lines), max(lines)}):
            what = f"defines {parent}.{name}" if parent else f"defines {name}"
            regions.append(Region(path, line, line, line + DEFINITION_LINES - 1, what))
    return regions


_PROSE = ("#", "//", "*", ":param", "..")


def _weight(text: str, term: str) -> int:
    """2: the line assigns the name (`term = `, `self.term: int = `), 1: it declares it (`term: int`)
    or imports it, 0: code that uses it, -1: a comment or docstring line that only speaks of it."""
    name = re.escape(term)
    if re.search(rf"\b{name}\s*(:[^=]*)?=(?!=)", text):
        return 2
    if re.match(rf"\s*{name}\s*:", text) or re.search(r"\b(import|require|use|include)\b", text):
        return 1
    stripped = text.strip()
    return -1 if stripped.startswith(_PROSE) or "``" in stripped or "`" in stripped else 0


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


def _render(workspace: Path, heading: str, regions: Sequence[Region], max_chars: int) -> str | None:
    parts = [heading]
    used = len(heading)
    lines_of: dict[str, list[str]] = {}
    shown: set[tuple[str, int]] = set()
    left = 0
    for region in regions:
        if region.path not in lines_of:
            lines_of[region.path] = _lines(workspace, region.path)
        lines = lines_of[region.path]
        if (region.path, region.line) in shown:  # a mention inside a region already shown
            continue
        last = min(region.end, len(lines))
        span = [n for n in range(region.start, last + 1) if (region.path, n) not in shown]
        if not span:
            continue
        body = "\n".join(f"{n}\t{lines[n - 1][:MENTION_LINE_CHARS]}" for n in span)
        block = f"{show(region.path)}:{region.line} {region.why}\n{body}"
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


def _lines(workspace: Path, path: str) -> list[str]:
    real = workspace / path
    try:
        if not os.path.isfile(real) or os.path.islink(real):
            return []
        with open(real, "rb") as f:
            data = f.read(int(MAP_FILE_BYTES.value))
    except OSError:
        return []
    return data.decode("utf-8", "replace").splitlines()
