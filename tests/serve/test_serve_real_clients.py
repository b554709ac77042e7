"""The official `openai` SDK, pointed at `aforo serve` in front of a server that drops the oldest
messages and answers 200: with the gateway the client never gets an answer given without its question
(it gets the overflow error it already handles, or with --compact an answer that kept the task);
without it, the same request shows the silent loss."""

from __future__ import annotations

import openai
import pytest

from dialects.truncating_app import LOST_TASK_ANSWER, TruncatingServer, reader_policy
from serve.gateway_support import gateway
from support.live_server import LiveServer

pytestmark = pytest.mark.real

MARKER = "TASK-KEY-42"


def conversation(notes: int = 24) -> list[dict[str, str]]:
    messages = [{"role": "user", "content": f"{MARKER}: explain what the modules in this project do."}]
    for i in range(notes):
        messages += [
            {"role": "assistant", "content": f"ack {i}"},
            {"role": "user", "content": f"note {i}: " + "lorem ipsum " * 33},
        ]
    return messages


def client(url: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0)


def server() -> TruncatingServer:
    return TruncatingServer(reader_policy(MARKER, []), window=2048, mode="ollama")


def test_without_the_gateway_the_sdk_gets_an_answer_that_lost_the_question() -> None:
    with LiveServer(server().app) as bare:
        answer = client(bare.url).chat.completions.create(model="test-model", messages=conversation())
    assert answer.choices[0].message.content == LOST_TASK_ANSWER  # HTTP 200, the task gone


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_through_the_gateway_the_sdk_raises_its_context_length_error(stream: bool) -> None:
    # The user told aforo the window they believe (8192); the server runs 2048 and drops silently. The
    # conversation's first request fits; the next one crosses the real window and loses the task.
    sdk_calls = []
    with gateway(server().app, window=8192) as (url, _):
        sdk = client(url)
        first = conversation(14)
        answer = sdk.chat.completions.create(model="test-model", messages=first)
        grown = [*first, {"role": "assistant", "content": answer.choices[0].message.content}]
        grown += conversation(6)[1:]
        with pytest.raises(openai.BadRequestError) as caught:
            sdk_calls.append(sdk.chat.completions.create(model="test-model", messages=grown, stream=stream))
    assert MARKER in (answer.choices[0].message.content or "")
    assert sdk_calls == []
    assert caught.value.code == "context_length_exceeded"
    assert caught.value.param == "messages"


def test_through_the_gateway_with_compact_the_sdk_gets_an_answer_that_kept_the_task() -> None:
    # Past compact_at of a 4096-token window, under its available room: the gateway compacts on the
    # same server (a summary request must fit its window too), then sends the compacted conversation.
    roomy = TruncatingServer(reader_policy(MARKER, []), window=4096, mode="ollama")
    with gateway(roomy.app, window=4096, compact=True) as (url, _):
        raw = client(url).chat.completions.with_raw_response.create(
            model="test-model", messages=conversation()
        )
    answer = raw.parse()
    assert MARKER in (answer.choices[0].message.content or "")
    assert raw.headers["x-aforo-compacted"].startswith("compacted: 49 messages -> ")
