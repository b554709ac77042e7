"""The workspace's symbol index: every source file's definitions and used names, built once and kept
fresh by file mtimes.

A definition is a `tools/syntax.Site` (the one type the tools share): here a top-level class, function
or constant, or a method of a top-level class. The names a file uses (identifiers, attribute names,
imported modules) are what references are counted from: a definition used by many other files matters
more. A file that does not parse, or whose language has no grammar installed, defines nothing here; its
names still count (a bare identifier scan), so `import hashlib` in a Rust-free Python file is found.

The files are those ripgrep would search (ignore files honoured), the source ones among them, at most
`map_files`; a symbolic link is not followed (what it points to may be outside the workspace). Parsing
a large tree takes seconds, so what was parsed is kept in the state directory, one cache file per
workspace, each file's entry keyed by its path, mtime and size: the next build parses only what
changed. A build that reaches `map_seconds` stops and keeps what it has; the rest is parsed next time.
A cache that cannot be read or written costs time, never the map. A listing that reaches a limit (rg's
memory, which a 200 000-line .gitignore exhausts) leaves the index as it was and says why (`unlisted`):
the run goes on without the map, never ends in a traceback.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import stat
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from aforo.errors import LimitExceeded, StoreError, ToolError
from aforo.limits import MAP_FILE_BYTES, MAP_FILES, MAP_NAMES, MAP_SECONDS, STATE_FILE_BYTES
from aforo.navigate.terms import parts, stem
from aforo.protocols import ToolContext
from aforo.store.atomic import atomic_write, encode_json
from aforo.store.paths import state_dir
from aforo.tools.ripgrep import list_files
from aforo.tools.syntax import CONSTANT, FUNCTION, SOURCE_SUFFIXES, Site, parse, suffix

CACHE_VERSION = 2  # 2: `Site`s (their lines, no signature), where 1 kept a name, kind, line and class
_IDENTIFIER = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class FileSymbols:
    definitions: tuple[Site, ...]
    names: tuple[str, ...]  # each name the file uses, once, at most MAP_NAMES of them


@dataclass(frozen=True)
class Entry:
    mtime_ns: int
    size: int
    symbols: FileSymbols


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
    def definitions(self) -> dict[str, list[Site]]:
        """Where each name (a method's without its class) is defined, in path order (`files` is built
        in it): the answer to "where is X defined?" that other parts check an answer against."""
        where: dict[str, list[Site]] = {}
        for entry in self.files.values():
            for site in entry.symbols.definitions:
                where.setdefault(site.short, []).append(site)
        return where

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


def cache_path(workspace: Path) -> Path:
    key = hashlib.sha256(os.fsencode(str(workspace.resolve()))).hexdigest()[:32]
    return state_dir() / "maps" / f"{key}.json"


def build_index(
    workspace: Path,
    cache: Path | None = None,
    seconds: float = MAP_SECONDS.value,
    previous: SymbolIndex | None = None,
) -> SymbolIndex:
    """The index of `workspace`, parsing only the files that `previous` (else the cache at `cache`) does
    not hold as they are."""
    root = workspace.resolve()
    started = time.monotonic()
    known = previous.files if previous is not None else _load(cache) if cache is not None else {}
    try:
        listed = list_files(root, ToolContext(root, deadline=started + seconds))
    # rg's memory cap (issue 29 D6) is a limit the user must hear of (issue 39 D2): caught before the
    # ToolError it also is, so the navigator can say why the map and the pre-search are off.
    except LimitExceeded as exc:
        return SymbolIndex(dict(known), len(known), unlisted=str(exc))
    except ToolError:  # rg missing or past the deadline: what was known stays, the cache untouched
        return SymbolIndex(dict(known), len(known))
    sources = sorted(p for p in listed if suffix(p) in SOURCE_SUFFIXES)
    files: dict[str, Entry] = {}
    parsed = 0
    for path in sources[: int(MAP_FILES.value)]:
        try:
            st = os.lstat(os.path.join(root, path))
        except OSError:
            continue
        if not stat.S_ISREG(st.st_mode):
            continue
        old = known.get(path)
        if old is not None and (old.mtime_ns, old.size) == (st.st_mtime_ns, st.st_size):
            files[path] = old
            continue
        if time.monotonic() - started > seconds:
            continue  # parsed by a later build
        files[path] = Entry(st.st_mtime_ns, st.st_size, _parse(root / path, path, st.st_size))
        parsed += 1
    if cache is not None and (parsed or files.keys() != known.keys()):
        _save(cache, files)
    return SymbolIndex(files, len(sources), parsed, len(listed))


def symbols(path: str, data: bytes) -> FileSymbols:
    """The definitions and used names of the file at `path` (its name picks the language)."""
    ext = suffix(path)
    found = parse(data, path) if ext in SOURCE_SUFFIXES else None
    if found is None:
        return FileSymbols((), _first_names(m.group().decode() for m in _IDENTIFIER.finditer(data)))
    return FileSymbols(tuple(_mapped(found.sites, ext == ".py")), _first_names(found.names))


def _mapped(sites: Iterable[Site], python: bool) -> Iterator[Site]:
    """The sites the map shows: the top level and the methods of its classes. Python's constants are
    those by convention (a module's `logger = ...` or `app = ...` would crowd the map); other languages
    declare theirs (const, static, #define). Without their signature: it is the file's text (`TOKEN =
    "ghp_…"`), which the index's cache must not carry to disk, and nothing the index serves shows it."""
    for site in sites:
        mapped = site.depth == 1 and site.kind == FUNCTION
        if site.depth == 0:
            mapped = (
                site.kind != CONSTANT
                or not python
                or (site.name.isupper() and not site.name.startswith("__"))
            )
        if mapped:
            yield site._replace(signature="")


def _first_names(names: Iterator[str]) -> tuple[str, ...]:
    seen: dict[str, None] = {}
    for name in names:
        seen.setdefault(name, None)
        if len(seen) >= MAP_NAMES.value:
            break
    return tuple(seen)


def _parse(real: Path, path: str, size: int) -> FileSymbols:
    if size > MAP_FILE_BYTES.value:
        return FileSymbols((), ())
    try:
        with open(real, "rb") as f:
            data = f.read(int(MAP_FILE_BYTES.value) + 1)
    except OSError:
        return FileSymbols((), ())
    return symbols(path, data)


def _load(cache: Path) -> dict[str, Entry]:
    """The cache's entries; nothing when it is missing, too large, broken or of another version.

    Read with `json.loads` alone, not the state files' depth check: the cache is aforo's own file in
    its private state directory and the check would double a warm start; a nesting too deep for the
    parser is its RecursionError, caught like any broken cache."""
    try:
        with open(cache, "rb") as f:
            data = f.read(int(STATE_FILE_BYTES.value) + 1)
        if len(data) > STATE_FILE_BYTES.value:
            return {}
        raw = json.loads(data)
        if raw.get("version") != CACHE_VERSION:
            return {}
        return {path: _entry(path, row) for path, row in raw["files"].items()}
    # A cache from a broken write or another version: rebuilt, never trusted in part.
    except (OSError, RecursionError, AttributeError, KeyError, TypeError, ValueError):
        return {}


def _entry(path: str, row: list[Any]) -> Entry:
    mtime_ns, size, definitions, names = row
    found = tuple(
        Site(path, name, kind, line, start, end, "", depth)
        for name, kind, line, start, end, depth in definitions
    )
    # The fields the map and the pre-search compute with; a cache of another shape is rebuilt.
    if not all(type(d.line) is int and type(d.end) is int and type(d.name) is str for d in found):
        raise TypeError("a definition of another shape")
    return Entry(mtime_ns, size, FileSymbols(found, tuple(names)))


def _save(cache: Path, files: dict[str, Entry]) -> None:
    rows = {path: _row(e) for path, e in files.items()}
    with contextlib.suppress(StoreError):  # the next build parses again: slower, never wrong
        atomic_write(cache, encode_json({"version": CACHE_VERSION, "files": rows}))


def _row(e: Entry) -> list[Any]:
    sites = [[s.name, s.kind, s.line, s.start, s.end, s.depth] for s in e.symbols.definitions]
    return [e.mtime_ns, e.size, sites, e.symbols.names]
