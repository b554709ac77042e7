"""The gateway reads a server's usage report at the same boundary as the providers (wire.usage), and
an answer's end with the providers' own reading (wire.answer_end)."""

from __future__ import annotations

import pytest

from aforo.messages import Usage
from aforo.wire.answer_end import AnswerReading


@pytest.mark.parametrize("count", ["99999999999999999999", str(2**41)])
def test_a_count_no_server_can_mean_refuses_the_report_and_keeps_the_end(count: str) -> None:
    openai = AnswerReading("openai")
    openai.whole('{"model": "m", "choices": [{"finish_reason": "stop"}], "usage": '
                 f'{{"prompt_tokens": {count}, "completion_tokens": 3}}}}')  # fmt: skip
    ollama = AnswerReading("ollama_chat")
    ollama.line(f'{{"model": "m", "done": true, "prompt_eval_count": {count}}}')
    for api, reading in (("openai", openai), ("ollama", ollama)):
        end = reading.end()
        assert end.usage == Usage() and "usage count" in end.usage_refused, api
        assert end.model == "m" and end.stop_reason == "end_turn", api


def test_a_plausible_report_is_taken() -> None:
    reading = AnswerReading("openai")
    reading.whole('{"model": "m", "usage": {"prompt_tokens": 120, "completion_tokens": 7, '
                  '"prompt_tokens_details": {"cached_tokens": 100}}}')  # fmt: skip
    end = reading.end()
    assert (end.usage.input_tokens, end.usage.cache_read_tokens, end.usage.output_tokens) == (20, 100, 7)
    assert end.usage_refused == ""


@pytest.mark.parametrize(("reason", "stop"), [("function_call", "tool_use"), ("length", "max_tokens")])
def test_every_stop_the_providers_know_reaches_the_gateway(reason: str, stop: str) -> None:
    reading = AnswerReading("openai")
    for line in (f'data: {{"choices": [{{"index": 0, "delta": {{}}, "finish_reason": "{reason}"}}]}}', ""):
        reading.line(line)
    assert reading.end().stop_reason == stop
