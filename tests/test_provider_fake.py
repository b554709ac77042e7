"""The scripted fake provider: turns in order, usage as the estimate, truncation modes of SPEC §1.3."""

from __future__ import annotations

import json
import math
import threading

import pytest

from aforo.context.tokens import estimate_request, estimate_text
from aforo.errors import ConnectError, ProviderError
from aforo.messages import (
    Message,
    MessageEnd,
    Request,
    StreamEvent,
    StreamText,
    StreamToolCall,
    SystemPart,
    Usage,
)
from aforo.providers.fake import FakeProvider, FakeScriptExhausted, FakeTurn, Truncate


def request(chars: int = 400) -> Request:
    return Request("fake", (SystemPart("sys"),), (), (Message.user("x" * chars),), 128)


def play(provider: FakeProvider, req: Request, cancel: threading.Event | None = None) -> list[StreamEvent]:
    return list(provider.stream(req, cancel))


def end(events: list[StreamEvent]) -> MessageEnd:
    assert isinstance(events[-1], MessageEnd)
    assert sum(isinstance(e, MessageEnd) for e in events) == 1
    return events[-1]


def test_turns_are_played_in_order_and_requests_recorded() -> None:
    fake = FakeProvider(
        [
            FakeTurn("Let me look around the repository first.", [("Glob", {"pattern": "*.py"})]),
            FakeTurn("It prints hello."),
        ]
    )
    first = play(fake, request())
    texts = [e.text for e in first if isinstance(e, StreamText)]
    assert len(texts) > 1 and "".join(texts) == "Let me look around the repository first."
    calls = [e for e in first if isinstance(e, StreamToolCall)]
    assert [(c.name, json.loads(c.arguments)) for c in calls] == [("Glob", {"pattern": "*.py"})]
    assert end(first).stop_reason == "tool_use"
    second = play(fake, request(10))
    assert end(second).stop_reason == "end_turn"
    assert [r.messages[0].text for r in fake.requests] == ["x" * 400, "x" * 10]


def test_call_ids_are_unique_across_turns_and_raw_args_pass_untouched() -> None:
    fake = FakeProvider(
        [FakeTurn(tool_calls=[("Read", "{broken"), ("Read", {})]), FakeTurn(tool_calls=[("Read", {})])]
    )
    events = play(fake, request()) + play(fake, request())
    calls = [e for e in events if isinstance(e, StreamToolCall)]
    assert len({c.id for c in calls}) == 3
    assert calls[0].arguments == "{broken" and calls[1].arguments == "{}"


def test_usage_is_the_request_estimate_and_the_output_estimate() -> None:
    req = request(400)
    usage = end(play(FakeProvider([FakeTurn("four")]), req)).usage
    assert usage == Usage(input_tokens=estimate_request(req), output_tokens=estimate_text("four"))


def test_explicit_stop_reason_and_error_turns() -> None:
    fake = FakeProvider([FakeTurn("cut", stop_reason="max_tokens"), FakeTurn(error=ConnectError("down"))])
    assert end(play(fake, request())).stop_reason == "max_tokens"
    with pytest.raises(ConnectError, match="down"):
        play(fake, request())


def test_a_callable_script_sees_each_request() -> None:
    fake = FakeProvider(lambda req: FakeTurn(f"{len(req.messages)} messages"))
    assert "".join(e.text for e in play(fake, request()) if isinstance(e, StreamText)) == "1 messages"


def test_running_out_of_script_is_a_clear_error() -> None:
    fake = FakeProvider([FakeTurn("only one")])
    play(fake, request())
    with pytest.raises(FakeScriptExhausted, match="1 turns") as info:
        play(fake, request())
    assert isinstance(info.value, ProviderError)


@pytest.mark.parametrize(("mode", "over"), [("plateau", math.floor(1000 * 0.9)), ("collapse", 63)])
def test_truncate_reports_the_estimate_when_it_fits_and_the_mode_number_when_not(
    mode: str, over: int
) -> None:
    fake = FakeProvider([FakeTurn("a"), FakeTurn("b")], truncate=Truncate(1000, mode))  # type: ignore[arg-type]
    fits = request(400 * 4 - 100)
    assert estimate_request(fits) <= 1000
    assert end(play(fake, fits)).usage.input_tokens == estimate_request(fits)
    too_big = request(1000 * 4 + 40)
    assert estimate_request(too_big) > 1000
    assert end(play(fake, too_big)).usage.input_tokens == over


def test_report_usage_false_reports_zeros() -> None:
    fake = FakeProvider([FakeTurn("hello")], report_usage=False)
    assert end(play(fake, request())).usage == Usage()


def test_cancel_stops_without_message_end() -> None:
    cancel = threading.Event()
    fake = FakeProvider([FakeTurn("one two three four five six")])
    seen = []
    for event in fake.stream(request(), cancel):
        seen.append(event)
        cancel.set()
    assert len(seen) == 1 and isinstance(seen[0], StreamText)


def test_measurements_do_not_consume_the_script() -> None:
    provider = FakeProvider([FakeTurn("the only turn")])
    probe = Request("m", (), (), (Message.user("x" * 400),), 1)
    events = list(provider.stream(probe))
    assert events == [MessageEnd(Usage(estimate_request(probe), output_tokens=1), "max_tokens")]
    turn = list(provider.stream(Request("m", (), (), (Message.user("q"),), 100)))
    assert "".join(e.text for e in turn if isinstance(e, StreamText)) == "the only turn"
