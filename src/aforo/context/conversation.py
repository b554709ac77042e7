"""The conversation and its one owner: read by everyone, appended to by the loop, replaced only here.

Replacing it (a transformation, /clear, /undo, a resumed session) is the moment growth detection must
restart and cached estimates of messages that left can go, so `replace` does both; nobody else assigns
the history, so nobody can forget them.
"""

from __future__ import annotations

from collections.abc import Sequence

from aforo.context.counting import Meter
from aforo.context.watch import Watch
from aforo.messages import Message, ToolResult


class Conversation:
    def __init__(self, meter: Meter, watch: Watch) -> None:
        self._meter = meter
        self._watch = watch
        # A tuple: every change makes a new one, so `messages is saved` tells whether it changed.
        self._messages: tuple[Message, ...] = ()

    @property
    def messages(self) -> tuple[Message, ...]:
        return self._messages

    def append(self, message: Message) -> None:
        self._messages = (*self._messages, message)

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
