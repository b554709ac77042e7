"""Side calls the governor makes to the model: a summary, a measurement. Streams consumed whole.

Only the Provider protocol is used here: the context layer never speaks HTTP.
"""

from __future__ import annotations

import threading

from aforo.errors import ProtocolError
from aforo.messages import Message, MessageEnd, Request, StreamText, StreamToolCall
from aforo.protocols import Provider


def collect(
    provider: Provider, request: Request, cancel: threading.Event | None = None
) -> tuple[str, list[StreamToolCall], MessageEnd]:
    text: list[str] = []
    calls: list[StreamToolCall] = []
    for event in provider.stream(request, cancel):
        if isinstance(event, StreamText):
            text.append(event.text)
        elif isinstance(event, StreamToolCall):
            calls.append(event)
        else:
            return "".join(text), calls, event
    raise ProtocolError(f"{provider.name} provider stream ended without a final message (no usage, no stop)")


def measure_new_content(provider: Provider, request: Request, new: tuple[Message, ...]) -> int:
    """Prompt tokens of `new` alone, as the server counts them.

    Sent as one user text with the same system prompt and no tools (a bare tool result would be an
    orphan many templates reject), minus a baseline of the same framing with an empty text, so the
    template and system prompt cancel out. Both requests ask for one token of output.
    """
    from aforo.context.compaction import render, transcript_pieces

    body = render(transcript_pieces(new))
    probe = Request(request.model, request.system, (), (Message.user(body),), 1)
    base = Request(request.model, request.system, (), (Message.user("."),), 1)
    measured = collect(provider, probe)[2].usage.prompt_tokens
    baseline = collect(provider, base)[2].usage.prompt_tokens
    return max(0, measured - baseline)
