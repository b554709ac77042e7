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
    """A port with nothing listening on it, for tests of "no server there" (never to serve on)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class LiveServer:
    def __init__(self, app: Any) -> None:
        # Bound on port 0 and handed to uvicorn still open: the port the OS gave cannot be taken by
        # anyone else between choosing it and serving on it.
        self._socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._socket.bind(("127.0.0.1", 0))
        self.port = int(self._socket.getsockname()[1])
        self._server = uvicorn.Server(uvicorn.Config(app, log_level="error", lifespan="off"))
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._socket]}, daemon=True
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> LiveServer:
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("test server did not start")
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)
        self._socket.close()
