"""Protocol facts of the real llama-server (b11434, `-c 4096 -np 1 --jinja`) that aforo relies on.

The window it reports, its exact count equal to the usage of the same request (through our own wire
translation and our streaming adapter), and an over-window prompt refused loudly and mapped to our
ContextOverflowError — with the server still healthy afterwards.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from aforo.errors import ContextOverflowError
from aforo.messages import Message, MessageEnd, Request, TextBlock, ToolResult, ToolUse
from aforo.providers.openai_compat import OpenAICompatProvider
from aforo.wire.openai_chat import chat_body
from aforo.wire.overflow_wordings import map_overflow

pytestmark = pytest.mark.real

WINDOW = 4096


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=300) as c:
        yield c


def exact_count(client: httpx.Client, base_url: str, request: Request) -> int:
    answer = client.post(f"{base_url}/chat/completions/input_tokens", json=chat_body(request, stream=False))
    answer.raise_for_status()
    return int(answer.json()["input_tokens"])


def completion(client: httpx.Client, base_url: str, request: Request) -> dict[str, Any]:
    body = chat_body(request, stream=False)
    body["max_tokens"] = 1
    answer = client.post(f"{base_url}/chat/completions", json=body)
    answer.raise_for_status()
    data: dict[str, Any] = answer.json()
    return data


def conversation(build: Callable[..., Request]) -> list[Request]:
    """Three turns as the agent sends them: question, a Read call and its result, a follow-up."""
    history = [Message.user("What does wordfreq/stopwords.py contain?")]
    requests = [build(*history)]
    call = ToolUse("textcall_1", "Read", {"file_path": "wordfreq/stopwords.py"})
    history += [
        Message("assistant", (call,)),
        Message("user", (ToolResult("textcall_1", "1\tSTOPWORDS = frozenset(...)\n"),)),
    ]
    requests.append(build(*history))
    history += [Message.assistant("A frozenset of English stop words."), Message.user("How many are there?")]
    requests.append(build(*history))
    return requests


def test_props_and_models_report_the_4096_window(client: httpx.Client, real_server_url: str) -> None:
    props = client.get(f"{real_server_url}/props").json()
    assert props["default_generation_settings"]["n_ctx"] == WINDOW
    # -np 1: one slot holds the whole window (the default splits it while advertising it whole).
    assert props["total_slots"] == 1
    models = client.get(f"{real_server_url}/v1/models").json()
    assert models["data"][0]["meta"]["n_ctx"] == WINDOW


def test_exact_count_equals_prompt_tokens_on_every_turn(
    client: httpx.Client, real_base_url: str, demo_request: Callable[..., Request]
) -> None:
    for request in conversation(demo_request):
        counted = exact_count(client, real_base_url, request)
        assert counted > 0
        assert counted == completion(client, real_base_url, request)["usage"]["prompt_tokens"]


def test_streaming_adapter_usage_equals_the_exact_count(
    client: httpx.Client, real_base_url: str, real_model: str, demo_request: Callable[..., Request]
) -> None:
    request = demo_request(Message.user("List the Python files of this project."), max_tokens=8)
    counted = exact_count(client, real_base_url, request)
    with OpenAICompatProvider(real_base_url, real_model) as provider:
        # Twice: the second answer reuses the server's prompt cache and reports the cached part apart.
        for _ in range(2):
            ends = [e for e in provider.stream(request) if isinstance(e, MessageEnd)]
            assert len(ends) == 1
            assert ends[0].usage.input_tokens + ends[0].usage.cache_read_tokens == counted
            assert ends[0].usage.output_tokens > 0
            assert ends[0].stop_reason in ("end_turn", "max_tokens", "tool_use")


def over_window(build: Callable[..., Request]) -> Request:
    """A conversation whose tool result alone is far larger than the window."""
    big = "\n".join(f"{n}\tdef function_{n}(value): return value * {n}  # padding" for n in range(1, 900))
    call = ToolUse("textcall_1", "Read", {"file_path": "big.py"})
    return build(
        Message.user("Summarize big.py."),
        Message("assistant", (TextBlock("Reading it."), call)),
        Message("user", (ToolResult("textcall_1", big),)),
    )


def test_over_window_is_a_400_that_maps_to_context_overflow(
    client: httpx.Client, real_base_url: str, demo_request: Callable[..., Request]
) -> None:
    request = over_window(demo_request)
    answer = client.post(f"{real_base_url}/chat/completions", json=chat_body(request, stream=False))
    assert answer.status_code == 400
    assert answer.json()["error"]["type"] == "exceed_context_size_error"
    error = map_overflow(answer.status_code, answer.text)
    assert isinstance(error, ContextOverflowError)
    assert error.n_ctx == WINDOW
    assert error.n_prompt is not None and error.n_prompt > WINDOW
    # The exact counter agrees with the number in the refusal.
    assert exact_count(client, real_base_url, request) == error.n_prompt


def test_streaming_adapter_raises_context_overflow_and_the_server_survives(
    client: httpx.Client,
    real_base_url: str,
    real_server_url: str,
    real_model: str,
    demo_request: Callable[..., Request],
) -> None:
    with OpenAICompatProvider(real_base_url, real_model) as provider:
        with pytest.raises(ContextOverflowError) as caught:
            list(provider.stream(over_window(demo_request)))
        assert caught.value.n_ctx == WINDOW
        assert "4096" in str(caught.value)
        # Never a crash: the next request that fits is answered normally.
        small = demo_request(Message.user("Say hi."), max_tokens=4)
        assert any(isinstance(e, MessageEnd) for e in provider.stream(small))
    assert client.get(f"{real_server_url}/health").status_code == 200
