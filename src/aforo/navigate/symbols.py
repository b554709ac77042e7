"""What a source file defines and which names it uses: the facts the repository map and the pre-search
rank by, read from the syntax tree `tools/syntax.py` parses.

A definition here is a top-level class, function or constant, or a method of a top-level class
(`parent` names the class). The names a file uses (identifiers, attribute names, imported modules) are
what references are counted from: a definition used by many other files matters more.

A file that does not parse, or whose language has no grammar installed, defines nothing here; its
names still count (a bare identifier scan), so `import hashlib` in a Rust-free Python file is found.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import NamedTuple

from aforo.limits import MAP_NAMES
from aforo.tools.syntax import CONSTANT, FUNCTION, SOURCE_SUFFIXES, Site, parse, suffix

_IDENTIFIER = re.compile(rb"[A-Za-z_][A-Za-z0-9_]*")


class Definition(NamedTuple):
    """A tuple, not a dataclass: an index holds tens of thousands, made again from the cache at each start."""

    name: str
    kind: str  # CLASS, FUNCTION or CONSTANT
    line: int  # 1-based
    parent: str = ""  # the class a method belongs to; "" at the top level


@dataclass(frozen=True)
class FileSymbols:
    definitions: tuple[Definition, ...]
    names: tuple[str, ...]  # each name the file uses, once, at most MAP_NAMES of them


def symbols(path: str, data: bytes) -> FileSymbols:
    """The definitions and used names of the file at `path` (its name picks the language)."""
    ext = suffix(path)
    found = parse(data, path) if ext in SOURCE_SUFFIXES else None
    if found is None:
        return FileSymbols((), _first_names(m.group().decode() for m in _IDENTIFIER.finditer(data)))
    return FileSymbols(tuple(_mapped(found.sites, ext == ".py")), _first_names(found.names))


def _mapped(sites: Iterable[Site], python: bool) -> Iterator[Definition]:
    """The sites the map shows: the top level and the methods of its classes. Python's constants are
    those by convention (a module's `logger = ...` or `app = ...` would crowd the map); other languages
    declare theirs (const, static, #define)."""
    for site in sites:
        if site.depth == 0:
            if (
                site.kind != CONSTANT
                or not python
                or (site.name.isupper() and not site.name.startswith("__"))
            ):
                yield Definition(site.name, site.kind, site.line)
        elif site.depth == 1 and site.kind == FUNCTION:
            parent, _, name = site.name.rpartition(".")
            yield Definition(name, FUNCTION, site.line, parent)


def _first_names(names: Iterator[str]) -> tuple[str, ...]:
    seen: dict[str, None] = {}
    for name in names:
        seen.setdefault(name, None)
        if len(seen) >= MAP_NAMES.value:
            break
    return tuple(seen)
