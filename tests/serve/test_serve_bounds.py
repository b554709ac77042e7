"""What one client can make the gateway hold: an answer is capped whatever `max_tokens` it asks (issue
39 D5), and a message that is not Unicode is the client's error, not the gateway's (D12)."""

from __future__ import annotations

import asyncio
import gzip
import json
import tracemalloc

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from aforo.limits import SERVE_ANSWER_BYTES
from dialects.openai_app import Reply, Script, make_openai_app
from serve.gateway_support import gateway

MODEL = "qwen2.5-coder:0.5b"
PIECE = "x" * 60_000  # a long piece per line: the cap is reached in a few hundred lines
CAP = int(SERVE_ANSWER_BYTES.value)


class Endless:
    """A server that streams forever (Ollama's NDJSON, or OpenAI's SSE with `--server openai`), or
    `lines` pieces and then its `done` line."""

    def __init__(self, lines: int | None = None) -> None:
        self.lines = lines
        self.app = Starlette(
            routes=[
                Route("/api/version", lambda r: JSONResponse({"version": "0.12.6"})),
                Route("/api/tags", lambda r: JSONResponse({"models": [{"name": MODEL, "model": MODEL}]})),
                Route("/api/ps", lambda r: JSONResponse({"models": []})),
                Route("/api/chat", self._ollama, methods=["POST"]),
                Route("/v1/models", lambda r: JSONResponse({"data": [{"id": MODEL, "object": "model"}]})),
                Route("/v1/chat/completions", self._openai, methods=["POST"]),
            ]
        )

    async def _ollama(self, request: Request) -> Response:
        await request.body()
        line = json.dumps({"model": MODEL, "message": {"role": "assistant", "content": PIECE}, "done": False})
        if self.lines is None:
            return StreamingResponse(_forever(line + "\n"), media_type="application/x-ndjson")
        done = {"model": MODEL, "message": {"role": "assistant", "content": ""}, "done": True}
        done |= {"done_reason": "stop", "prompt_eval_count": 9, "eval_count": self.lines}
        lines = [line + "\n"] * self.lines + [json.dumps(done) + "\n"]
        return StreamingResponse(iter(lines), media_type="application/x-ndjson")

    async def _openai(self, request: Request) -> Response:
        await request.body()
        choice = {"index": 0, "delta": {"content": PIECE}, "finish_reason": None}
        chunk = {"model": MODEL, "choices": [choice]}
        return StreamingResponse(_forever(f"data: {json.dumps(chunk)}\n\n"), media_type="text/event-stream")


async def _forever(text: str):
    while True:
        yield text
        await asyncio.sleep(0)


def test_a_live_stream_ends_at_the_answer_cap_whatever_the_client_asks() -> None:
    ask = {"model": MODEL, "messages": [{"role": "user", "content": "go"}], "options": {"num_predict": 10**7}}
    received, last = 0, b""
    with (
        gateway(Endless().app, server="ollama", window=4096) as (url, _),
        httpx.stream("POST", f"{url}/api/chat", json=ask, timeout=60) as resp,
    ):
        for line in resp.iter_lines():
            received += len(line)
            last = line.encode()
            assert received < 2 * CAP, "the gateway passed on twice its cap and goes on"
    error = json.loads(last)["error"]
    assert "serve_answer_bytes" in error and "10,000,000" in error
    assert CAP // 2 < received < 2 * CAP


def test_a_live_stream_keeps_none_of_the_lines_it_passed() -> None:
    lines = CAP // 2 // len(PIECE)  # half the cap: the whole answer passes
    ask = {"model": MODEL, "messages": [{"role": "user", "content": "go"}]}
    with gateway(Endless(lines).app, server="ollama", window=4096) as (url, _):
        tracemalloc.start()
        try:
            with httpx.stream("POST", f"{url}/api/chat", json=ask, timeout=60) as resp:
                received = sum(1 for line in resp.iter_lines() if line)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert received == lines + 1
    # Every process here is traced (upstream, gateway, client): what they hold at once, not the answer.
    assert peak < lines * len(PIECE) // 2, (
        f"{peak:,} bytes at the peak for a {lines * len(PIECE):,}-byte answer"
    )


def test_a_held_answer_ends_at_the_cap_with_an_error_naming_it() -> None:
    ask = {"model": MODEL, "messages": [{"role": "user", "content": "go"}], "max_tokens": 10**7}
    with gateway(Endless().app, server="openai", window=4096) as (url, _):
        resp = httpx.post(f"{url}/v1/chat/completions", json={**ask, "stream": True}, timeout=60)
    assert resp.status_code == 502
    assert "serve_answer_bytes" in resp.json()["error"]["message"]


@pytest.mark.parametrize("api", ["openai", "ollama"])
def test_a_lone_surrogate_in_a_message_is_a_400_naming_it(
    api: str, capfd: pytest.CaptureFixture[str]
) -> None:
    script = Script(Reply(text="never"))
    path = "/v1/chat/completions" if api == "openai" else "/api/chat"
    raw = b'{"model": "test-model", "stream": false, "messages": [{"role": "user", "content": "a\\ud800b"}]}'
    with gateway(make_openai_app(script), server="openai", window=4096) as (url, _):
        resp = httpx.post(f"{url}{path}", content=raw, headers={"content-type": "application/json"})
    assert resp.status_code == 400
    body = resp.json()
    message = body["error"]["message"] if api == "openai" else body["error"]
    assert "surrogate" in message and "\\ud800" in message and "messages[0]" in message
    assert script.bodies == []
    assert "Traceback" not in capfd.readouterr().err


class Gzipped:
    """An Ollama whose chat answer comes gzip-encoded (as a proxy in front of it may send it)."""

    def __init__(self, lines: int) -> None:
        self.lines = lines
        self.app = Starlette(
            routes=[
                Route("/api/version", lambda r: JSONResponse({"version": "0.12.6"})),
                Route("/api/tags", lambda r: JSONResponse({"models": [{"name": MODEL, "model": MODEL}]})),
                Route("/api/ps", lambda r: JSONResponse({"models": []})),
                Route("/api/chat", self._chat, methods=["POST"]),
            ]
        )

    async def _chat(self, request: Request) -> Response:
        await request.body()
        piece = {"model": MODEL, "message": {"role": "assistant", "content": PIECE}, "done": False}
        done = {"model": MODEL, "message": {"role": "assistant", "content": ""}, "done": True}
        done |= {"done_reason": "stop", "prompt_eval_count": 9, "eval_count": 1}
        body = gzip.compress((f"{json.dumps(piece)}\n" * self.lines + f"{json.dumps(done)}\n").encode())
        headers = {"content-encoding": "gzip"}
        return Response(body, headers=headers, media_type="application/x-ndjson")


def test_an_encoded_answer_is_decoded_and_every_inflated_byte_counted() -> None:
    ask = {"model": MODEL, "messages": [{"role": "user", "content": "go"}]}
    with gateway(Gzipped(2).app, server="ollama", window=4096) as (url, _):
        resp = httpx.post(f"{url}/api/chat", json=ask, timeout=60)
    lines = [json.loads(line) for line in resp.text.splitlines() if line]
    assert [line["message"]["content"] for line in lines] == [PIECE, PIECE, ""] and lines[-1]["done"]
    # A small body that inflates past what the answer may take (its max_tokens' bytes) ends there, named.
    with gateway(Gzipped(2 * CAP // len(PIECE)).app, server="ollama", window=4096) as (url, _):
        resp = httpx.post(f"{url}/api/chat", json=ask, timeout=60)
    assert len(resp.content) < CAP
    assert "the answer_bytes (1,024 bytes per token" in json.loads(resp.text.splitlines()[-1])["error"]
