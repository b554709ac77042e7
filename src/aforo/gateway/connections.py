"""The gateway's connections: a request arrives whole within `serve_request_seconds`, and at most
`serve_connections` clients are connected at once, well below the descriptors the process may open.

uvicorn's own settings bound a header's size (`h11_max_incomplete_event_size`) and an idle connection's
life between requests (`timeout_keep_alive`), and `server_settings` sets them. What uvicorn lacks: it
reads no timeout into a request (the keep-alive timer starts only after an answer, and a byte received
cancels it), and it takes every connection the kernel hands it (`limit_concurrency` answers 503 past its
number, but holds the connections). So 1 100 clients that send half a header and wait held 1 100
descriptors for ever, and at the usual limit of 1 024 nobody else got in. `EdgeProtocol`, uvicorn's h11
protocol with two additions, closes a request that is not whole in time (408), and lets a connection past
the cap take the place of the one that has waited longest without a whole request: a client that sends
its request at once is served while the others hang.
"""

from __future__ import annotations

import asyncio
import contextlib
import resource
import time
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from aforo.limits import (
    RESERVED_DESCRIPTORS,
    SERVE_CONNECTIONS,
    SERVE_HEADER_BYTES,
    SERVE_IDLE_SECONDS,
    SERVE_REQUEST_SECONDS,
)

# How many connections asyncio accepts at once (uvicorn's `backlog`, also the kernel's queue): each
# holds a descriptor before its protocol can count it, and a few such bursts can be on their way.
ACCEPT_BURST = 64
_BURSTS_ON_THE_WAY = 3


def server_settings(
    *, request_seconds: float = SERVE_REQUEST_SECONDS.value, connections: int | None = None
) -> dict[str, Any]:
    """uvicorn's settings for the gateway (`uvicorn.Config(app, **server_settings())`); `connections`
    None: the cap this process's descriptor limit allows (`connection_cap`)."""
    protocol = type(
        "EdgeProtocol",
        (EdgeProtocol,),
        {"request_seconds": request_seconds, "most": connections or connection_cap()},
    )
    return {
        "http": protocol,
        "backlog": ACCEPT_BURST,
        "timeout_keep_alive": int(SERVE_IDLE_SECONDS.value),
        "h11_max_incomplete_event_size": int(SERVE_HEADER_BYTES.value),
    }


def raise_descriptor_limit() -> None:
    """The soft limit on open descriptors, raised to the hard one, as Go does for every server (Ollama's
    included): the soft 1 024 many systems start with is kept for programs that use select(), which
    asyncio does not."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and (hard == resource.RLIM_INFINITY or soft < hard):
        # macOS refuses past OPEN_MAX: then the cap follows whatever limit holds.
        with contextlib.suppress(OSError, ValueError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def connection_cap(descriptors: int | None = None) -> int:
    """`serve_connections`, or fewer: half the descriptors left after the process's own and the bursts
    of accepted connections not counted yet, since each request passed on holds one upstream too.
    `descriptors`: RLIMIT_NOFILE's soft limit unless given."""
    most = int(SERVE_CONNECTIONS.value)
    if descriptors is None:
        descriptors = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if descriptors == resource.RLIM_INFINITY:
        return most
    spare = descriptors - RESERVED_DESCRIPTORS - ACCEPT_BURST * _BURSTS_ON_THE_WAY
    return max(1, min(most, spare // 2))


class EdgeProtocol(H11Protocol):
    """uvicorn's h11 protocol, with a deadline for each request and a cap on connections."""

    request_seconds: float = SERVE_REQUEST_SECONDS.value
    most: int = int(SERVE_CONNECTIONS.value)
    waiting_since: float | None = None  # since when it waits for a whole request; None: it has one
    _deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._wait()
        if len(self.connections) > self.most:
            self._make_room()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._check_whole()

    def on_response_complete(self) -> None:
        super().on_response_complete()  # may take the next pipelined request, whole already
        if not self.transport.is_closing():
            self._wait()
            self._check_whole()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_waiting()
        super().connection_lost(exc)

    def _wait(self) -> None:
        self._stop_waiting()
        self.waiting_since = time.monotonic()
        self._deadline = self.loop.call_later(self.request_seconds, self._too_slow)

    def _stop_waiting(self) -> None:
        self.waiting_since = None
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _check_whole(self) -> None:
        if self.conn.their_state in (h11.DONE, h11.MUST_CLOSE, h11.CLOSED, h11.ERROR):
            self._stop_waiting()

    def _too_slow(self) -> None:
        limit = f"{self.request_seconds:g} seconds, {SERVE_REQUEST_SECONDS.name}"
        self._refuse(b"408 Request Timeout", f"the request was not whole in time ({limit}): send it at once")

    def _make_room(self) -> None:
        """Past the cap: the connection that has waited longest for a whole request goes (an idle one
        between requests, or one that sends slowly); when every other is being answered, this one."""
        waiting = [c for c in self.connections if isinstance(c, EdgeProtocol) and c is not self]
        waiting = [c for c in waiting if c.waiting_since is not None and not c.transport.is_closing()]
        if waiting:
            oldest = min(waiting, key=lambda c: c.waiting_since or 0.0)
            oldest._refuse(b"503 Service Unavailable", self._full())
        else:
            self._refuse(b"503 Service Unavailable", self._full())

    def _full(self) -> str:
        return (
            f"aforo serve has its most clients connected ({self.most}, {SERVE_CONNECTIONS.name}): try again"
        )

    def _refuse(self, status: bytes, message: str) -> None:
        """Close the connection, saying why to a client amid a request that has no answer begun. An idle
        one is closed without a word: an answer it did not ask for would pass for its next request's."""
        self._stop_waiting()
        if self.transport.is_closing():
            return
        started = self.conn.their_state is not h11.IDLE or bool(self.conn.trailing_data[0])
        if started and self.conn.our_state in (h11.IDLE, h11.SEND_RESPONSE):
            body = message.encode()
            head = b"HTTP/1.1 %s\r\ncontent-type: text/plain; charset=utf-8\r\nconnection: close\r\n" % status
            self.transport.write(head + b"content-length: %d\r\n\r\n" % len(body) + body)
        self.transport.close()
