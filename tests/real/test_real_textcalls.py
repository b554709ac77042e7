"""The real model's tool calls: Qwen2.5-Coder 0.5B writes them as JSON in its text, and aforo reads them.

Asserted: the raw answer to a request with tools carries a call (structured, or written in the text
and recognized by extract_text_tool_calls) naming one of aforo's tools; once run, the call and its
result make a transcript the server accepts for the next turn, counted exactly as before.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from aforo.loop.textcalls import extract_text_tool_calls
from aforo.messages import Message, Request, TextBlock, ToolResult, ToolUse
from aforo.tools.registry import default_registry
from aforo.wire.openai_chat import chat_body

pytestmark = pytest.mark.real

# Worded as the 0.5B model needs: asked "what does this project do?" it mostly answers without a call.
QUESTIONS = (
    "Read wordfreq/counter.py and explain it.",
    "Use the Glob tool to list the Python files.",
)


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=300) as c:
        yield c


def raw_answer(client: httpx.Client, base_url: str, request: Request) -> dict[str, Any]:
    body = chat_body(request, stream=False)
    body["temperature"] = 0  # the recorded outputs and this test see the same greedy answer
    answer = client.post(f"{base_url}/chat/completions", json=body)
    answer.raise_for_status()
    message: dict[str, Any] = answer.json()["choices"][0]["message"]
    return message


@pytest.mark.parametrize("question", QUESTIONS)
def test_the_answer_carries_a_call_aforo_recognizes(
    client: httpx.Client, real_base_url: str, demo_request: Callable[..., Request], question: str
) -> None:
    request = demo_request(Message.user(question))
    tools = {t.name for t in request.tools}
    message = raw_answer(client, real_base_url, request)
    structured = [c["function"]["name"] for c in message.get("tool_calls") or []]
    _rest, written = extract_text_tool_calls(message.get("content") or "", tools)
    assert structured or written, f"no tool call in the answer: {message!r}"
    assert all(name in tools for name in structured + [name for name, _ in written])


def test_a_recognized_call_keeps_the_transcript_well_formed(
    client: httpx.Client, real_base_url: str, demo_request: Callable[..., Request], demo_workspace: Path
) -> None:
    question = Message.user(QUESTIONS[0])
    registry = default_registry(demo_workspace)
    message = raw_answer(client, real_base_url, demo_request(question))
    rest, written = extract_text_tool_calls(message.get("content") or "", registry.names)
    if not written:
        pytest.fail(f"the model wrote no call aforo recognizes: {message!r}")
    # What the agent appends: the text left over, the calls with generated ids, then their results.
    uses = [ToolUse(f"textcall_{n}", name, args) for n, (name, args) in enumerate(written, 1)]
    blocks = ((TextBlock(rest),) if rest else ()) + tuple(uses)
    results = []
    for use in uses:
        output = registry.execute(use.name, use.input)
        results.append(ToolResult(use.id, output.content, is_error=output.is_error))
    follow_up = demo_request(question, Message("assistant", blocks), Message("user", tuple(results)))
    body = chat_body(follow_up, stream=False)
    counted = client.post(f"{real_base_url}/chat/completions/input_tokens", json=body)
    counted.raise_for_status()
    body["max_tokens"] = 1
    answer = client.post(f"{real_base_url}/chat/completions", json=body)
    assert answer.status_code == 200, answer.text
    assert answer.json()["usage"]["prompt_tokens"] == counted.json()["input_tokens"]
