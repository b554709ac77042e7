"""Read one answer of a provider whole: its text, its tool calls and the MessageEnd that closes it.

The one loop over a provider's stream, for the agent's turns and the governor's side calls alike. With
`cancel` the stream is read through `aforo.cancel.interruptible`, so a Ctrl-C ends the wait at once
(as KeyboardInterrupt, the run's cancellation); `on_text` sees each piece of text as it arrives, and
`progress` hears where the call is (the prompt, with the server's own progress where it sends one, then
the answer, piece by piece) for the status line.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

from aforo.cancel import interruptible
from aforo.errors import ProtocolError
from aforo.events import EventSink, Progress, phase
from aforo.messages import MessageEnd, Request, StreamProgress, StreamText, StreamToolCall
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
    progress: EventSink | None = None,
) -> Reply:
    if progress is None:
        return _read(provider, request, cancel, on_text, None)
    with phase(progress, "prompt"):
        return _read(provider, request, cancel, on_text, progress)


def _read(
    provider: Provider,
    request: Request,
    cancel: threading.Event | None,
    on_text: Callable[[str], None] | None,
    progress: EventSink | None,
) -> Reply:
    text: list[str] = []
    calls: list[StreamToolCall] = []
    pieces = 0
    events = provider.stream(request, cancel)
    for event in interruptible(events, cancel) if cancel is not None else events:
        if cancel is not None and cancel.is_set():
            raise KeyboardInterrupt
        if isinstance(event, StreamProgress):
            if progress is not None:
                progress(Progress("prompt", done=event.processed, total=event.total, cached=event.cached))
            continue
        if isinstance(event, MessageEnd):
            return Reply("".join(text), tuple(calls), event)
        pieces += 1
        if progress is not None:
            progress(Progress("generating", tokens=pieces))
        if isinstance(event, StreamText):
            text.append(event.text)
            if on_text is not None:
                on_text(event.text)
        else:
            calls.append(event)
    if cancel is not None and cancel.is_set():
        raise KeyboardInterrupt  # interruptible stopped waiting: the user cancelled
    raise ProtocolError(f"the {provider.name} stream ended without a final message (no usage, no stop)")
