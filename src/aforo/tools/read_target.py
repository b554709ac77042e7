"""What a Read's `file_path` names, and where a name is when it names no file.

A small model cites and asks the way aforo cites (`shapes.py:10`), names one definition (`a.py#parse`),
drops a file's directory (`shapes.py` for `pkg/shapes.py`) and passes names of code as paths
(`hashlib.py`, `help_formatter`). Each of these reaches the lines it means, or an error that says where
the name is defined or used, instead of "does not exist".
"""

from __future__ import annotations

import dataclasses
import difflib
import os
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from aforo.errors import ToolError
from aforo.limits import LINE_DIGITS
from aforo.protocols import ToolContext
from aforo.tools import ripgrep
from aforo.tools.names import show
from aforo.tools.symbol_cache import SymbolCache
from aforo.tools.symbols import definitions, file_sites, mentions
from aforo.tools.syntax import PYTHON_SUFFIXES, has_syntax
from aforo.tools.workspace import resolve, root_of

# `path:N` shows line N with a few lines before it and the rest of a short function after it.
LINES_BEFORE = 5
LINES_AROUND = 40
_LINES = re.compile(r"^(?P<path>.+?):(?P<first>\d+)(?:-(?P<last>\d+))?$")
_LISTED_NAMES = 24
_SUGGESTIONS = 5


@dataclass(frozen=True)
class Target:
    """What `file_path` asks for: a file, and maybe its lines (`a.py:10-30`) or one definition (`a.py#f`)."""

    path: Path
    spelled: str  # the file as the model named it
    first: int | None = None
    count: int | None = None
    symbol: str | None = None


class Locator:
    """A file as spelled, else the one file of the workspace with that name when the spelling has no
    directory: small models drop it (`shapes.py` for `pkg/shapes.py`)."""

    def __init__(self, ctx: ToolContext) -> None:
        self._ctx = ctx
        self._files: list[str] | None = None

    def __call__(self, spelled: str) -> Path | None:
        path = resolve(self._ctx.workspace, spelled)
        if os.path.lexists(path):
            return path
        if "/" in spelled or not spelled.strip():
            return None
        if self._files is None:
            self._files = sorted(ripgrep.list_files(root_of(self._ctx.workspace), self._ctx))
        named = [f for f in self._files if PurePosixPath(f).name == spelled]
        return resolve(self._ctx.workspace, show(named[0])) if len(named) == 1 else None


def named(locate: Locator, spelled: str) -> Target | None:
    """The file and the part of it `spelled` names, None when there is no such file; a file whose name
    holds ':' or '#' is read whole."""
    if path := locate(spelled):
        return Target(path, spelled)
    base, hash_sign, symbol = spelled.rpartition("#")
    if hash_sign and base and symbol and (within := locate(base)):
        return Target(within, base, symbol=symbol.strip())
    lines = _LINES.match(spelled)
    if lines and (within := locate(lines["path"])):
        first = max(1, _line(lines["path"], lines["first"]))
        if lines["last"] is None:
            # One line, as a citation names it: shown with the lines around it.
            return Target(within, lines["path"], max(1, first - LINES_BEFORE), LINES_AROUND)
        last = max(1, _line(lines["path"], lines["last"]))
        return Target(within, lines["path"], min(first, last), abs(last - first) + 1)
    return None


def _line(path: str, digits: str) -> int:
    """A line number as `path:N` spells it; thousands of digits are no line (int() refuses more than
    4 300: "internal error in tool Read: ValueError", issue 39 D14)."""
    if len(digits) > LINE_DIGITS.value:
        raise ToolError(
            f"{show(path)}:{digits[:12]}… names no line: its number has {len(digits):,} digits, and no file "
            f"has that many lines. Name a line as {show(path)}:N, or read the file from its start."
        )
    return int(digits)


def definition(symbols: SymbolCache, target: Target, shown_path: str, ctx: ToolContext) -> Target:
    """The lines of the definition `target.symbol` names (`parse`, `Client.send`), decorators included."""
    if not has_syntax(shown_path):
        raise ToolError(
            f"{shown_path}#NAME reads a definition of a source file (Python, JavaScript, TypeScript, Go, "
            "Rust, Java or C); Grep finds a name in other files"
        )
    sites = file_sites(symbols, target.path, ctx)
    name = target.symbol or ""
    matches = [s for s in sites if s.name == name] or [s for s in sites if s.short == name.rsplit(".", 1)[-1]]
    if not matches:
        top = [s.name for s in sites if s.depth == 0][:_LISTED_NAMES]
        defines = f"; it defines {', '.join(top)}" if top else ""
        raise ToolError(f"{shown_path} defines no {name!r}{defines}. Find {name} looks in every file")
    site = matches[0]
    return dataclasses.replace(target, first=site.start, count=site.end - site.start + 1)


def not_found(symbols: SymbolCache, shown_path: str, ctx: ToolContext) -> str:
    """Why the file is not there, with the workspace's files of a like name: a small model guesses
    paths (`stopwords.txt` for `wordfreq/stopwords.py`) and goes on from a named candidate. A name
    given as a path (`hashlib.py`, `help_formatter`) gets where it is defined or used."""
    wanted = PurePosixPath(shown_path)
    files = ripgrep.list_files(symbols.root, ctx)
    by_name = sorted(f for f in files if PurePosixPath(f).name == wanted.name)
    stems = {PurePosixPath(f).stem: f for f in sorted(files)}
    close = difflib.get_close_matches(wanted.stem, list(stems), n=_SUGGESTIONS, cutoff=0.6)
    found = list(dict.fromkeys([*by_name, *(stems[s] for s in close)]))[:_SUGGESTIONS]
    name = _as_name(wanted.name, files)
    where = _where_named(symbols, name, ctx) if name else ""
    if not found:
        return f"{shown_path} does not exist{where or '; use Glob or LS to find the right path'}"
    return f"{shown_path} does not exist{where}. Files with a like name: {', '.join(show(f) for f in found)}"


def _as_name(spelled: str, files: set[str]) -> str | None:
    """The name of code a path that is no file may be: `hashlib` for `hashlib.py:3`, `Client.send` and
    `group()` as they are; None when it cannot be one."""
    lines = _LINES.match(spelled)
    text = (lines["path"] if lines else spelled).strip("`'\"").removesuffix("()")
    suffix = PurePosixPath(text).suffix
    if suffix and suffix in {*PYTHON_SUFFIXES, *(PurePosixPath(f).suffix for f in files)}:
        text = PurePosixPath(text).stem
    return text if all(part.isidentifier() for part in text.split(".")) else None


def _where_named(symbols: SymbolCache, name: str, ctx: ToolContext) -> str:
    """`. The name hashlib is used at a.py:3: import hashlib` (definitions first), or ""."""
    sites = [s.cite() for s in definitions(symbols, name, ctx)[:_SUGGESTIONS]]
    own = {c.split(": ", 1)[0] for c in sites}
    uses = mentions(symbols.root, name, ctx, _SUGGESTIONS + len(sites)).items
    cited = [m.cite() for m in uses if f"{m.path}:{m.line}" not in own][: _SUGGESTIONS - len(sites) or 1]
    parts = []
    if sites:
        parts.append(f"the name {name} is defined at {'; '.join(sites)}")
    if cited:
        parts.append(f"{'it' if sites else f'the name {name}'} is used at {'; '.join(cited)}")
    return f". As a name: {', and '.join(parts)}" if parts else ""
