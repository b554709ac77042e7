"""The repository map: the workspace's source files with what they define, the most relevant first, cut to
a token budget.

It stands in the system prompt for the list of files when the workspace is larger than that list can
hold: a small model that sees `src/cli/decorators.py: def group:263` reads the right file at the right
line instead of the head of the wrong one. Relevance, as in aider's map but with plain counts instead
of PageRank: a definition named in the question comes first, then definitions used by many other files
(the number of files whose syntax tree uses the name), and a file ranks by its best definition. Only
the top level is shown, except a method (or a nested function) the question names (`Group.group:1520`).
The map is cut at a whole file's line; what it leaves out is counted in its heading.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from aforo.navigate.index import SymbolIndex
from aforo.tools.names import show
from aforo.tools.syntax import CONSTANT, Site

MAP_PART = "repository map"
DEFS_PER_FILE = 8
NAMED = 100.0  # a definition the question names outranks any reference count
PATH_NAMED = 50.0  # so does a file whose path names it


@dataclass(frozen=True)
class Ranked:
    path: str
    score: float
    shown: tuple[Site, ...]
    more: int  # top-level definitions not shown


def rank(index: SymbolIndex, terms: Sequence[str]) -> list[Ranked]:
    """The files with definitions, the most relevant first (ties: by path)."""
    wanted = {t.lower() for t in terms}
    refs = index.references
    ranked = []
    for path, entry in index.files.items():
        own = set(entry.symbols.names)
        scored: dict[str, tuple[float, Site]] = {}
        for d in index.shown[path]:
            named = d.short.lower() in wanted
            if d.parent and not named:
                continue
            used = refs[d.short] - (d.short in own)  # by the other files
            score = math.log1p(max(0, used)) + (NAMED if named else 0.0)
            if d.name not in scored or scored[d.name][0] < score:
                scored[d.name] = (score, d)
        stem = path.rsplit("/", 1)[-1].rsplit(".", 1)[0].lower()
        if not scored and stem not in wanted:
            continue
        order = sorted(scored.values(), key=lambda s: (-s[0], s[1].line))
        best = order[0][0] if order else 0.0
        score = best + (PATH_NAMED if stem in wanted else 0.0)
        shown = tuple(d for _, d in order[:DEFS_PER_FILE])
        more = max(0, sum(1 for d in index.shown[path] if not d.parent) - len(shown))
        ranked.append(Ranked(path, score, shown, more))
    ranked.sort(key=lambda r: (-r.score, r.path))
    return ranked


def render(index: SymbolIndex, terms: Sequence[str], max_chars: int) -> str | None:
    """The map within `max_chars`, or None when not even one file's line fits (or none defines)."""
    ranked = rank(index, terms)
    lines: list[str] = []
    used = 0
    for entry in ranked:
        line = _line(entry)
        if used + len(line) + 1 > max_chars - _HEADING_ROOM:
            break
        lines.append(line)
        used += len(line) + 1
    if not lines:
        return None
    left = index.sources - len(lines)
    rest = f"; {left} more files not shown" if left > 0 else ""
    heading = f"The workspace's source files and what they define (name:line), the most relevant first{rest}:"
    return "\n".join((heading, *lines))


_HEADING_ROOM = 120  # the heading's length with the largest counts


def _line(entry: Ranked) -> str:
    names = ", ".join(_definition(d) for d in entry.shown)
    more = f" (+{entry.more} more)" if entry.more else ""
    return f"{show(entry.path)}: {names}{more}" if names else show(entry.path)


def _definition(d: Site) -> str:
    return f"{show(d.name)}:{d.line}" if d.kind == CONSTANT else f"{d.kind} {show(d.name)}:{d.line}"
