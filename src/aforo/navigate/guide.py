"""What the harness finds for a question before the model reads: the repository map ranked for it, and
the pre-search's regions as a Grep call and its result.

One `Navigator` per workspace and window. Its budgets scale with the window, in the governor's token
estimate (context/tokens): the map takes what is left of `FIXED_SHARE` of the window once the rest of
the fixed prompt (aforo's instructions, AGENTS.md, the tools) is counted, so the map never pushes the
fixed prompt past it; the pre-search takes `SEARCH_SHARE` of the window. Both are capped: a large window
does not need a larger map to be found. The agent calls `guide` as a run begins, with plain values, and
sends what it gets. A workspace whose files cannot be listed (`SymbolIndex.unlisted`) is not listed again:
the map keeps what it had, the pre-search (which would meet the same limit) is off, and the user is told
once.

A workspace with no file (or one that cannot be read) is said before the model is asked, to the user (a
warning) and to the model (a line of the system prompt, while it is so): asked about an empty folder,
the 1.5B model called Read on paths that failed and then named two files that do not exist.
"""

from __future__ import annotations

import os
import time
from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from aforo.context.tokens import chars_for, estimate_text
from aforo.events import Event, ToolEnd, ToolStart, Warning
from aforo.limits import TOOL_SECONDS
from aforo.messages import Message, SystemPart, ToolResult, ToolUse, fresh_call_ids
from aforo.navigate.index import SymbolIndex, build_index
from aforo.navigate.presearch import Presearch, defined_where, search
from aforo.navigate.repomap import MAP_PART, render
from aforo.navigate.terms import question_terms
from aforo.protocols import ToolContext
from aforo.tools.names import show
from aforo.tools.symbol_cache import SymbolCache, cache_path

# The fixed prompt's share of the window, with a margin under the 10 % it must stay below (a calibrated
# count may be ~10 % above the estimate).
FIXED_SHARE = 0.09
MAP_MAX_TOKENS = 2048
SEARCH_SHARE = 0.08
SEARCH_MAX_TOKENS = 1536
EMPTY_PART = "empty workspace"  # the system prompt's line that says so, while it is so


@dataclass(frozen=True)
class Guided:
    system: tuple[SystemPart, ...]
    messages: tuple[Message, ...] = ()  # the pre-search's call and result, to follow the question
    events: tuple[Event, ...] = ()
    answer_only: bool = False  # what was found is what the answer is made of: the first call answers


class Navigator:
    def __init__(
        self,
        workspace: Path,
        window: int,
        *,
        presearch: bool = True,
        cache: bool = True,
        symbols: SymbolCache | None = None,
    ) -> None:
        """`symbols`: the workspace's symbol cache, the tools' too (else one of its own, kept on disk
        unless `cache` is False)."""
        self.workspace = workspace
        self.window = window
        self.presearch = presearch
        self.symbols = symbols or SymbolCache(workspace, cache_path(workspace) if cache else None)
        self._index: SymbolIndex | None = None
        self._map_chars = 0
        self._told = False  # the user was told why the workspace is not listed

    def index(self, refresh: bool = False) -> SymbolIndex:
        unlisted = self._index is not None and self._index.unlisted is not None
        if self._index is None or (refresh and not unlisted):
            self._index = build_index(self.symbols, previous=self._index)
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
        room = chars_for(int(self.window * FIXED_SHARE)) - fixed_chars
        self._map_chars = max(0, min(room, chars_for(MAP_MAX_TOKENS)))
        return self._render(question)

    def _render(self, question: str) -> str | None:
        if self._map_chars <= 0:
            return None
        return render(self.index(), question_terms(question), self._map_chars)

    def search_chars(self) -> int:
        return chars_for(min(int(self.window * SEARCH_SHARE), SEARCH_MAX_TOKENS))

    def defined(self, question: str) -> tuple[str, ...]:
        """Where the names of `question` are defined, said as sentences (none when the workspace cannot
        be listed): a question about the session is not searched, but the index still knows."""
        index = self.index()
        return () if index.unlisted is not None else tuple(defined_where(index, question))

    def guide(
        self, question: str, system: Sequence[SystemPart], taken_ids: Collection[str], fresh: bool = True
    ) -> Guided:
        """The pre-search's call and result (ids not in `taken_ids`) for the run that answers `question`,
        and the system prompt, its map ranked for `question` when the conversation is `fresh`: later,
        the server's cache of the conversation (which the system prompt starts) is worth more than a
        reordered map, and the pre-search has the question's places anyway."""
        parts = tuple(p for p in system if p.name != EMPTY_PART)  # files may have come since
        index = self.index(refresh=True)  # files may have changed since the last question
        told = self._unlisted()
        empty = _empty(self.workspace, index)
        if empty is not None:
            said, line = empty
            return Guided((*parts, SystemPart(line, EMPTY_PART)), events=(*told, Warning(message=said)))
        # The pre-search's time runs from here: reading the question for names is part of it.
        started = time.monotonic()
        if fresh and any(p.name == MAP_PART for p in parts) and (mapped := self._render(question)):
            parts = tuple(replace(p, text=mapped) if p.name == MAP_PART else p for p in parts)
        if not self.presearch or index.unlisted is not None:
            return Guided(parts, events=told)
        ctx = ToolContext(self.workspace, deadline=started + TOOL_SECONDS.value)
        searched = search(self.workspace, index, question, self.search_chars(), ctx)
        if searched is None:
            return Guided(parts, events=told)
        return _guided(parts, searched, taken_ids, started, *told)


def _guided(
    parts: tuple[SystemPart, ...], found: Presearch, taken_ids: Collection[str], started: float, *told: Event
) -> Guided:
    """`found` as a call and its result in the conversation, and the events that show them."""
    use = ToolUse(next(fresh_call_ids(taken_ids)), found.tool, found.input)
    text = found.text
    end = ToolEnd(
        id=use.id,
        name=use.name,
        duration_ms=(time.monotonic() - started) * 1000,
        ok=True,
        bytes=len(text.encode("utf-8", "surrogatepass")),
        lines=text.count("\n") + 1,
        tokens=estimate_text(text),
    )
    events = (*told, ToolStart(id=use.id, name=use.name, input=use.input), end)
    messages = (Message("assistant", (use,)), Message("user", (ToolResult(use.id, text),)))
    return Guided(parts, messages, events, found.answer_only)


def _empty(workspace: Path, index: SymbolIndex) -> tuple[str, str] | None:
    """What to tell the user and the model when the workspace has no file to read, or cannot be read;
    None when it has files (or ripgrep could not list them in time: then nothing is known)."""
    name = show(workspace.resolve().name) or "/"
    try:
        with os.scandir(workspace) as entries:
            anything = next(entries, None) is not None
    except OSError as exc:
        state = f"cannot be read ({exc.strerror or type(exc).__name__})"
    else:
        if index.listed != 0:
            return None
        state = (
            "has no files to search (its ignore files leave none)"
            if anything
            else "is empty: it has no files"
        )
    told = f"The workspace {name} {state}: there is no file to read or cite; answer without naming any."
    return f"the workspace {name} {state}: the model is told so", told
