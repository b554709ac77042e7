"""The gateway's HTTP face: OpenAI's and Ollama's chat endpoints, governed (`chat_path`); their catalogs
passed through. Here a request is only routed, checked for the key, and passed on.
"""

from __future__ import annotations

import hmac
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from aforo.errors import LimitExceeded
from aforo.events import Event, EventSink
from aforo.gateway.chat_path import ChatPath
from aforo.gateway.decisions import Gateway
from aforo.gateway.inbound import Api, read_request
from aforo.gateway.upstream import Upstream, UpstreamClient
from aforo.gateway.upstream_leg import UpstreamLeg, error_body

# The endpoints passed through as they are: catalogs and state, no prompt in them.
PASSED = (
    ("/v1/models", "GET"),
    ("/api/tags", "GET"),
    ("/api/ps", "GET"),
    ("/api/version", "GET"),
    ("/api/show", "POST"),
)
KEY_REQUIRED = "a key is required: Authorization: Bearer KEY"


def make_app(
    gateway: Gateway, upstream: Upstream, *, key: str | None = None, log: EventSink | None = None
) -> Starlette:
    """The ASGI app. With `key`, every request must carry it (`Authorization: Bearer KEY`)."""
    client = UpstreamClient(upstream)  # one pool of connections for the chats and the catalogs
    say = log or _unheard
    front = Front(ChatPath(gateway, UpstreamLeg(gateway, client, say), say), client, key)
    routes = [
        Route("/v1/chat/completions", front.openai, methods=["POST"]),
        Route("/api/chat", front.ollama_chat, methods=["POST"]),
        Route("/api/generate", front.ollama_generate, methods=["POST"]),
    ]
    routes += [Route(path, front.passthrough, methods=[method]) for path, method in PASSED]
    return Starlette(routes=routes, lifespan=front.lifespan)


class Front:
    """The doors: each chat endpoint hands its API's requests to the chat path; the rest pass through."""

    def __init__(self, chats: ChatPath, catalogs: UpstreamClient, key: str | None) -> None:
        self.chats, self.catalogs, self.key = chats, catalogs, key

    async def openai(self, request: Request) -> Response:
        return await self.chat(request, "openai")

    async def ollama_chat(self, request: Request) -> Response:
        return await self.chat(request, "ollama_chat")

    async def ollama_generate(self, request: Request) -> Response:
        return await self.chat(request, "ollama_generate")

    async def chat(self, request: Request, api: Api) -> Response:
        if self.denied(request):
            return JSONResponse(error_body(api, KEY_REQUIRED), 401)
        return await self.chats.receive(request, api)

    async def passthrough(self, request: Request) -> Response:
        if self.denied(request):
            return JSONResponse({"error": KEY_REQUIRED}, 401)
        root = self.catalogs.upstream.root_url
        try:
            body = await read_request(request)
            url = f"{root}{request.url.path}"
            async with self.catalogs.http().stream(request.method, url, content=body or None) as resp:
                text = await self.catalogs.read_whole(resp, url)
        except LimitExceeded as exc:
            return JSONResponse({"error": str(exc)}, 413)
        except httpx.TransportError as exc:
            return JSONResponse({"error": f"the upstream server at {root} failed: {exc}"}, 502)
        return Response(text, resp.status_code, media_type=resp.headers.get("content-type"))

    def denied(self, request: Request) -> bool:
        if self.key is None:
            return False
        given = request.headers.get("authorization", "").removeprefix("Bearer ").strip()
        return not hmac.compare_digest(given.encode(), self.key.encode())

    @asynccontextmanager
    async def lifespan(self, app: Starlette) -> AsyncIterator[None]:
        yield
        await self.catalogs.aclose()


def _unheard(event: Event) -> None:
    """Where a gateway built without a log says what it does: nowhere."""
