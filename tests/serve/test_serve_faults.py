"""Faults at the gateway: the named limits bound what clients send and what upstream answers, and a
client that gives up before a held answer is ready stops the upstream request too."""

from __future__ import annotations

import asyncio
import json
import threading

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from aforo.gateway import inbound, upstream_leg
from aforo.limits import Limit
from aforo.wire import lines as wire_lines
from dialects.openai_app import Reply, Script, make_openai_app
from serve.gateway_support import gateway

ASK = {"model": "test-model", "messages": [{"role": "user", "content": "hi"}]}


class SlowOpenAI:
    """An OpenAI-compatible server (no window, no tokenizer: a kind that may truncate silently) that
    streams `pieces` pieces `pause` seconds apart, each `size` characters long."""

    def __init__(self, pieces: int, pause: float, size: int = 3) -> None:
        self.pieces, self.pause, self.size = pieces, pause, size
        self.stopped, self.finished = threading.Event(), threading.Event()
        models = {"object": "list", "data": [{"id": "test-model", "object": "model"}]}
        self.app = Starlette(
            routes=[
                Route("/v1/models", lambda r: JSONResponse(models)),
                Route("/v1/chat/completions", self._chat, methods=["POST"]),
            ]
        )

    async def _chat(self, request: Request) -> Response:
        await request.body()
        return StreamingResponse(self._events(), media_type="text/event-stream")

    async def _events(self):
        try:
            for _ in range(self.pieces):
                chunk = {
                    "choices": [{"index": 0, "delta": {"content": "x" * self.size}, "finish_reason": None}]
                }
                yield f"data: {json.dumps(chunk)}\n\n"
                await asyncio.sleep(self.pause)
            usage = {"prompt_tokens": 9, "completion_tokens": self.pieces}
            yield f"data: {json.dumps({'choices': [], 'usage': usage})}\n\ndata: [DONE]\n\n"
            self.finished.set()
        except BaseException:
            self.stopped.set()
            raise


def test_a_client_that_gives_up_on_a_held_answer_stops_the_upstream_request() -> None:
    upstream = SlowOpenAI(pieces=400, pause=0.02)
    with gateway(upstream.app, server="openai", window=4096) as (url, _):
        with pytest.raises(httpx.ReadTimeout):
            httpx.post(f"{url}/v1/chat/completions", json={**ASK, "stream": True}, timeout=0.5)
        assert upstream.stopped.wait(timeout=5)
    assert not upstream.finished.is_set()


def test_a_request_body_past_its_limit_is_refused_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(inbound, "SERVE_REQUEST_BYTES", Limit("serve_request_bytes", 1000, "bytes", "x"))
    script = Script(Reply(text="never"))
    body = {"model": "test-model", "messages": [{"role": "user", "content": "y" * 2000}]}
    with gateway(make_openai_app(script, models={"test-model": None}), window=4096) as (url, _):
        resp = httpx.post(f"{url}/v1/chat/completions", json=body)
    assert resp.status_code == 413
    assert "serve_request_bytes" in resp.json()["error"]["message"]
    assert script.bodies == []


def test_an_upstream_line_past_its_limit_fails_the_request_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(wire_lines, "STREAM_LINE_BYTES", Limit("stream_line_bytes", 500, "bytes", "x"))
    upstream = SlowOpenAI(pieces=2, pause=0.0, size=2000)
    with gateway(upstream.app, server="openai", window=4096) as (url, _):
        resp = httpx.post(f"{url}/v1/chat/completions", json={**ASK, "stream": True})
    assert resp.status_code == 502
    assert "stream_line_bytes" in resp.json()["error"]["message"]
    assert "x" * 100 not in resp.text  # nothing of the answer went through


def test_an_answer_past_its_time_limit_fails_the_request_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(upstream_leg, "ANSWER_TIMEOUT", Limit("answer_timeout", 0.3, "seconds", "x"))
    upstream = SlowOpenAI(pieces=40, pause=0.05)
    with gateway(upstream.app, server="openai", window=4096) as (url, _):
        resp = httpx.post(f"{url}/v1/chat/completions", json={**ASK, "stream": True})
        assert upstream.stopped.wait(timeout=5)  # and the upstream request ended with it
    assert resp.status_code == 502
    assert "answer_timeout" in resp.json()["error"]["message"]
