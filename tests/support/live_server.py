"""Run a small ASGI app on a real 127.0.0.1 socket inside a test (uvicorn in a thread).

Provider adapters are tested against real HTTP, never mocked clients. Use:

    with LiveServer(app) as server:
        url = server.url          # "http://127.0.0.1:PORT"
"""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

import uvicorn


def free_port() -> int:
    """A port nothing listens on, for tests of a refused connection. Never start a server on it: it is
    released before it is returned, so another process may take it; LiveServer binds port 0 instead."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class LiveServer:
    """`port` 0 (the default) lets the kernel pick a free port; `.port` is the one the server got."""

    def __init__(self, app: Any, port: int = 0, **settings: Any) -> None:
        """`settings`: more of uvicorn's (`aforo.gateway.connections.server_settings()`, say)."""
        self.port = port
        config = uvicorn.Config(
            app, host="127.0.0.1", port=port, log_level="error", lifespan="off", **settings
        )
        self._server = uvicorn.Server(config)
        self._sock: socket.socket | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> LiveServer:
        # Bound here and handed to uvicorn, so the port is ours from the moment it is known: no window
        # in which another test's server could take it.
        self._sock = socket.create_server(("127.0.0.1", self.port))
        self.port = int(self._sock.getsockname()[1])
        thread = threading.Thread(target=self._server.run, kwargs={"sockets": [self._sock]}, daemon=True)
        self._thread = thread
        thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline or not thread.is_alive():
                self.__exit__()
                raise RuntimeError("test server did not start")
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)
        if self._sock is not None:
            self._sock.close()  # uvicorn closes it on shutdown; again is harmless, and covers a failed start
