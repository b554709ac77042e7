"""The workspace's symbol index: every source file's definitions and used names, a snapshot of the
workspace's one symbol cache (`tools/symbol_cache`) taken as a run begins.

A definition is a `tools/syntax.Site` (the one type the tools share). The index shows the map and "where
is X defined" the classes and functions at every depth (a method of a nested class, a function nested
in another) and the constants of the top level; the pre-search also reads which definition holds a line
(the innermost: the caller it names). The names a file uses (identifiers, attribute names, imported
modules) are what references are counted from: a definition used by many other files matters more. A
file that does not parse, or whose language has no grammar installed, defines nothing here; its names
still count (a bare identifier scan), so `import hashlib` in a Rust-free Python file is found.

The files are those ripgrep would search (ignore files honoured), the source ones among them, at most
`map_files`; a symbolic link is not followed (what it points to may be outside the workspace). Parsing
a large tree takes seconds, so the cache keeps what was parsed, on disk between runs, each file's entry
keyed by its path, mtime and size: the next build parses only what changed. A build that reaches
`map_seconds` stops and keeps what it has; the rest is parsed next time. A listing that reaches a
limit (rg's memory, which a 200 000-line .gitignore exhausts) leaves the index as it was and says why
(`unlisted`): the run goes on without the map, never ends in a traceback.
"""

from __future__ import annotations

import os
import stat
import time
from collections import Counter
from dataclasses import dataclass
from functools import cached_property

from aforo.errors import LimitExceeded, ToolError
from aforo.limits import MAP_FILE_BYTES, MAP_FILES, MAP_SECONDS
from aforo.navigate.terms import parts, stem
from aforo.protocols import ToolContext
from aforo.tools.ripgrep import list_files
from aforo.tools.symbol_cache import Entry, SymbolCache
from aforo.tools.syntax import CONSTANT, SOURCE_SUFFIXES, Site, suffix


@dataclass(frozen=True)
class SymbolIndex:
    files: dict[str, Entry]
    sources: int  # source files in the workspace, indexed or not
    parsed: int = 0  # files parsed by this build (the others came from the cache)
    listed: int | None = None  # files of any kind ripgrep would search; None: not known (no listing)
    unlisted: str | None = None  # why the workspace's files could not be listed (None: they were)

    @cached_property
    def references(self) -> Counter[str]:
        """How many files use each name."""
        return Counter(name for entry in self.files.values() for name in entry.symbols.names)

    @cached_property
    def shown(self) -> dict[str, tuple[Site, ...]]:
        """Each file's definitions that the map and "where is X defined" know (`FileSymbols.listed`)."""
        return {path: entry.symbols.listed for path, entry in self.files.items()}

    @cached_property
    def definitions(self) -> dict[str, list[Site]]:
        """Where each name (a method's without its class) is defined, in path order (`files` is built
        in it): the answer to "where is X defined?" that other parts check an answer against."""
        where: dict[str, list[Site]] = {}
        for sites in self.shown.values():
            for site in sites:
                where.setdefault(site.short, []).append(site)
        return where

    def holding(self, path: str, line: int) -> Site | None:
        """The innermost class or function of `path` whose lines hold `line` (a call's caller)."""
        entry = self.files.get(path)
        sites = entry.symbols.definitions if entry is not None else ()
        holding = [d for d in sites if d.kind != CONSTANT and d.start <= line <= d.end]
        return max(holding, key=lambda d: (d.depth, d.start), default=None)

    def defined(self, name: str) -> list[Site]:
        """Where `name` is defined: a short name (`derive_key`, any class's), or qualified
        (`Signer.derive_key`); none when the index holds no definition of it. What an answer's "X is
        defined in Y" is checked against."""
        short = name.rsplit(".", 1)[-1]
        return [s for s in self.definitions.get(short, ()) if "." not in name or s.name == name]

    @cached_property
    def folded(self) -> dict[str, list[Site]]:
        """`definitions` by the lower-case name: "the governor" asks about `Governor`."""
        where: dict[str, list[Site]] = {}
        for name, places in self.definitions.items():
            where.setdefault(name.lower(), []).extend(places)
        return where

    @cached_property
    def stems(self) -> dict[str, list[str]]:
        """The names defined, by the stem of each word they are made of: `retry` finds `MAX_RETRIES`."""
        where: dict[str, list[str]] = {}
        for name in sorted(self.definitions):
            for stemmed in dict.fromkeys(stem(part) for part in parts(name)):
                where.setdefault(stemmed, []).append(name)
        return where


def build_index(
    symbols: SymbolCache, seconds: float = MAP_SECONDS.value, previous: SymbolIndex | None = None
) -> SymbolIndex:
    """The index of the workspace of `symbols`, parsing only the files it does not hold as they are."""
    root = symbols.root
    started = time.monotonic()
    try:
        listed = list_files(root, ToolContext(root, deadline=started + seconds))
    # rg's memory cap (issue 29 D6) is a limit the user must hear of (issue 39 D2): caught before the
    # ToolError it also is, so the navigator can say why the map and the pre-search are off.
    except LimitExceeded as exc:
        known = _known(symbols, previous)
        return SymbolIndex(known, len(known), unlisted=str(exc))
    except ToolError:  # rg missing or past the deadline: what was known stays, the cache untouched
        known = _known(symbols, previous)
        return SymbolIndex(known, len(known))
    sources = sorted(p for p in listed if suffix(p) in SOURCE_SUFFIXES)
    files: dict[str, Entry] = {}
    parsed = 0
    for path in sources[: int(MAP_FILES.value)]:
        try:
            info = os.lstat(os.path.join(root, path))
        except OSError:
            continue
        if not stat.S_ISREG(info.st_mode):
            continue
        entry = symbols.known(path, info)
        if entry is None:
            if time.monotonic() - started > seconds:
                continue  # parsed by a later build
            entry = symbols.read(path, info, int(MAP_FILE_BYTES.value))
            parsed += 1
        files[path] = entry
    symbols.save(files)  # when they are not on disk as they are
    return SymbolIndex(files, len(sources), parsed, len(listed))


def _known(symbols: SymbolCache, previous: SymbolIndex | None) -> dict[str, Entry]:
    if previous is not None:
        return dict(previous.files)
    return {path: e for path, e in symbols.files.items() if suffix(path) in SOURCE_SUFFIXES}
