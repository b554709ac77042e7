"""The test harness itself: no test inherits an aforo, server or proxy setting of the shell (the
autouse fixture of conftest.py), and a test server owns its port from the moment it is known."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from support.live_server import LiveServer

# Set only for the child pytest below, where this test checks what the fixture left.
PROBE = "HERMETIC_ENV_PROBE"
INHERITED = {
    "AFORO_SERVER": "vllm",
    "AFORO_TOKENIZER": "none",
    "AFORO_MAX_TURNS": "1",
    "AFORO_A_SETTING_ADDED_LATER": "1",
    "AFORO_HOME": "/nonexistent/home",
    "OLLAMA_HOST": "10.0.0.9:11434",
    "OPENAI_API_BASE": "http://10.0.0.9/v1",
    "https_proxy": "http://10.0.0.9:3128",
    "AFORO_REAL_MODEL": "kept-for-the-real-suite",
}


def test_every_aforo_server_and_proxy_variable_is_cleared(tmp_path: Path) -> None:
    if os.environ.get(PROBE):
        left = {name: os.environ.get(name) for name in INHERITED}
        assert left.pop("AFORO_HOME") != INHERITED["AFORO_HOME"]
        assert left.pop("AFORO_REAL_MODEL") == INHERITED["AFORO_REAL_MODEL"]
        assert left == dict.fromkeys(left)
        return
    node = f"{Path(__file__).resolve()}::{test_every_aforo_server_and_proxy_variable_is_cleared.__name__}"
    child = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", node],
        env={**os.environ, **INHERITED, PROBE: "1"},
        cwd=Path(__file__).parent.parent,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert child.returncode == 0 and "1 passed" in child.stdout, child.stdout + child.stderr


def test_live_servers_bind_port_0_and_report_the_port_they_got(client: httpx.Client) -> None:
    def named(name: str) -> Starlette:
        async def whoami(request: Request) -> PlainTextResponse:
            return PlainTextResponse(name)

        return Starlette(routes=[Route("/", whoami)])

    with LiveServer(named("one")) as one, LiveServer(named("two")) as two:
        assert one.port > 0 and two.port > 0 and one.port != two.port
        assert [client.get(s.url).text for s in (one, two)] == ["one", "two"]
    # Stopped means released: the port can be bound again.
    with socket.create_server(("127.0.0.1", one.port)):
        pass
