"""Know the server, against the real llama-server of the real-model issue (`-c 4096 -np 1 --jinja`).

Run with AFORO_REAL_BASE_URL (e.g. http://127.0.0.1:PORT/v1) and AFORO_REAL_MODEL set; skipped otherwise.
Asserts protocol facts only: the window the server reports, exact counts equal to its own usage, and
what the probe measures.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import httpx
import pytest

from aforo.messages import Message, Request, SystemPart, TextBlock, ToolResult, ToolSpec, ToolUse
from aforo.server_kinds import KINDS
from aforo.servers.counters import LlamaCppCounter, make_counter
from aforo.servers.detect import detect_server
from aforo.servers.kind import kind_named
from aforo.servers.probe import probe
from aforo.wire.openai_chat import chat_body

BASE_URL = os.environ.get("AFORO_REAL_BASE_URL")
MODEL = os.environ.get("AFORO_REAL_MODEL", "")

pytestmark = [
    pytest.mark.real,
    pytest.mark.skipif(not BASE_URL, reason="AFORO_REAL_BASE_URL is not set: no real llama-server to test"),
]

READ = ToolSpec(
    "Read",
    "Read a text file of the workspace, with line numbers.",
    {"type": "object", "properties": {"file_path": {"type": "string"}}, "required": ["file_path"]},
)


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=300) as c:
        yield c


def turns() -> list[Request]:
    """A conversation growing turn by turn, with a tool call and its result, as the agent sends it."""
    system = (SystemPart("You are a read-only coding assistant. Use the tools to answer."),)
    history: list[Message] = [Message.user("What does main.py print?")]
    requests = [Request(MODEL, system, (READ,), tuple(history), 64)]
    history.append(
        Message("assistant", (TextBlock("Let me read it."), ToolUse("c1", "Read", {"file_path": "main.py"})))
    )
    history.append(Message("user", (ToolResult("c1", "1\tprint('hola, mundo')\n2\t# fin"),)))
    requests.append(Request(MODEL, system, (READ,), tuple(history), 64))
    history.append(Message.assistant("It prints `hola, mundo`."))
    history.append(Message.user("And how many lines does it have?"))
    requests.append(Request(MODEL, system, (READ,), tuple(history), 64))
    return requests


def test_window_from_props_is_4096(client: httpx.Client) -> None:
    info = detect_server(client, str(BASE_URL), kinds=KINDS, model=MODEL)
    assert info.kind == "llama.cpp"
    assert (info.served_window, info.window_detail) == (4096, "llama.cpp /props n_ctx")


def test_exact_counts_equal_the_servers_prompt_tokens(client: httpx.Client) -> None:
    info = detect_server(client, str(BASE_URL), kinds=KINDS, model=MODEL)
    model = MODEL or info.models[0]
    counter = make_counter(kind_named(KINDS, info.kind).counter, client, info.root_url, model, None)
    assert isinstance(counter, LlamaCppCounter) and counter.exact
    for request in turns():
        body = chat_body(request, stream=False)
        body["max_tokens"] = 1
        answer = client.post(f"{info.v1_url}/chat/completions", json=body)
        answer.raise_for_status()
        assert counter.count(request) == answer.json()["usage"]["prompt_tokens"]


def test_probe_reports_4096_and_error(client: httpx.Client) -> None:
    info = detect_server(client, str(BASE_URL), kinds=KINDS, model=MODEL)
    result = probe(client, info, MODEL or (info.models[0] if info.models else ""), progress=lambda _: None)
    assert (result.window, result.overflow) == (4096, "error")
