"""The one symbol cache of a workspace: what each source file defines and the names it uses, read from its
syntax tree once and kept by path, mtime and size (aider's one tag cache).

Find, Read's `path#Name`, the citation check and the symbol index (the map, the pre-search) all ask it,
so a file read for one is not parsed again for another. An entry holds every definition of the file
(`tools/syntax.Site`, at every depth: the index picks what the map shows, the pre-search the innermost
that holds a line) and the names the file uses (identifiers, attributes, modules; a file that does not
parse, or whose grammar is not installed, has its identifiers scanned), at most `map_names`.

The cache is kept on disk between runs (one file per workspace in the state directory) with what the
index lists (`listed`) and without the definitions' signatures: a signature is the file's text (`TOKEN =
"ghp_…"`), which must not reach disk, and the rest would only slow every start. An entry read back
from disk is not `complete`; the first tool that cites one of its file's definitions parses it again.
A cache file that cannot be read or written costs time, never an answer.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from aforo.errors import StoreError
from aforo.limits import MAP_NAMES, STATE_FILE_BYTES
from aforo.store.atomic import atomic_write, encode_json
from aforo.store.paths import state_dir
from aforo.store.redact import redact
from aforo.tools.syntax import CONSTANT, Site, has_syntax, is_python, parse

CACHE_VERSION = 3  # 3: every definition at every depth (2 held the map's only), no signature
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class FileSymbols:
    definitions: tuple[Site, ...]  # every definition, in file order
    names: tuple[str, ...]  # each name the file uses, once, at most MAP_NAMES of them
    # False: read back from disk, with what the index shows (`listed`) and no signature.
    complete: bool = True
    whole: bool = True  # False: not parsed, the file being larger than the limit it was read with

    @cached_property
    def listed(self) -> tuple[Site, ...]:
        """The definitions an index lists (and the disk keeps): classes and functions at every depth,
        constants at the top level. Python's constants are those by convention (a module's `logger =
        ...` or `app = ...` would crowd the map); other languages declare theirs (const, static,
        #define). Kept with the entry: every question's index asks again."""
        python = bool(self.definitions) and is_python(self.definitions[0].path)  # one file, one language
        return tuple(site for site in self.definitions if _listed(site, python))


def _listed(site: Site, python: bool) -> bool:
    conventional = not python or (site.name.isupper() and not site.name.startswith("__"))
    return site.kind != CONSTANT or (site.depth == 0 and conventional)


@dataclass(frozen=True)
class Entry:
    mtime_ns: int
    size: int
    symbols: FileSymbols

    def fresh(self, info: os.stat_result) -> bool:
        return (self.mtime_ns, self.size) == (info.st_mtime_ns, info.st_size)


def cache_path(workspace: Path) -> Path:
    key = hashlib.sha256(os.fsencode(str(workspace.resolve()))).hexdigest()[:32]
    return state_dir() / "maps" / f"{key}.json"


class SymbolCache:
    """The entries of one workspace's files by their path relative to it; the one owner of them.

    Tools run on threads of their own: an entry is replaced whole, never changed in place."""

    def __init__(self, workspace: Path, disk: Path | None = None) -> None:
        self.root = workspace.resolve()
        self._disk = disk
        self._files: dict[str, Entry] | None = None if disk is not None else {}
        self._saved: set[str] = set()  # the paths the disk holds as they are in memory

    @property
    def files(self) -> dict[str, Entry]:
        """What is cached (read from disk the first time it is asked for)."""
        if self._files is None:
            self._files = _load(self._disk) if self._disk is not None else {}
            self._saved = set(self._files)
        return self._files

    def known(self, path: str, info: os.stat_result) -> Entry | None:
        """The entry of `path` if it is cached as the file is now (`info`)."""
        entry = self.files.get(path)
        return entry if entry is not None and entry.fresh(info) else None

    def read(self, path: str, info: os.stat_result, limit: int, complete: bool = False) -> Entry:
        """The entry of `path` as the file is now, parsed unless cached (or cached from disk, when the
        caller needs it `complete`: signatures, every constant); a file larger than `limit` bytes, or
        one that cannot be read, defines nothing."""
        entry = self.known(path, info)
        if (
            entry is None
            or (complete and not entry.symbols.complete)
            or (not entry.symbols.whole and info.st_size <= limit)
        ):
            entry = Entry(info.st_mtime_ns, info.st_size, _parse(self.root / path, path, info.st_size, limit))
            self.files[path] = entry
            self._saved.discard(path)
        return entry

    def save(self, paths: Iterable[str]) -> None:
        """Keep the entries of `paths` (the files the workspace has now) on disk, and only them."""
        files = self.files
        kept = {path for path in paths if path in files}
        if self._disk is None or kept == self._saved:
            return
        rows = {path: _row(files[path]) for path in sorted(kept)}
        with contextlib.suppress(StoreError):  # the next start parses again: slower, never wrong
            atomic_write(self._disk, encode_json({"version": CACHE_VERSION, "files": rows}))
            self._saved = kept


def symbols(path: str, data: bytes) -> FileSymbols:
    """The definitions and used names of the file at `path` (its name picks the language)."""
    found = parse(data, path) if has_syntax(path) else None
    if found is None:
        # No tree tells code from strings: a token in one (`"ghp_…"`) scans as a name, and the names
        # go to disk. Scanned after the sessions' redaction, it is `REDACTED` there.
        text = redact(data.decode("utf-8", errors="replace"))
        return FileSymbols((), _first_names(m.group() for m in _IDENTIFIER.finditer(text)))
    return FileSymbols(tuple(found.sites), _first_names(found.names))


def _first_names(names: Iterator[str]) -> tuple[str, ...]:
    seen: dict[str, None] = {}
    for name in names:
        seen.setdefault(name, None)
        if len(seen) >= MAP_NAMES.value:
            break
    return tuple(seen)


def _parse(real: Path, path: str, size: int, limit: int) -> FileSymbols:
    if size > limit:
        return FileSymbols((), (), whole=False)
    try:
        with open(real, "rb") as f:
            data = f.read(limit + 1)
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
    mtime_ns, size, definitions, names, whole = row
    found = tuple(
        Site(path, name, kind, line, start, end, "", depth)
        for name, kind, line, start, end, depth in definitions
    )
    # The fields the map and the pre-search compute with; a cache of another shape is rebuilt.
    if not all(type(d.line) is int and type(d.end) is int and type(d.name) is str for d in found):
        raise TypeError("a definition of another shape")
    return Entry(mtime_ns, size, FileSymbols(found, tuple(names), complete=False, whole=whole is True))


def _row(e: Entry) -> list[Any]:
    sites = [[s.name, s.kind, s.line, s.start, s.end, s.depth] for s in e.symbols.listed]
    return [e.mtime_ns, e.size, sites, e.symbols.names, e.symbols.whole]
