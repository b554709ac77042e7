"""Read one answer of a provider whole: its text, its tool calls and the MessageEnd that closes it.

The one loop over a provider's stream, for the agent's turns and the governor's side calls alike. With
`cancel` the stream is read through `aforo.cancel.interruptible`, so a Ctrl-C ends the wait at once
(as KeyboardInterrupt, the run's cancellation); `on_text` sees each piece of text as it arrives, and
`progress` hears where the call is (the prompt, with the server's own progress where it sends one, then
the answer, piece by piece) for the status line.

A constrained request's answer is one JSON step (aforo.reply_format): it is decoded here, so what leaves is
the same as from a server with native tool calls — the answer's text as it streams, and the calls.

An answer that starts repeating itself word for word (aforo.repeats) is not read to the output limit:
the stream is closed, which stops the server, and the answer ends after the first copy, `end_turn`,
with a warning that says so. Its usage is unknown then (the server reports it last): none is claimed.
Once `until()` is true (the run's time is up) the stream is closed too, while it streams or while the
server is still silent, and `OutOfTime` carries what had come.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Callable, Generator
from dataclasses import dataclass, replace

from aforo.cancel import interruptible
from aforo.errors import OutOfTime, ProtocolError, ProviderError
from aforo.events import EventSink, Progress, Warning, phase
from aforo.messages import MessageEnd, Request, StreamProgress, StreamText, StreamToolCall, Usage
from aforo.protocols import Provider
from aforo.repeats import Repeats
from aforo.reply_stream import AnswerStream


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
    until: Callable[[], bool] | None = None,
) -> Reply:
    text: list[str] = []
    try:
        if progress is None:
            return _answer(provider, request, cancel, on_text, None, text, until)
        with phase(progress, "prompt"):
            return _answer(provider, request, cancel, on_text, progress, text, until)
    except ProviderError as exc:
        exc.partial = "".join(text)  # the caller keeps what the model had answered
        raise


def _answer(
    provider: Provider,
    request: Request,
    cancel: threading.Event | None,
    on_text: Callable[[str], None] | None,
    progress: EventSink | None,
    text: list[str],
    until: Callable[[], bool] | None = None,
) -> Reply:
    """The answer's events read into `text` (which the caller holds on to if the stream fails)."""
    calls: list[StreamToolCall] = []
    pieces = 0
    step = AnswerStream() if request.constrained else None
    repeats = Repeats()
    stop = threading.Event()  # set once the answer loops: the worker closes the stream
    events = provider.stream(request, cancel)
    for event in interruptible(events, cancel, stop, until) if cancel is not None else events:
        if until is not None and until() and not isinstance(event, MessageEnd):
            stop.set()
            if cancel is None and isinstance(events, Generator):
                events.close()
            raise OutOfTime("the run's time is up", "".join(text))
        if cancel is not None and cancel.is_set():
            raise KeyboardInterrupt
        if isinstance(event, StreamProgress):
            if progress is not None:
                progress(
                    Progress(phase="prompt", done=event.processed, total=event.total, cached=event.cached)
                )
            continue
        if isinstance(event, MessageEnd):
            if step is not None:
                rest, found = step.finish(request.tools)
                text.append(rest)
                if rest and on_text is not None:
                    on_text(rest)
                calls += [_call(name, args) for name, args in found]
                if calls and event.stop_reason == "end_turn":
                    event = replace(event, stop_reason="tool_use")
            return Reply("".join(text), tuple(calls), event)
        pieces += 1
        if progress is not None:
            progress(Progress(phase="generating", tokens=pieces))
        if isinstance(event, StreamText):
            piece = event.text if step is None else step.feed(event.text)
            text.append(piece)
            if piece and on_text is not None:
                on_text(piece)
            if piece and repeats.feed(piece):
                stop.set()
                if cancel is None and isinstance(events, Generator):
                    events.close()  # read here, in this thread: closed here
                return _cut_loop(text, repeats, progress)
        else:
            calls.append(event)
    if cancel is not None and cancel.is_set():
        raise KeyboardInterrupt  # interruptible stopped waiting: the user cancelled
    if until is not None and until():
        raise OutOfTime("the run's time is up", "".join(text))
    raise ProtocolError(f"the {provider.name} stream ended without a final message (no usage, no stop)")


def _cut_loop(text: list[str], repeats: Repeats, progress: EventSink | None) -> Reply:
    """The answer up to the end of its loop's first copy."""
    whole = "".join(text)
    kept = whole[: repeats.loop_at]
    if progress is not None:
        progress(
            Warning(
                message=f"The model began repeating itself word for word; its answer was stopped after "
                f"{len(kept)} characters (the loop came {len(whole) - len(kept)} more). Ask again, or "
                "ask for less at once."
            )
        )
    text[:] = [kept]
    return Reply(kept, (), MessageEnd(Usage(), "end_turn", stopped=True))


def _call(name: str, args: dict[str, object]) -> StreamToolCall:
    return StreamToolCall(f"call_{uuid.uuid4().hex[:12]}", name, json.dumps(args, ensure_ascii=False))
