"""`aforo serve` under a flood of clients that send half a header and wait (issue 39, D7), at the usual
limit of 1 024 descriptors (soft and hard, so there is none to raise).

`FLOOD` clients connect and send half a request's headers; then one client sends a whole request. Printed:
whether and how fast that client was answered, how many descriptors the gateway holds, and how many of
the hanging clients it holds and how many it closed (each new one takes the place of the one that has
waited longest). Before the fix the gateway accepted connections until it had no descriptor left, and the
client was never answered. Target: the client answered, and the gateway holding no more than its cap
(`connection_cap`) plus its own descriptors.
"""

from __future__ import annotations

import os
import resource
import socket
import subprocess
import sys
import threading
import time
from typing import Any

import httpx
import uvicorn

from aforo.gateway.connections import connection_cap

FLOOD = int(os.environ.get("BENCH_FLOOD", 1100))
DESCRIPTORS = 1024
OWN = 64  # the gateway's own descriptors (the listening socket, the telemetry, its clients) at most
HALF_A_HEADER = b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Ty"
ASK = {"model": "bench-model", "messages": [{"role": "user", "content": "hi"}]}
LIMITED = (
    "import os, resource, sys; n = int(sys.argv[1]); resource.setrlimit(resource.RLIMIT_NOFILE, (n, n)); "
    "os.execv(sys.argv[2], sys.argv[2:])"
)


def upstream_app() -> Any:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    models = {"object": "list", "data": [{"id": "bench-model", "object": "model"}]}

    async def chat(request: Request) -> JSONResponse:
        await request.body()
        message = {"role": "assistant", "content": "hello"}
        usage = {"prompt_tokens": 9, "completion_tokens": 1, "total_tokens": 10}
        choice = {"index": 0, "message": message, "finish_reason": "stop"}
        return JSONResponse(
            {"object": "chat.completion", "model": "bench-model", "choices": [choice], "usage": usage}
        )

    return Starlette(
        routes=[
            Route("/v1/models", lambda r: JSONResponse(models)),
            Route("/v1/chat/completions", chat, methods=["POST"]),
        ]
    )


def start_upstream() -> tuple[uvicorn.Server, int]:
    sock = socket.create_server(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(upstream_app(), log_level="error", lifespan="off"))
    threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True).start()
    while not server.started:
        time.sleep(0.01)
    return server, int(sock.getsockname()[1])


def still_open(sock: socket.socket) -> bool:
    sock.setblocking(False)
    try:
        sock.recv(65536)
    except BlockingIOError:
        return True
    return False


def main() -> int:
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if hard != resource.RLIM_INFINITY and hard < FLOOD + 100:
        print(f"this process may open {hard} descriptors, too few for {FLOOD} clients: BENCH_FLOOD=N")
        return 1
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    server, port = start_upstream()
    aforo = str(os.path.join(os.path.dirname(sys.executable), "aforo"))
    command = [
        aforo,
        "serve",
        "--port",
        "0",
        "--upstream",
        f"http://127.0.0.1:{port}",
        "--context-window",
        "4096",
    ]
    gateway = subprocess.Popen(
        [sys.executable, "-c", LIMITED, str(DESCRIPTORS), *command],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert gateway.stdout is not None
        url = gateway.stdout.readline().strip()
        gport = int(url.rsplit(":", 1)[1])
        flood = []
        for _ in range(FLOOD):
            sock = socket.create_connection(("127.0.0.1", gport))
            sock.sendall(HALF_A_HEADER)
            flood.append(sock)
        started = time.monotonic()
        try:
            status = httpx.post(f"{url}/v1/chat/completions", json=ASK, timeout=30).status_code
        except httpx.TimeoutException:
            status = 0
        seconds = time.monotonic() - started
        held = len(os.listdir(f"/proc/{gateway.pid}/fd"))
        hanging = sum(1 for sock in flood if still_open(sock))
        for sock in flood:
            sock.close()
    finally:
        gateway.terminate()
        gateway.wait(timeout=30)
        server.should_exit = True
    cap = connection_cap(DESCRIPTORS)
    answered = f"answered {status} in {seconds:.2f} s" if status else "not answered in 30 s"
    print(f"{FLOOD} clients with half a header, at {DESCRIPTORS} descriptors: one more client {answered}")
    print(f"the gateway holds {held} descriptors of {DESCRIPTORS} (its cap: {cap} connections)")
    print(f"of the {FLOOD}: {hanging} still held, {FLOOD - hanging} closed to make room")
    met = status == 200 and held <= cap + OWN
    print("target met" if met else "target missed: the client answered, at most cap + 64 descriptors held")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
