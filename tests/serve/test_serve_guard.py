"""A web page in the user's browser cannot use the gateway (issue 39, D4): a page of another site posting
without a preflight, a site rebound to 127.0.0.1 (DNS rebinding) and a body that is not JSON are refused
before anything goes upstream; this machine's pages and the allowed ones get CORS answers."""

from __future__ import annotations

import json

import httpx
import pytest

from aforo.cli.serve_command import Edge
from aforo.gateway.origins import allowed_origins
from dialects.openai_app import Reply, Script, make_openai_app
from dialects.servers_apps import ollama_app
from serve.gateway_support import gateway
from serve.serve_process import serving
from support.cli import run_cli
from support.live_server import LiveServer

ASK = {"model": "test-model", "messages": [{"role": "user", "content": "hi"}]}
ALLOWED = ("https://chat.example.com", "https://ui.corp.example")
OLLAMA_ASK = {"model": "qwen2.5-coder:0.5b", "messages": [{"role": "user", "content": "hi"}], "stream": False}


def openai_upstream(answers: int = 1) -> tuple[Script, object]:
    script = Script(*[Reply(text="hello", prompt_tokens=9)] * answers)
    return script, make_openai_app(script, models={"test-model": None})


def test_a_page_of_another_site_posting_text_plain_without_a_preflight_is_refused() -> None:
    """What `fetch(url, {method: "POST", body: JSON.stringify(ask)})` sends from https://evil.example: a
    simple request (text/plain), which the browser sends without asking first."""
    script, upstream = openai_upstream()
    browser = {"Origin": "https://evil.example", "Content-Type": "text/plain;charset=UTF-8"}
    with gateway(upstream, window=4096) as (url, _):
        resp = httpx.post(f"{url}/v1/chat/completions", content=json.dumps(ASK), headers=browser)
        models = httpx.get(f"{url}/v1/models", headers={"Origin": "https://evil.example"})
    assert resp.status_code == 403
    message = resp.json()["error"]["message"]
    assert "'https://evil.example' are refused" in message
    assert "--allow-origin ORIGIN (or AFORO_ALLOW_ORIGINS)" in message
    assert models.status_code == 403  # the catalog too: the page learns nothing
    assert script.bodies == []  # nothing went upstream


def test_an_ollama_client_page_of_another_site_is_refused_on_every_endpoint() -> None:
    with gateway(ollama_app(), window=4096) as (url, _):
        chat = httpx.post(
            f"{url}/api/chat",
            content=json.dumps(OLLAMA_ASK),
            headers={"Origin": "http://evil.example:8080", "Content-Type": "text/plain"},
        )
        tags = httpx.get(f"{url}/api/tags", headers={"Origin": "http://evil.example:8080"})
        show = httpx.post(f"{url}/api/show", json={"model": "qwen2.5-coder:0.5b"}, headers={"Origin": "null"})
    assert chat.status_code == 403
    assert "http://evil.example:8080" in chat.json()["error"]  # Ollama's shape: a string
    assert tags.status_code == 403
    assert show.status_code == 403  # a sandboxed frame or a file has the origin `null`: not this machine


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/v1/models", "/api/tags"])
def test_a_site_rebound_to_127_0_0_1_is_refused_by_its_host_name(path: str) -> None:
    """DNS rebinding: attacker.example first resolved to the attacker's server, which served the page, then
    to 127.0.0.1. The page's requests are then same-origin: only their Host shows the attacker's name."""
    script, upstream = openai_upstream()
    with gateway(upstream, window=4096) as (url, _):
        port = url.rsplit(":", 1)[1]
        rebound = {"Host": f"attacker.example:{port}", "Origin": f"http://attacker.example:{port}"}
        if path.endswith("completions"):
            resp = httpx.post(f"{url}{path}", json=ASK, headers=rebound)
        else:
            resp = httpx.get(f"{url}{path}", headers=rebound)
    assert resp.status_code == 403
    body = resp.json()["error"]
    message = body["message"] if isinstance(body, dict) else body
    assert f"Host 'attacker.example:{port}' is not a name of this gateway" in message
    assert "DNS rebinding" in message
    assert script.bodies == []


@pytest.mark.parametrize(
    "kind", ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"]
)
def test_a_body_is_taken_as_json_only_when_it_says_so(kind: str) -> None:
    """The types a page may post without a preflight are refused even without an Origin (a browser that
    sends none, an extension that strips it): 415, saying what to send."""
    script, upstream = openai_upstream()
    with gateway(upstream, window=4096) as (url, _):
        resp = httpx.post(
            f"{url}/v1/chat/completions", content=json.dumps(ASK), headers={"Content-Type": kind}
        )
    assert resp.status_code == 415
    message = resp.json()["error"]["message"]
    assert "the body must be JSON, sent as Content-Type: application/json" in message
    assert "curl: --json" in message
    assert script.bodies == []


@pytest.mark.parametrize("kind", ["application/json", "Application/JSON; charset=utf-8", None])
def test_json_and_clients_that_send_no_type_are_answered(kind: str | None) -> None:
    _, upstream = openai_upstream()
    headers = {"Content-Type": kind} if kind else {}
    with gateway(upstream, window=4096) as (url, _):
        resp = httpx.post(f"{url}/v1/chat/completions", content=json.dumps(ASK).encode(), headers=headers)
    assert resp.status_code == 200, resp.text
    assert resp.json()["choices"][0]["message"]["content"] == "hello"


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1", "[::1]", "app.localhost", "LOCALHOST."])
def test_local_names_of_the_gateway_are_answered(host: str) -> None:
    _, upstream = openai_upstream()
    with gateway(upstream, window=4096) as (url, _):
        port = url.rsplit(":", 1)[1]
        resp = httpx.post(f"{url}/v1/chat/completions", json=ASK, headers={"Host": f"{host}:{port}"})
    assert resp.status_code == 200, resp.text


def test_this_machines_pages_and_allowed_ones_get_cors_answers() -> None:
    """A web UI served on this machine (any port), and one the user allowed, can use the gateway from the
    browser: the preflight is answered, the answer and the x-aforo-* headers are readable."""
    _, upstream = openai_upstream(answers=3)
    edge = Edge(
        allowed_origins(["https://chat.example.com"], {"AFORO_ALLOW_ORIGINS": "https://*.corp.example"})
    )
    with gateway(upstream, window=4096, edge=edge) as (url, _):
        for origin in ("http://localhost:3000", "https://chat.example.com", "https://ui.corp.example"):
            preflight = httpx.options(
                f"{url}/v1/chat/completions",
                headers={
                    "Origin": origin,
                    "Access-Control-Request-Method": "POST",
                    "Access-Control-Request-Headers": "authorization, content-type",
                },
            )
            assert preflight.status_code == 200, (origin, preflight.text)
            assert preflight.headers["access-control-allow-origin"] == origin
            resp = httpx.post(f"{url}/v1/chat/completions", json=ASK, headers={"Origin": origin})
            assert resp.status_code == 200, (origin, resp.text)
            assert resp.headers["access-control-allow-origin"] == origin
            assert "x-aforo-verdict" in resp.headers["access-control-expose-headers"]
        refused = httpx.options(
            f"{url}/v1/chat/completions",
            headers={
                "Origin": "https://chat.example.com.evil.example",
                "Access-Control-Request-Method": "POST",
            },
        )
    assert refused.status_code == 403
    assert "access-control-allow-origin" not in refused.headers


def test_off_loopback_any_host_name_reaches_the_gateway_and_its_key_is_what_guards_it() -> None:
    """Listening on another address (`--host`), clients name it as they reach it (a LAN address, a host
    name): the Host is not checked there, and the key `--host` requires is what no page has."""
    _, upstream = openai_upstream()
    edge = Edge(allowed_origins((), {}), loopback=False)
    with gateway(upstream, window=4096, edge=edge, key="k") as (url, _):
        named = {"Host": "laptop.lan:11435", "Authorization": "Bearer k"}
        resp = httpx.post(f"{url}/v1/chat/completions", json=ASK, headers=named)
        rebound = httpx.post(f"{url}/v1/chat/completions", json=ASK, headers={"Host": "attacker.example"})
    assert resp.status_code == 200, resp.text
    assert rebound.status_code == 401


def test_the_flag_and_the_environment_allow_pages_as_a_user_starts_it() -> None:
    with (
        LiveServer(openai_upstream(answers=2)[1]) as server,
        serving(
            "--upstream",
            server.url,
            "--context-window",
            "4096",
            "--allow-origin",
            "https://chat.example.com",
            env={"AFORO_ALLOW_ORIGINS": "https://*.corp.example"},
        ) as running,
    ):
        chat = f"{running.url}/v1/chat/completions"
        answered = [httpx.post(chat, json=ASK, headers={"Origin": o}, timeout=30) for o in ALLOWED]
        refused = httpx.post(chat, json=ASK, headers={"Origin": "https://evil.example"}, timeout=30)
    assert [r.status_code for r in answered] == [200, 200]
    assert refused.status_code == 403


def test_an_allowed_origin_that_is_no_origin_stops_the_gateway_before_it_starts() -> None:
    run = run_cli(
        "serve", "--upstream", "http://127.0.0.1:9", "--allow-origin", "https://chat.example.com/app"
    )
    assert run.code == 2
    assert "--allow-origin: 'https://chat.example.com/app' is not an origin" in run.err
