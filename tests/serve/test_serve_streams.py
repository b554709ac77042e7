"""Streams through the gateway: a loud server's answer passes live, and a client that goes away
mid-stream stops the upstream request."""

from __future__ import annotations

import asyncio
import json
import threading
import time

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from aforo.limits import Limit
from aforo.wire import lines as wire_lines
from serve.gateway_support import gateway

MODEL = "qwen2.5-coder:0.5b"
ASK = {"model": MODEL, "messages": [{"role": "user", "content": "Count to a thousand."}]}


class SlowOllama:
    """An Ollama that streams one word every `pause` seconds for `words` words, and notes whether its
    stream ran to the end or was stopped by the other side going away."""

    def __init__(self, words: int, pause: float) -> None:
        self.words, self.pause = words, pause
        self.sent = 0
        self.stopped = threading.Event()
        self.finished = threading.Event()
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
        return StreamingResponse(self._lines(), media_type="application/x-ndjson")

    async def _lines(self):
        try:
            for i in range(self.words):
                line = {"model": MODEL, "message": {"role": "assistant", "content": f"{i} "}, "done": False}
                yield json.dumps(line) + "\n"
                self.sent += 1
                await asyncio.sleep(self.pause)
            done = {"model": MODEL, "message": {"role": "assistant", "content": ""}, "done": True}
            yield (
                json.dumps({**done, "done_reason": "stop", "prompt_eval_count": 20, "eval_count": self.words})
                + "\n"
            )
            self.finished.set()
        except BaseException:
            self.stopped.set()
            raise


def test_a_loud_servers_stream_passes_live_before_it_ends() -> None:
    upstream = SlowOllama(words=6, pause=0.3)
    with (
        gateway(upstream.app, server="ollama", window=4096) as (url, _),
        httpx.stream("POST", f"{url}/api/chat", json=ASK) as resp,
    ):
        assert resp.headers["x-aforo-verdict"] == "admitted"
        lines = resp.iter_lines()
        first = next(lines)
        seen_while_streaming = upstream.sent
        rest = list(lines)
    assert json.loads(first)["message"]["content"] == "0 "
    assert seen_while_streaming < upstream.words  # the first word came before the server's last
    assert json.loads(rest[-1])["done"] is True
    assert upstream.finished.is_set()


def test_a_client_that_goes_away_mid_stream_stops_the_upstream_request() -> None:
    upstream = SlowOllama(words=200, pause=0.05)
    with gateway(upstream.app, server="ollama", window=4096) as (url, _):
        with httpx.stream("POST", f"{url}/api/chat", json=ASK) as resp:
            next(resp.iter_lines())
        # The client hung up after one line; the upstream stream must stop soon, far from its end.
        assert upstream.stopped.wait(timeout=5)
        words = upstream.sent
        time.sleep(0.3)
        assert upstream.sent == words  # nothing more was produced after it stopped
    assert not upstream.finished.is_set()
    assert words < upstream.words


def test_a_live_stream_that_breaks_a_limit_ends_with_an_error_the_client_reads(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(wire_lines, "STREAM_LINE_BYTES", Limit("stream_line_bytes", 150, "bytes", "x"))
    upstream = SlowOllama(words=3, pause=0.0)  # its last line, with the counts, is longer than 150 bytes
    with gateway(upstream.app, server="ollama", window=4096) as (url, _):
        resp = httpx.post(f"{url}/api/chat", json=ASK)
    lines = [json.loads(line) for line in resp.text.splitlines() if line]
    assert resp.status_code == 200  # committed before the line arrived
    assert [line["message"]["content"] for line in lines[:-1]] == ["0 ", "1 ", "2 "]
    assert "stream_line_bytes" in lines[-1]["error"]
