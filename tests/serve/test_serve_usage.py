"""The gateway reads a server's usage report at the same boundary as the providers (wire.usage)."""

from __future__ import annotations

import pytest

from aforo.messages import Usage
from aforo.serve.answers import end_of, stream_docs, whole_docs


@pytest.mark.parametrize("count", ["99999999999999999999", str(2**41)])
def test_a_count_no_server_can_mean_refuses_the_report_and_keeps_the_end(count: str) -> None:
    openai = whole_docs('{"model": "m", "choices": [{"finish_reason": "stop"}], "usage": '
                        f'{{"prompt_tokens": {count}, "completion_tokens": 3}}}}')  # fmt: skip
    ollama = stream_docs("ollama", [f'{{"model": "m", "done": true, "prompt_eval_count": {count}}}'])
    for api, docs in (("openai", openai), ("ollama", ollama)):
        end = end_of(api, docs)  # type: ignore[arg-type]
        assert end.usage == Usage() and "usage count" in end.usage_refused, api
        assert end.model == "m" and end.stop_reason == "end_turn", api


def test_a_plausible_report_is_taken() -> None:
    docs = whole_docs('{"model": "m", "usage": {"prompt_tokens": 120, "completion_tokens": 7, '
                      '"prompt_tokens_details": {"cached_tokens": 100}}}')  # fmt: skip
    end = end_of("openai", docs)
    assert (end.usage.input_tokens, end.usage.cache_read_tokens, end.usage.output_tokens) == (20, 100, 7)
    assert end.usage_refused == ""
