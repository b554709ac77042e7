"""The answer's text on its way to the events: streamed as it comes, or shown once the turn is whole.

It goes through a `TextHold`, so a tool call the model writes as text is shown once, as a call
(`TextCall`), never as part of the answer. With `live` the pieces are shown as they arrive (a truncated
turn's answer is then marked discarded by its `turn_end`); without it, only a turn known to be whole is
shown, at `settle` (a silent server whose window is a guess).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from aforo.events import EventSink, TextCall, TextDelta
from aforo.loop.reading import ReadReply
from aforo.loop.text_hold import TextHold
from aforo.tools.registry import ToolRegistry

_WORD = re.compile(r"\w")


class Shown:
    def __init__(self, tools: ToolRegistry, emit: EventSink, *, live: bool) -> None:
        self.tools, self.emit, self.live = tools, emit, live
        self.hold = TextHold(tools.names)
        self.unspoken, self.spoke = "", False

    @property
    def on_text(self) -> Callable[[str], None] | None:
        """What the stream calls with each piece of text (None: nothing is shown while it streams)."""
        return self.piece if self.live else None

    def piece(self, text: str) -> None:
        self._show(self.hold.feed(text))

    def settle(self, read: ReadReply) -> None:
        """The rest of the answer's text, then the calls it wrote as text, each as its own event."""
        if not self.live:
            self._show(self.hold.feed(read.reply.text))
        late, calls = self.hold.settle([] if read.reply.calls else [(u.name, u.input) for u in read.uses])
        self._show(late)
        for held in calls:
            self.emit(TextCall(text=held.text, calls=tuple({"name": n, "input": a} for n, a in held.calls)))

    def _show(self, text: str) -> None:
        # Nothing is shown before the answer's first word: an answer that says nothing (`...`) is not
        # the answer, and the agent asks again.
        if not self.spoke:
            self.unspoken += text
            if not _WORD.search(self.unspoken):
                return
            text, self.unspoken, self.spoke = self.unspoken, "", True
        if text:
            self.emit(TextDelta(text=text))
