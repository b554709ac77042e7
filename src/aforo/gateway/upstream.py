"""The server behind the gateway, and the one HTTP client the gateway talks to it with."""

from __future__ import annotations

from dataclasses import dataclass

import httpx

from aforo.limits import READ_TIMEOUT
from aforo.wire.bounded import async_read_body


@dataclass(frozen=True)
class Upstream:
    root_url: str  # the server's root (its own endpoints); OpenAI's live under /v1
    api_key: str | None = None  # sent upstream as a bearer token
    auth: httpx.BasicAuth | None = None  # the user and password its URL had (`cli.routes.split_credentials`)


class UpstreamClient:
    """Made on first use, inside the server's event loop; closed when the server shuts down."""

    def __init__(self, upstream: Upstream) -> None:
        self.upstream = upstream
        self._client: httpx.AsyncClient | None = None

    def http(self) -> httpx.AsyncClient:
        if self._client is None:
            timeout = httpx.Timeout(float(READ_TIMEOUT.value), connect=10.0)
            key = self.upstream.api_key
            auth = {"Authorization": f"Bearer {key}"} if key else {}
            limits = httpx.Limits(max_connections=256, max_keepalive_connections=64)
            self._client = httpx.AsyncClient(
                timeout=timeout, headers=auth, limits=limits, auth=self.upstream.auth
            )
        return self._client

    async def read_whole(self, resp: httpx.Response, url: str) -> str:
        """A body upstream sent that is read whole (a catalog, an error), within `response_bytes`."""
        return await async_read_body(resp, url)

    async def aclose(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            await client.aclose()
