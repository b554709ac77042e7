"""The one reader of a provider's stream, for the loop's turns and the governor's side calls."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from aforo.errors import ProtocolError
from aforo.messages import Message, MessageEnd, Request, StreamEvent, StreamText, StreamToolCall, Usage
from aforo.stream import collect

REQUEST = Request("m", (), (), (Message.user("hi"),), 16)


class Scripted:
    """A provider that streams `events` as they are, whatever was asked."""

    name = "scripted"
    model = "m"

    def __init__(self, *events: StreamEvent, on_item: threading.Event | None = None) -> None:
        self.events = events
        self.on_item = on_item

    def stream(self, request: Request, cancel: threading.Event | None = None) -> Iterator[StreamEvent]:
        for event in self.events:
            yield event
            if self.on_item is not None:
                self.on_item.set()


def test_text_calls_and_end_come_back_whole_and_text_arrives_live() -> None:
    call = StreamToolCall("c1", "Read", '{"file_path": "a.py"}')
    end = MessageEnd(Usage(12, output_tokens=3), "tool_use")
    seen: list[str] = []
    reply = collect(
        Scripted(StreamText("Let me "), call, StreamText("look."), end), REQUEST, on_text=seen.append
    )
    assert (reply.text, reply.calls, reply.end) == ("Let me look.", (call,), end)
    assert seen == ["Let me ", "look."]


def test_a_stream_without_its_end_is_a_protocol_error() -> None:
    with pytest.raises(ProtocolError, match="scripted stream ended without a final message"):
        collect(Scripted(StreamText("half an ans")), REQUEST)


def test_a_cancel_during_the_stream_is_the_users_interrupt() -> None:
    cancel = threading.Event()
    end = MessageEnd(Usage(12), "end_turn")
    # The cancel lands after the first piece: neither the rest of the text nor the end is taken.
    with pytest.raises(KeyboardInterrupt):
        collect(Scripted(StreamText("a"), StreamText("b"), end, on_item=cancel), REQUEST, cancel)
