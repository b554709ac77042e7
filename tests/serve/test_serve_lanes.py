"""The lanes the gateway opens, one per model a client names: more models than `serve_models` over a
gateway's life are served, the least recently used lane freed (issue 39 D10), and a model whose lane
opens against a slow server holds up no request for another model (D11)."""

from __future__ import annotations

import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import anyio
import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from aforo.errors import ConfigError
from aforo.gateway import model_lanes
from aforo.limits import Limit
from serve.gateway_support import gateway


class AnyModel:
    """An Ollama that serves any model name. Opening a lane reads `/api/ps` (the loaded model's
    window): `opens` counts those reads, and once `slow` is set they wait until `release` is."""

    def __init__(self) -> None:
        self.slow, self.release = threading.Event(), threading.Event()
        self.opens = 0
        self.app = Starlette(
            routes=[
                Route("/api/version", lambda r: JSONResponse({"version": "0.12.6"})),
                Route("/api/tags", lambda r: JSONResponse({"models": []})),
                Route("/api/ps", self._ps),
                Route("/api/chat", self._chat, methods=["POST"]),
            ]
        )

    async def _ps(self, request: Request) -> Response:
        self.opens += 1
        if self.slow.is_set():
            await anyio.to_thread.run_sync(self.release.wait, 60)
        return JSONResponse({"models": []})

    async def _chat(self, request: Request) -> Response:
        model = (await request.json())["model"]
        done = {"model": model, "message": {"role": "assistant", "content": f"I am {model}"}, "done": True}
        done |= {"done_reason": "stop", "prompt_eval_count": 12, "eval_count": 3}
        return StreamingResponse(iter([json.dumps(done) + "\n"]), media_type="application/x-ndjson")


def ask(url: str, model: str, timeout: float = 30) -> httpx.Response:
    body = {"model": model, "messages": [{"role": "user", "content": "who are you?"}], "stream": False}
    return httpx.post(f"{url}/api/chat", json=body, timeout=timeout)


def test_more_models_than_serve_models_are_all_served_and_an_old_one_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(model_lanes, "SERVE_MODELS", Limit("serve_models", 4, "models", "x"))
    upstream = AnyModel()
    models = [f"made-up-{i}" for i in range(6)]
    with gateway(upstream.app, server="ollama", window=4096) as (url, _):
        answers = [ask(url, model) for model in models]
        opens = upstream.opens
        newest = ask(url, models[-1])
        assert upstream.opens == opens  # the newest model's lane is still open
        oldest = ask(url, models[0])
        assert upstream.opens > opens  # the oldest one's was freed for a newer model: opened again
    assert [a.status_code for a in answers] == [200] * len(models), answers[-1].text
    assert answers[-1].json()["message"]["content"] == f"I am {models[-1]}"
    for model, answer in ((models[-1], newest), (models[0], oldest)):
        assert answer.status_code == 200 and answer.json()["message"]["content"] == f"I am {model}"


def test_a_lane_opening_against_a_slow_server_holds_up_no_other_model() -> None:
    upstream = AnyModel()
    with gateway(upstream.app, server="ollama", window=4096) as (url, _), ThreadPoolExecutor(1) as pool:
        assert ask(url, "open-model").status_code == 200
        upstream.slow.set()
        opens = upstream.opens
        slow = pool.submit(ask, url, "slow-model", 60)
        while upstream.opens == opens:  # the slow model's lane is opening
            time.sleep(0.01)
        try:
            other = ask(url, "open-model", timeout=10)  # never waits for it
            opening = not slow.done()
        finally:
            upstream.release.set()
        assert opening  # the other model was answered while this lane was still opening
        assert other.status_code == 200 and other.json()["message"]["content"] == "I am open-model"
        assert slow.result().status_code == 200


def test_a_lane_that_fails_to_open_fails_every_request_waiting_for_it_and_the_next_one_tries_again() -> None:
    started, go = threading.Event(), threading.Event()
    tries: list[str] = []

    def open_lane(model: str) -> Any:
        tries.append(model)
        started.set()
        go.wait(10)
        raise ConfigError(f"no model {model!r} there")

    lanes = model_lanes.ModelLanes(open_lane)
    with ThreadPoolExecutor(2) as pool:
        first = pool.submit(lanes.take, "gone")
        assert started.wait(10)
        waiting = pool.submit(lanes.take, "gone")
        while lanes._entries["gone"].busy < 2:  # the second request waits for the first one's opening
            time.sleep(0.01)
        go.set()
        for future in (first, waiting):
            with pytest.raises(ConfigError, match="no model 'gone' there"):
                future.result(10)
    assert tries == ["gone"]
    with pytest.raises(ConfigError):
        lanes.take("gone")
    assert tries == ["gone", "gone"]
