"""The facts an answer's citations are checked against (aforo.citations decides; this gathers).

The workspace says which files exist and how many lines each has; the symbol index's "where is X
defined" (`tools.symbols.find_definitions`, its one use here) says where a name is defined. Files are
the ones a tool may read: a cited path that resolves outside the workspace, or is no regular file, does
not exist for the check. The whole check has `citation_seconds`; what it could not look at in time is
not judged (a name not looked up holds if its file does), never guessed.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

from aforo.citations import Definition, Facts, Verdict, check, find, matches, wanted
from aforo.errors import LimitExceeded, ToolError
from aforo.limits import CITATION_SECONDS, CITATIONS, READ_BYTES
from aforo.protocols import ToolContext
from aforo.tools.names import show
from aforo.tools.ripgrep import list_files
from aforo.tools.roles import is_declaration_file
from aforo.tools.symbol_cache import SymbolCache
from aforo.tools.symbols import cache_for, find_definitions
from aforo.tools.workspace import open_regular, resolve

_CHUNK = 1 << 20


@dataclass(frozen=True)
class Checker:
    """Checks the citations of answers about one workspace."""

    workspace: Path
    symbols: SymbolCache | None = None  # the workspace's symbol cache, the tools' and the map's

    def __call__(self, answer: str) -> tuple[Verdict, ...]:
        cited = find(answer, int(CITATIONS.value))
        if not cited:
            return ()
        return tuple(check(cited, self.facts(*wanted(cited))))

    def facts(self, paths: set[str], names: set[str]) -> Facts:
        ctx = ToolContext(self.workspace, deadline=time.monotonic() + CITATION_SECONDS.value)
        root = self.workspace.resolve()
        try:
            listed = list_files(root, ctx)
        # rg past its memory cap (a huge .gitignore) is a LimitExceeded: the paths as cited still count.
        except (ToolError, LimitExceeded):
            listed = set()
        files: dict[str, int] = {}
        for path in paths:
            for name in {*matches(path, listed, root.parts[1:]), *self._exact(path)}:
                lines = _lines(root / name)
                if lines is not None:
                    files[show(name)] = lines
        return Facts(files, self._definitions(cache_for(self.symbols, root), names, ctx), root.parts[1:])

    def _exact(self, path: str) -> list[str]:
        """`path` itself, when it names a regular file inside the workspace (listed or not)."""
        try:
            real = resolve(self.workspace, path)
        except ToolError:
            return []
        root = self.workspace.resolve()
        return [os.path.relpath(real, root)] if real.is_file() and real.is_relative_to(root) else []

    @staticmethod
    def _definitions(symbols: SymbolCache, names: set[str], ctx: ToolContext) -> dict[str, list[Definition]]:
        found: dict[str, list[Definition]] = {}
        for name in sorted(names):
            try:
                sites = find_definitions(symbols, name, ctx).items
            except (ToolError, LimitExceeded):  # out of time or memory: the names left are not judged
                break
            # The code before its type stubs: the fact a wrong citation is sent back with names the first
            # few (attrs' `Factory`: five `__init__.pyi` lines sorted before `_make.py`'s class).
            ordered = sorted(sites, key=lambda s: is_declaration_file(s.path))
            found[name] = [Definition(show(s.path), s.line, s.start) for s in ordered]
        return found


def _lines(path: Path) -> int | None:
    """How many lines the file has (as Read counts them), None when it cannot be read."""
    try:
        with open_regular(path, str(path)) as f:
            count, last, scanned = 0, b"", 0
            while scanned <= READ_BYTES.value and (chunk := f.read(_CHUNK)):
                count += chunk.count(b"\n")
                last, scanned = chunk[-1:], scanned + len(chunk)
    except (ToolError, OSError):
        return None
    return count + (1 if last and last != b"\n" else 0)
