"""Where a name is defined and where it is used: the syntax tree (`tools/syntax.py`), not a guess at the text.

A small model cannot plan a search: asked where `group` is defined, it reads the heads of files and
passes names as paths. The tools answer that question exactly instead. `definitions` finds the files
with a line that looks like its definition (ripgrep, honouring .gitignore), parses only those and
returns each definition as a `Site` (`path:line` and its signature); `mentions` lists the lines that
use it (the one whole-word search: the pre-search's too). `file_sites` is what one file defines, which
Read's `path#Name` looks up.

Parsed files are kept in the workspace's one symbol cache (`tools/symbol_cache`), by path, mtime and
size, which the repository map's index (navigate/) reads too: a file parsed for one is not parsed again
for the other, and a second look at an unchanged file costs a stat.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, TypeVar

from aforo.limits import SYMBOL_FILE_BYTES, SYMBOL_FILES
from aforo.protocols import ToolContext
from aforo.tools import ripgrep
from aforo.tools.deadline import check
from aforo.tools.names import show
from aforo.tools.symbol_cache import SymbolCache
from aforo.tools.syntax import GRAMMARS, PYTHON_SUFFIXES, Site, has_syntax

_MENTION_CHARS = 160
T = TypeVar("T")


@dataclass(frozen=True)
class Mention:
    file: str  # relative to the workspace, as on disk (read it with this)
    line: int
    text: str  # the line, stripped, at most _MENTION_CHARS

    @property
    def path(self) -> str:
        return show(self.file)

    def cite(self) -> str:
        return f"{self.path}:{self.line}: {show(self.text)}"


def file_sites(symbols: SymbolCache, path: Path, ctx: ToolContext | None = None) -> list[Site]:
    """The outline of the file at `path` (in the workspace of `symbols`); empty when its language has no
    syntax tree here, it is larger than `symbol_file_bytes`, cannot be read or does not parse."""
    if ctx is not None:
        check(ctx)
    if not has_syntax(path.name):
        return []
    real = Path(os.path.realpath(path))
    if not real.is_relative_to(symbols.root):
        return []  # no file of the workspace: Read never asks for one
    try:
        info = os.stat(real)
    except OSError:
        return []
    relative = real.relative_to(symbols.root).as_posix()
    limit = int(SYMBOL_FILE_BYTES.value)
    return list(symbols.read(relative, info, limit, complete=True).symbols.definitions)


def cache_for(symbols: SymbolCache | None, root: Path) -> SymbolCache:
    """`symbols` when it is the cache of the workspace at `root`, else one for this call alone (a tool
    made without the workspace's cache, as a test makes it)."""
    return symbols if symbols is not None and symbols.root == root else SymbolCache(root)


@dataclass(frozen=True)
class Found(Generic[T]):
    """What a lookup found, and what it could not look at: files past `symbol_files`, or larger than
    `symbol_file_bytes`, that look like they define the name."""

    items: list[T]
    total: int  # mentions: how many lines in all (at least, when not exact)
    exact: bool = True
    unparsed: int = 0


def definitions(symbols: SymbolCache, name: str, ctx: ToolContext) -> list[Site]:
    """Every definition of `name` (`group`, or qualified: `Group.command`) in the source files of the
    workspace of `symbols` that rg would search, in path order."""
    return find_definitions(symbols, name, ctx).items


def find_definitions(symbols: SymbolCache, name: str, ctx: ToolContext) -> Found[Site]:
    """`definitions`, saying how many candidate files were not parsed (at most `symbol_files` are)."""
    root = symbols.root
    short = name.rsplit(".", 1)[-1]
    if not short.isidentifier():
        return Found([], 0)
    candidates = sorted(_files_defining(root, short, ctx))
    found: list[Site] = []
    unparsed = max(0, len(candidates) - int(SYMBOL_FILES.value))
    for rel in candidates[: int(SYMBOL_FILES.value)]:
        sites = file_sites(symbols, root / rel, ctx)
        if not sites and _too_big(root / rel):
            unparsed += 1
        for site in sites:
            if site.name == name or (
                site.short == name if "." not in name else site.name.endswith("." + name)
            ):
                found.append(site)
    return Found(found, len(found), unparsed=unparsed)


def mentions(
    root: Path, name: str, ctx: ToolContext, limit: int, *, per_file: int | None = None, counted: int = 100
) -> Found[Mention]:
    """The first `limit` lines that use `name` as a whole word (any text file rg searches, at most
    `per_file` of each), in path order, and how many there are in all (counted up to `counted` times
    `limit`: then not exact). The one mention search: Find, Read's suggestions and the pre-search."""
    word = name.rsplit(".", 1)[-1]
    argv = ["--null", "--sort", "path", "--line-number", "--with-filename", "--no-heading"]
    argv += ["--max-columns", str(_MENTION_CHARS), "--max-columns-preview"]
    argv += ["--max-count", str(per_file)] if per_file else []
    argv += ["--word-regexp", "--fixed-strings", "-e", word, "--", "."]
    shown: list[Mention] = []
    total = 0
    with ripgrep.RgProcess(argv, root, ctx) as proc:
        for record in proc.records():
            raw, sep, rest = record.partition(b"\0")
            number, colon, text = rest.partition(b":")
            if not sep or not colon or not number.isdigit():
                continue
            total += 1
            if len(shown) < limit:
                path = ripgrep.strip_dot(os.fsdecode(raw))
                shown.append(Mention(path, int(number), text.decode("utf-8", errors="replace").strip()))
            elif total > limit * counted:
                proc.stop()
    outcome = proc.finish()
    return Found(shown, total, exact=not outcome.stopped_early)


def _too_big(path: Path) -> bool:
    try:
        return path.stat().st_size > SYMBOL_FILE_BYTES.value
    except OSError:
        return False


def _files_defining(root: Path, word: str, ctx: ToolContext) -> list[str]:
    """The source files with a line that looks like a definition of `word`; the syntax tree decides.

    Only those are parsed: `group` is spelled in hundreds of files of a large tree, defined in few."""
    name = re.escape(word)
    # Rust regex: no lookahead, so "= but not ==" is spelled out.
    python = rf"^\s*((async\s+)?def|class)\s+{name}\b|^\s*{name}\s*(:[^=]*)?=([^=]|$)"
    # A keyword before the name (func, class, fn, const, #define, impl ... for), or a declaration that
    # starts its line (C's `int *parse(`, Java's `void run(`, a JS method, Go's `func (s *S) Serve(`),
    # a name a Go block declares (`Max = 3`, `Handler struct{}`), a C typedef's `} Point;`.
    keywords = r"function\*?|class|interface|type|enum|struct|union|trait|impl|fn|func|const|let|var|static"
    braces = (
        rf"\b({keywords}|define|for|macro_rules!)\s+{name}\b|^\s*([\w*&<>\[\],.:()]+\s+)*\**{name}\s*[(<]"
    )
    braces += rf"|^\s*{name}\s*[=:]|^\s*{name}\s+[\w*\[]|\}}\s*{name}\s*;"
    python_globs = [arg for suffix in PYTHON_SUFFIXES for arg in ("--glob", f"*{suffix}")]
    other_globs = [arg for suffix in sorted(GRAMMARS) for arg in ("--iglob", f"*{suffix}")]
    files: list[str] = []
    for globs, pattern in ((python_globs, python), (other_globs, braces)):
        argv = ["--null", "--files-with-matches", *globs, "-e", pattern, "--", "."]
        with ripgrep.RgProcess(argv, root, ctx, sep=b"\0") as proc:
            files += [ripgrep.strip_dot(os.fsdecode(r)) for r in proc.records() if r]
        proc.finish()
    return files
