"""The conversation and its one owner: read by everyone, appended to by the loop, replaced only here.

Replacing it (a transformation, /clear, /undo, a resumed session) is the moment growth detection must
restart and cached estimates of messages that left can go, so `replace` does both; nobody else assigns
the history, so nobody can forget them.

The session's trail (`context/trail`) is kept here too, for the same reason: every message appended
joins it, and no `replace` (a compaction, /clear, /undo) takes anything out of it; only a session
opened or resumed sets it (`restore`).
"""

from __future__ import annotations

from collections.abc import Sequence

from aforo.context.counting import Meter
from aforo.context.trail import Trail
from aforo.context.watch import Watch
from aforo.messages import Message, ToolResult


class Conversation:
    def __init__(self, meter: Meter, watch: Watch) -> None:
        self._meter = meter
        self._watch = watch
        # A tuple: every change makes a new one, so `messages is saved` tells whether it changed.
        self._messages: tuple[Message, ...] = ()
        self._trail = Trail()

    @property
    def messages(self) -> tuple[Message, ...]:
        return self._messages

    @property
    def trail(self) -> Trail:
        return self._trail

    def append(self, message: Message) -> None:
        self._messages = (*self._messages, message)
        self._trail = self._trail.absorb(message)

    def restore(self, messages: Sequence[Message], trail: Trail) -> None:
        """Open a saved session: its conversation and its trail."""
        self.replace(messages)
        self._trail = trail

    def replace(self, messages: Sequence[Message]) -> None:
        """The one way to swap the history; nothing that depends on the old one survives it."""
        self._messages = tuple(messages)
        self._watch.reset()
        self._meter.estimates.prune(self._messages)

    def close_pending(self, note: str) -> None:
        """Answer every tool call of the last message that has no result, so the transcript stays whole."""
        last = self._messages[-1] if self._messages else None
        if last is not None and last.role == "assistant" and last.tool_uses:
            self.append(Message("user", tuple(ToolResult(u.id, note, is_error=True) for u in last.tool_uses)))
