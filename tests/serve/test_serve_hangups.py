"""A client that hangs up leaves the row it deserves: a live stream it read to the last line is judged
as any other (it had its whole answer, even if the gateway had not yet seen the stream end), and a
request it left before that is `abandoned`, not a server's failure."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from aforo.events import Event, Info
from aforo.store.telemetry import Telemetry
from dialects.openai_app import Reply, Script, make_openai_app
from dialects.servers_apps import chat_tokens, llamacpp_app, ollama_app
from serve.gateway_support import gateway

LLAMA = "qwen2.5-coder-0.5b.gguf"
OLLAMA = "qwen2.5-coder:0.5b"
QUESTION = [{"role": "user", "content": "What is the capital of France?"}]


class Lingering:
    """A loud server (llama-server's endpoints, or Ollama's) whose chat streams `words` pieces, then its
    last lines (the usage; OpenAI's `[DONE]`, Ollama's `done` line) `pause` seconds after them, then
    keeps the connection open `linger` seconds more, as a server may after its last line: a client
    that hangs up on the last line does so before the gateway sees the stream end."""

    def __init__(
        self, dialect: str, *, words: int = 3, pause: float = 0.0, linger: float = 10.0, reads: int = 0
    ) -> None:
        self.dialect, self.words, self.pause, self.linger = dialect, words, pause, linger
        self.reads = reads  # when not 0: the prompt tokens it says it read, whatever it was sent
        self.prompts: list[int] = []  # the prompt tokens each chat reported
        self.app: Starlette = llamacpp_app(model=LLAMA) if dialect == "openai" else ollama_app()
        path = "/v1/chat/completions" if dialect == "openai" else "/api/chat"
        self.app.router.routes.insert(0, Route(path, self._chat, methods=["POST"]))

    async def _chat(self, request: Request) -> Response:
        body = await request.json()
        self.prompts.append(self.reads or chat_tokens(body))
        media = "text/event-stream" if self.dialect == "openai" else "application/x-ndjson"
        return StreamingResponse(self._stream(self.prompts[-1]), media_type=media)

    async def _stream(self, prompt: int) -> AsyncIterator[str]:
        for i in range(self.words):
            yield self._piece(f"w{i} ")
        await asyncio.sleep(self.pause)
        yield self._last(prompt)
        await asyncio.sleep(self.linger)

    def _piece(self, text: str) -> str:
        if self.dialect == "openai":
            chunk = {"model": LLAMA, "choices": [{"index": 0, "delta": {"content": text}}]}
            return f"data: {json.dumps(chunk)}\n\n"
        return (
            json.dumps({"model": OLLAMA, "message": {"role": "assistant", "content": text}, "done": False})
            + "\n"
        )

    def _last(self, prompt: int) -> str:
        if self.dialect == "openai":
            stop = {"model": LLAMA, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
            usage = {
                "model": LLAMA,
                "choices": [],
                "usage": {"prompt_tokens": prompt, "completion_tokens": 3},
            }
            return f"data: {json.dumps(stop)}\n\ndata: {json.dumps(usage)}\n\ndata: [DONE]\n\n"
        done = {"model": OLLAMA, "message": {"role": "assistant", "content": ""}, "done": True}
        counts = {"done_reason": "stop", "prompt_eval_count": prompt, "eval_count": 3}
        return json.dumps({**done, **counts}) + "\n"


def served(events: list[Event], timeout: float = 10.0) -> list[str]:
    """The gateway's per-request lines, once there is one (the row of a hung-up request is written
    after the client is gone)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        lines = [str(e.fields["serve"]) for e in events if isinstance(e, Info) and "serve" in e.fields]
        if lines:
            return lines
        time.sleep(0.02)
    return []


def run_rows() -> list[dict[str, Any]]:
    with Telemetry() as telemetry:
        return [r for r in telemetry.rows() if r["event"] == "run"]


def read_until(resp: httpx.Response, last: Callable[[str], bool]) -> list[str]:
    """The lines of a streamed answer up to the first that is `last`, then no more."""
    lines = []
    for line in resp.iter_lines():
        lines.append(line)
        if last(line):
            return lines
    raise AssertionError(f"the stream ended before its last line: {lines}")


def done(line: str) -> bool:
    return line == "data: [DONE]"


def ollama_done(line: str) -> bool:
    return bool(line) and json.loads(line)["done"] is True


def data(line: str) -> bool:
    return line.startswith("data:")


def test_a_client_that_hangs_up_right_after_done_leaves_the_row_of_its_whole_answer() -> None:
    upstream = Lingering("openai")
    body = {"model": LLAMA, "messages": QUESTION, "stream": True}
    with gateway(upstream.app, server="llama.cpp", window=4096) as (url, events):
        started = time.monotonic()
        with httpx.stream("POST", f"{url}/v1/chat/completions", json=body) as resp:
            assert resp.headers["x-aforo-verdict"] == "admitted"
            lines = read_until(resp, done)
        # The client has its whole answer and is gone; upstream has not closed the stream yet.
        assert time.monotonic() - started < upstream.linger
        assert len([line for line in lines if data(line)]) == 5  # 3 pieces, the stop, [DONE]
        assert len(served(events)) == 1
    (row,) = run_rows()
    assert row["cause"] == f"serve admitted; asked for {LLAMA}"  # the old code said `serve failed`
    assert (row["input_tokens"], row["output_tokens"]) == (upstream.prompts[0], 3)
    assert row["model_served"] == LLAMA


def test_an_ollama_client_that_hangs_up_on_the_done_line_leaves_the_row_of_its_whole_answer() -> None:
    upstream = Lingering("ollama")
    body = {"model": OLLAMA, "messages": QUESTION}
    with gateway(upstream.app, server="ollama", window=4096) as (url, events):
        with httpx.stream("POST", f"{url}/api/chat", json=body) as resp:
            lines = read_until(resp, ollama_done)
        assert [json.loads(line)["message"]["content"] for line in lines] == ["w0 ", "w1 ", "w2 ", ""]
        assert len(served(events)) == 1
    (row,) = run_rows()
    assert row["cause"] == f"serve admitted; asked for {OLLAMA}"
    assert row["input_tokens"] == upstream.prompts[0]


def test_an_openai_client_of_ollama_that_hangs_up_right_after_done_leaves_the_row_of_its_answer() -> None:
    # Its request goes to Ollama's native API, the answer comes back as OpenAI's chunks: the `[DONE]`
    # the client read is the gateway's, made of Ollama's `done` line.
    upstream = Lingering("ollama")
    body = {"model": OLLAMA, "messages": QUESTION, "stream": True}
    with gateway(upstream.app, server="ollama", window=4096) as (url, events):
        with httpx.stream("POST", f"{url}/v1/chat/completions", json=body) as resp:
            read_until(resp, done)
        assert len(served(events)) == 1
    (row,) = run_rows()
    assert row["cause"] == f"serve admitted; asked for {OLLAMA}"  # the old code said `serve failed`
    assert row["input_tokens"] == upstream.prompts[0]


def test_a_client_that_hangs_up_on_the_last_line_of_a_truncated_answer_leaves_its_row() -> None:
    # A long conversation the server says it read in 63 tokens (what Ollama reported for oversized
    # prompts): the gateway judges the stream the client took whole, and says so in its row.
    upstream = Lingering("ollama", reads=63)
    notes = [{"role": "user", "content": f"note {i}: " + "lorem ipsum " * 30} for i in range(20)]
    body = {"model": OLLAMA, "messages": [*QUESTION, *notes]}
    with gateway(upstream.app, server="ollama", window=8192) as (url, events):
        with httpx.stream("POST", f"{url}/api/chat", json=body) as resp:
            read_until(resp, ollama_done)
        assert len(served(events)) == 1
    (row,) = run_rows()
    assert row["cause"] == f"serve truncated; asked for {OLLAMA}"  # the old code said `serve failed`
    assert row["input_tokens"] == 63


def test_a_client_that_hangs_up_mid_stream_leaves_an_abandoned_row() -> None:
    upstream = Lingering("openai", pause=10.0, linger=0.0)
    body = {"model": LLAMA, "messages": QUESTION, "stream": True}
    with gateway(upstream.app, server="llama.cpp", window=4096) as (url, events):
        with httpx.stream("POST", f"{url}/v1/chat/completions", json=body) as resp:
            read_until(resp, data)  # the first piece, then the client is gone
        (line,) = served(events)
    assert line.endswith("tokens, abandoned (127.0.0.1 python-httpx/" + httpx.__version__ + ")")
    (row,) = run_rows()
    assert row["cause"] == f"serve abandoned; asked for {LLAMA}"  # the old code said `serve failed`
    assert row["input_tokens"] is None  # no usage came: nothing to bill


def test_a_client_that_gives_up_on_a_held_answer_leaves_an_abandoned_row() -> None:
    # Not loud (`--server openai`): the answer is read whole before the client gets any of it.
    upstream = Lingering("openai", pause=10.0, linger=0.0)
    body = {"model": LLAMA, "messages": QUESTION, "stream": True}
    with gateway(upstream.app, server="openai", window=4096) as (url, events):
        with pytest.raises(httpx.ReadTimeout):
            httpx.post(f"{url}/v1/chat/completions", json=body, timeout=0.5)
        assert len(served(events)) == 1
    (row,) = run_rows()
    assert row["cause"] == f"serve abandoned; asked for {LLAMA}"  # the old code said `serve failed`


def test_a_client_that_gives_up_before_the_servers_headers_leaves_an_abandoned_row() -> None:
    script = Script(Reply(text="late", delay=2.0))
    body = {"model": "test-model", "messages": QUESTION}
    with gateway(make_openai_app(script, models={"test-model": None}), window=4096) as (url, events):
        with pytest.raises(httpx.ReadTimeout):
            httpx.post(f"{url}/v1/chat/completions", json=body, timeout=0.5)
        assert len(served(events)) == 1
    (row,) = run_rows()
    assert row["cause"] == "serve abandoned; asked for test-model"  # the old code said `serve failed`
