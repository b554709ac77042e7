"""`--upstream http://user:PASSWORD@host` (issue 39, D6): the password goes upstream as Basic auth, and
when the upstream fails it reaches no client, no line on stderr and nothing on disk."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import httpx
from starlette.responses import JSONResponse

from aforo.store.telemetry import Telemetry
from dialects.openai_app import Reply, Script, make_openai_app
from serve.gateway_support import gateway
from serve.serve_process import serving
from support.live_server import LiveServer

SECRET = "Pa55-w0rd-7f3c91"
ASK = {"model": "test-model", "messages": [{"role": "user", "content": "hi"}]}


def basic_only(app: Any, user: str, password: str) -> Any:
    """`app` behind HTTP Basic auth, as a reverse proxy in front of a model server puts it."""
    expected = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()

    async def guarded(scope: Any, receive: Any, send: Any) -> None:
        if dict(scope["headers"]).get(b"authorization", b"").decode() != expected:
            await JSONResponse({"error": "unauthorized"}, 401)(scope, receive, send)
            return
        await app(scope, receive, send)

    return guarded


def upstream(answers: int = 1) -> LiveServer:
    script = Script(*[Reply(text="hello", prompt_tokens=9)] * answers)
    return LiveServer(basic_only(make_openai_app(script, models={"test-model": None}), "user", SECRET))


def files_holding(root: Path, secret: str) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and secret.encode() in p.read_bytes()]


def test_the_password_is_sent_as_basic_auth_and_no_failure_shows_it(hermetic_env: Path) -> None:
    with (
        upstream() as server,
        gateway(f"http://user:{SECRET}@{server.url[7:]}", window=4096) as (url, events),
    ):
        answered = httpx.post(f"{url}/v1/chat/completions", json=ASK)
        server.__exit__()  # the upstream goes away
        chat = httpx.post(f"{url}/v1/chat/completions", json=ASK)
        new_model = httpx.post(f"{url}/v1/chat/completions", json={**ASK, "model": "other-model"})
        models = httpx.get(f"{url}/v1/models")
    # It reached the server behind Basic auth: the credentials went in a header.
    assert answered.status_code == 200, answered.text
    assert answered.json()["choices"][0]["message"]["content"] == "hello"
    for failed in (chat, new_model, models):
        assert failed.status_code == 502, failed.text
        assert SECRET not in failed.text
    assert f"127.0.0.1:{server.port}" in models.text  # the failure still says which server
    assert SECRET not in repr(events)
    rows = Telemetry().rows()
    assert next(r["cause"] for r in rows if r["event"] == "run") == "serve clean; asked for test-model"
    assert SECRET not in json.dumps(rows)
    assert files_holding(hermetic_env, SECRET) == []


def test_the_start_line_and_the_log_name_the_server_without_its_password() -> None:
    with (
        upstream() as server,
        serving(
            "--upstream", f"http://user:{SECRET}@127.0.0.1:{server.port}", "--context-window", "4096"
        ) as s,
    ):
        answered = httpx.post(f"{s.url}/v1/chat/completions", json=ASK, timeout=30)
        server.__exit__()
        failed = httpx.get(f"{s.url}/v1/models", timeout=30)
    assert answered.status_code == 200, answered.text
    assert failed.status_code == 502
    assert SECRET not in failed.text
    assert f"openai at http://127.0.0.1:{server.port}; session serve-" in s.err
    assert SECRET not in s.err
