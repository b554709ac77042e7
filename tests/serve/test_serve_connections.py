"""Clients that send half a request and wait (issue 39, D7): their requests time out
(`serve_request_seconds`), and past the connections the descriptor limit allows a client that sends its
request at once is still served while they hang."""

from __future__ import annotations

import resource
import socket
from pathlib import Path

import httpx
import pytest

from aforo.gateway.connections import connection_cap, server_settings
from dialects.openai_app import Reply, Script, make_openai_app
from serve.gateway_support import gateway
from serve.serve_process import serving
from support.live_server import LiveServer

ASK = {"model": "test-model", "messages": [{"role": "user", "content": "hi"}]}
HALF_A_HEADER = b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Ty"
ONE_BYTE_OF_BODY = (
    b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
    b"Content-Length: 100\r\n\r\n{"
)


def upstream(answers: int) -> object:
    return make_openai_app(
        Script(*[Reply(text="hello", prompt_tokens=9)] * answers), models={"test-model": None}
    )


def hang(port: int, sent: bytes) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port))
    sock.sendall(sent)
    return sock


def until_closed(sock: socket.socket, timeout: float) -> bytes:
    """What the server wrote before it closed the connection; socket.timeout if it did not in time."""
    sock.settimeout(timeout)
    got = b""
    while piece := sock.recv(65536):
        got += piece
    return got


def test_a_request_not_whole_in_time_is_answered_408_and_closed(capfd: pytest.CaptureFixture[str]) -> None:
    settings = server_settings(request_seconds=1, connections=64)
    with gateway(upstream(1), window=4096, settings=settings) as (url, _):
        port = int(url.rsplit(":", 1)[1])
        slow = [hang(port, HALF_A_HEADER) for _ in range(3)] + [
            hang(port, ONE_BYTE_OF_BODY) for _ in range(3)
        ]
        # Far longer than the deadline: on a server without one, they are still open then.
        answers = [until_closed(sock, timeout=30) for sock in slow]
        after = httpx.post(f"{url}/v1/chat/completions", json=ASK)
    for answer in answers:
        assert answer.startswith(b"HTTP/1.1 408 Request Timeout\r\n"), answer
        assert answer.endswith(
            b"the request was not whole in time (1 seconds, serve_request_seconds): send it at once"
        )
    assert after.status_code == 200, after.text
    # The app, left waiting for a body that never came, saw the connection close: no traceback for it.
    assert "Traceback" not in capfd.readouterr().err


def test_past_the_descriptor_limit_a_client_sending_its_request_at_once_is_served() -> None:
    """At a descriptor limit of 512 (soft and hard: none to raise), 600 clients hang with half a header:
    more than the process could hold. The gateway holds at most `connection_cap(512)` of them, each new
    one taking the place of the one that waited longest, so a client that sends its request whole is
    answered, then another."""
    descriptors = 512
    with (
        LiveServer(upstream(2)) as server,
        serving(
            "--upstream", server.url, "--context-window", "4096", descriptors=(descriptors, descriptors)
        ) as gateway_,
    ):
        port = int(gateway_.url.rsplit(":", 1)[1])
        hanging = [hang(port, HALF_A_HEADER) for _ in range(600)]
        during = httpx.post(f"{gateway_.url}/v1/chat/completions", json=ASK, timeout=30)
        still_open = sum(1 for sock in hanging if _open(sock))
        for sock in hanging:
            sock.close()
        after = httpx.post(f"{gateway_.url}/v1/chat/completions", json=ASK, timeout=30)
    assert during.status_code == 200, during.text
    assert after.status_code == 200, after.text
    # The others still hang, as many as the cap allows (the served client's connection took one place).
    assert connection_cap(descriptors) - 2 <= still_open <= connection_cap(descriptors)
    assert "Traceback" not in gateway_.err


def _open(sock: socket.socket) -> bool:
    """The server has not closed it (nothing to read, not even the end)."""
    sock.setblocking(False)
    try:
        sock.recv(65536)
    except BlockingIOError:
        return True
    return False


def test_the_soft_descriptor_limit_is_raised_to_the_hard_one() -> None:
    """The usual soft limit of 1 024 is no limit of the system's: the gateway raises it, as Go's servers
    (Ollama's) do, and only a low hard limit makes the cap count."""
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    with (
        LiveServer(upstream(0)) as server,
        serving("--upstream", server.url, "--context-window", "4096", descriptors=(256, hard)) as gateway_,
    ):
        limits = Path(f"/proc/{gateway_.proc.pid}/limits").read_text()
    [line] = [line for line in limits.splitlines() if line.startswith("Max open files")]
    assert line.split()[3:5] == [str(hard), str(hard)]


def test_the_cap_leaves_room_for_each_request_upstream_and_the_process_own() -> None:
    """Half of what is left after 64 for the process and three bursts of 64 accepted connections."""
    assert connection_cap(1024) == 384
    assert connection_cap(512) == 128
    assert connection_cap(1_048_576) == 512  # serve_connections
    assert connection_cap(64) == 1
