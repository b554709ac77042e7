"""Start `aforo serve` in front of a test server, both on real 127.0.0.1 sockets, inside a test."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import replace
from typing import Any

from aforo.cli.config import NOT_GIVEN, load_config
from aforo.cli.serve_command import Edge, build
from aforo.context.policy import Policy
from aforo.events import Event
from support.live_server import LiveServer


@contextmanager
def gateway(
    upstream: Any,
    *,
    server: str | None = None,
    window: int | None = None,
    compact: bool = False,
    key: str | None = None,
    policy: Policy | None = None,
    edge: Edge | None = None,
    settings: dict[str, Any] | None = None,
) -> Iterator[tuple[str, list[Event]]]:
    """`upstream` is an ASGI app (started here) or a URL; yields the gateway's URL and what it logged.
    `edge`: what its guard lets in (this machine's pages, on 127.0.0.1); `settings`: uvicorn's, for the
    gateway's own server (`aforo.gateway.connections.server_settings()`; uvicorn's defaults if None)."""
    events: list[Event] = []
    with LiveServer(upstream) if not isinstance(upstream, str) else nullcontext() as live:
        url = upstream if isinstance(upstream, str) else live.url
        flags = {"base_url": url, "server": server or NOT_GIVEN, "context_window": window or NOT_GIVEN}
        cfg = load_config(flags)
        if policy is not None:
            cfg = replace(cfg, policy=policy)
        built = build(cfg, compact=compact, key=key, log=events.append, edge=edge)
        try:
            with LiveServer(built.app, **(settings or {})) as front:
                yield front.url, events
        finally:
            built.close()
