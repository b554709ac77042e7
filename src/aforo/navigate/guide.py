"""What the harness finds for a question before the model reads: the repository map ranked for it, and
the pre-search's regions as a Grep call and its result.

One `Navigator` per workspace and window. Its budgets scale with the window: the map takes what is left
of `FIXED_SHARE` of the window once the rest of the fixed prompt (aforo's instructions, AGENTS.md, the
tools) is counted, so the map never pushes the fixed prompt past it; the pre-search takes
`SEARCH_SHARE` of the window. Both are capped: a large window does not need a larger map to be found.
The agent calls `guide` as a run begins, with plain values, and sends what it gets. A workspace whose
files cannot be listed (`SymbolIndex.unlisted`) is not listed again: the map keeps what it had, the
pre-search (which would meet the same limit) is off, and the user is told once.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from aforo.events import Event, ToolEnd, ToolStart, Warning
from aforo.limits import TOOL_SECONDS
from aforo.messages import Message, SystemPart, ToolResult, ToolUse
from aforo.navigate.index import SymbolIndex, build_index, cache_path
from aforo.navigate.presearch import search
from aforo.navigate.repomap import MAP_PART, render
from aforo.navigate.terms import question_terms
from aforo.protocols import ToolContext

CHARS_PER_TOKEN = 4  # the estimate's, as context.tokens counts: the shares below are of estimated tokens
# The fixed prompt's share of the window, with a margin under the 10 % it must stay below (a calibrated
# count may be ~10 % above the estimate).
FIXED_SHARE = 0.09
MAP_MAX_TOKENS = 2048
SEARCH_SHARE = 0.08
SEARCH_MAX_TOKENS = 1536


@dataclass(frozen=True)
class Guided:
    system: tuple[SystemPart, ...]
    messages: tuple[Message, ...] = ()  # the pre-search's call and result, to follow the question
    events: tuple[Event, ...] = ()


class Navigator:
    def __init__(self, workspace: Path, window: int, *, presearch: bool = True, cache: bool = True) -> None:
        self.workspace = workspace
        self.window = window
        self.presearch = presearch
        self._cache = cache_path(workspace) if cache else None
        self._index: SymbolIndex | None = None
        self._map_chars = 0
        self._told = False  # the user was told why the workspace is not listed

    def index(self, refresh: bool = False) -> SymbolIndex:
        unlisted = self._index is not None and self._index.unlisted is not None
        if self._index is None or (refresh and not unlisted):
            self._index = build_index(self.workspace, self._cache, previous=self._index)
        return self._index

    def _unlisted(self) -> tuple[Event, ...]:
        """The warning that the map and the pre-search are off, the first time only."""
        why = self.index().unlisted
        if why is None or self._told:
            return ()
        self._told = True
        return (
            Warning(
                message=f"The repository map and the pre-search are off for this workspace: {why} "
                "The model's own searches may stop at the same limit."
            ),
        )

    def repo_map(self, fixed_chars: int, question: str = "") -> str | None:
        """The map for the system prompt, given the characters the rest of the fixed prompt takes."""
        room = int(self.window * FIXED_SHARE) * CHARS_PER_TOKEN - fixed_chars
        self._map_chars = max(0, min(room, MAP_MAX_TOKENS * CHARS_PER_TOKEN))
        return self._render(question)

    def _render(self, question: str) -> str | None:
        if self._map_chars <= 0:
            return None
        return render(self.index(), question_terms(question), self._map_chars)

    def search_chars(self) -> int:
        return min(int(self.window * SEARCH_SHARE), SEARCH_MAX_TOKENS) * CHARS_PER_TOKEN

    def guide(
        self, question: str, system: Sequence[SystemPart], taken_ids: Collection[str], fresh: bool = True
    ) -> Guided:
        """The pre-search's call and result (ids not in `taken_ids`) for the run that answers `question`,
        and the system prompt, its map ranked for `question` when the conversation is `fresh`: later,
        the server's cache of the conversation (which the system prompt starts) is worth more than a
        reordered map, and the pre-search has the question's places anyway."""
        parts = tuple(system)
        rank = fresh and any(p.name == MAP_PART for p in parts)
        if not (rank or self.presearch):
            return Guided(parts)
        self.index(refresh=True)  # files may have changed since the last question
        told = self._unlisted()
        # The pre-search's time runs from here: reading the question for names is part of it.
        started = time.monotonic()
        mapped = self._render(question) if rank else None
        if mapped:
            parts = tuple(replace(p, text=mapped) if p.name == MAP_PART else p for p in parts)
        if not self.presearch or self.index().unlisted is not None:
            return Guided(parts, events=told)
        ctx = ToolContext(self.workspace, deadline=started + TOOL_SECONDS.value)
        found = search(self.workspace, self.index(), question, self.search_chars(), ctx)
        if found is None:
            return Guided(parts)
        n = len(taken_ids) + 1
        while f"call_{n}" in taken_ids:
            n += 1
        use = ToolUse(f"call_{n}", found.tool, found.input)
        result = ToolResult(use.id, found.text)
        elapsed = (time.monotonic() - started) * 1000
        text = found.text
        size = len(text.encode("utf-8", "surrogatepass")), text.count("\n") + 1, len(text) // CHARS_PER_TOKEN
        events: tuple[Event, ...] = (
            ToolStart(id=use.id, name=use.name, input=use.input),
            ToolEnd(
                id=use.id,
                name=use.name,
                duration_ms=elapsed,
                ok=True,
                bytes=size[0],
                lines=size[1],
                tokens=size[2],
            ),
        )
        return Guided(parts, (Message("assistant", (use,)), Message("user", (result,))), events)
