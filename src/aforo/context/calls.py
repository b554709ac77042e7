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


def measure_new_content(
    provider: Provider, request: Request, new: tuple[Message, ...], baseline: int | None = None
) -> tuple[int, int]:
    """Prompt tokens of the messages `new` alone, as the server counts them, and the baseline used.

    They are sent as they are (same framing as in the conversation) behind a minimal opening turn,
    with the same system prompt and tools, and a baseline of that opening alone is subtracted, so the
    template, the system prompt and the tool definitions cancel out. Both requests ask for one token;
    the caller keeps the baseline, which only changes with the system prompt and tools.
    """
    opening: tuple[Message, ...] = (Message.user("."),)
    if new and new[0].role == "user":
        opening = (*opening, Message.assistant("."))
    probe = Request(request.model, request.system, request.tools, (*opening, *new), 1)
    measured = collect(provider, probe)[2].usage.prompt_tokens
    if baseline is None or len(opening) != 1:
        base = Request(request.model, request.system, request.tools, opening, 1)
        baseline = collect(provider, base)[2].usage.prompt_tokens
    return max(0, measured - baseline), baseline
