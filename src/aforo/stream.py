"""Read one answer of a provider whole: its text, its tool calls and the MessageEnd that closes it.

The one loop over a provider's stream, for the agent's turns and the governor's side calls alike. With
`cancel` the stream is read through `aforo.cancel.interruptible`, so a Ctrl-C ends the wait at once
(as KeyboardInterrupt, the run's cancellation); `on_text` sees each piece of text as it arrives.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

from aforo.cancel import interruptible
from aforo.errors import ProtocolError
from aforo.messages import MessageEnd, Request, StreamText, StreamToolCall
from aforo.protocols import Provider


@dataclass(frozen=True)
class Reply:
    text: str
    calls: tuple[StreamToolCall, ...]
    end: MessageEnd


def collect(
    provider: Provider,
    request: Request,
    cancel: threading.Event | None = None,
    on_text: Callable[[str], None] | None = None,
) -> Reply:
    text: list[str] = []
    calls: list[StreamToolCall] = []
    events = provider.stream(request, cancel)
    for event in interruptible(events, cancel) if cancel is not None else events:
        if cancel is not None and cancel.is_set():
            raise KeyboardInterrupt
        if isinstance(event, StreamText):
            text.append(event.text)
            if on_text is not None:
                on_text(event.text)
        elif isinstance(event, StreamToolCall):
            calls.append(event)
        else:
            return Reply("".join(text), tuple(calls), event)
    if cancel is not None and cancel.is_set():
        raise KeyboardInterrupt  # interruptible stopped waiting: the user cancelled
    raise ProtocolError(f"the {provider.name} stream ended without a final message (no usage, no stop)")
