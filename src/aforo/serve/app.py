"""The gateway's HTTP face: OpenAI's and Ollama's chat endpoints, governed; their catalogs passed through.

A chat request is read (bounded), admitted by its conversation's governor (`gateway`), sent upstream,
and its answer judged before the client sees any of it, unless the server is loud (it refuses what does
not fit, so nothing it streams can be a silently truncated answer): then it streams as it arrives. A
request that cannot fit, and an answer whose reported prompt shows a drop, reach the client as the
overflow error its own code handles (`answers.overflow_body`). Every chat response says what the
gateway saw in `x-aforo-*` headers. A client that goes away stops the upstream request.
"""

from __future__ import annotations

import hmac
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

import anyio
import httpx
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from aforo import safejson
from aforo.context.budget import DEFAULT_MAX_TOKENS
from aforo.errors import ConfigError, LimitExceeded, ProviderError, ServerLimitExceeded
from aforo.events import EventSink, Warning
from aforo.limits import (
    ANSWER_BYTES,
    ANSWER_TIMEOUT,
    READ_TIMEOUT,
    RESPONSE_BYTES,
    SERVE_REQUEST_BYTES,
    STREAM_LINE_BYTES,
    answer_bytes,
)
from aforo.providers.ollama import supports_truncate_flag
from aforo.serve.answers import (
    encode,
    end_of,
    error_body,
    finished,
    overflow_body,
    stream_docs,
    whole_docs,
)
from aforo.serve.bridge import ToOpenAI, to_ollama
from aforo.serve.gateway import Gateway, Refused, Ticket, Verdict
from aforo.serve.inbound import Api, BadRequest, Inbound, read_inbound, with_messages
from aforo.wire.overflow_wordings import map_overflow

USED, WINDOW, VERDICT, COMPACTED = (
    "x-aforo-context-used",
    "x-aforo-context-window",
    "x-aforo-verdict",
    "x-aforo-compacted",
)
# The endpoints passed through as they are: catalogs and state, no prompt in them.
PASSED = (
    ("/v1/models", "GET"),
    ("/api/tags", "GET"),
    ("/api/ps", "GET"),
    ("/api/version", "GET"),
    ("/api/show", "POST"),
)
CHATS: tuple[tuple[str, Api], ...] = (
    ("/v1/chat/completions", "openai"),
    ("/api/chat", "ollama_chat"),
    ("/api/generate", "ollama_generate"),
)
T = TypeVar("T")


@dataclass(frozen=True)
class Upstream:
    root_url: str  # the server's root (its own endpoints); OpenAI's live under /v1
    api_key: str | None = None  # sent upstream as a bearer token
    auth: httpx.BasicAuth | None = None  # the user and password its URL had (`cli.routes.split_credentials`)


class _Disconnected(Exception):
    """The client went away before its answer was ready."""


def make_app(
    gateway: Gateway, upstream: Upstream, *, key: str | None = None, log: EventSink | None = None
) -> Starlette:
    """The ASGI app. With `key`, every request must carry it (`Authorization: Bearer KEY`)."""
    state: dict[str, httpx.AsyncClient] = {}
    say = log or (lambda event: None)

    def http() -> httpx.AsyncClient:
        # Made on first use, inside the server's event loop; closed when the server shuts down.
        if "client" not in state:
            timeout = httpx.Timeout(float(READ_TIMEOUT.value), connect=10.0)
            auth = {"Authorization": f"Bearer {upstream.api_key}"} if upstream.api_key else {}
            limits = httpx.Limits(max_connections=256, max_keepalive_connections=64)
            state["client"] = httpx.AsyncClient(
                timeout=timeout, headers=auth, limits=limits, auth=upstream.auth
            )
        return state["client"]

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        if "client" in state:
            await state.pop("client").aclose()

    def denied(request: Request) -> bool:
        if key is None:
            return False
        given = request.headers.get("authorization", "").removeprefix("Bearer ").strip()
        return not hmac.compare_digest(given.encode(), key.encode())

    async def passthrough(request: Request) -> Response:
        if denied(request):
            return JSONResponse({"error": "a key is required: Authorization: Bearer KEY"}, 401)
        try:
            body = await _read_request(request)
            url = f"{upstream.root_url}{request.url.path}"
            async with http().stream(request.method, url, content=body or None) as resp:
                text = await _read_whole(resp, int(RESPONSE_BYTES.value), url)
        except LimitExceeded as exc:
            return JSONResponse({"error": str(exc)}, 413)
        except httpx.TransportError as exc:
            return JSONResponse({"error": f"the upstream server at {upstream.root_url} failed: {exc}"}, 502)
        return Response(text, resp.status_code, media_type=resp.headers.get("content-type"))

    def chat(api: Api) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            return await _chat(request, api)

        return endpoint

    async def _chat(request: Request, api: Api) -> Response:
        if denied(request):
            return JSONResponse(error_body(api, "a key is required: Authorization: Bearer KEY"), 401)
        try:
            raw = await _read_request(request)
            inbound = read_inbound(api, safejson.loads(raw, "the request body"), DEFAULT_MAX_TOKENS)
        except LimitExceeded as exc:
            return JSONResponse(error_body(api, str(exc)), 413)
        except (BadRequest, ValueError) as exc:
            return JSONResponse(error_body(api, f"not a request aforo serve can read: {exc}"), 400)
        who = request.client.host if request.client else "?"
        client = f"{who} {request.headers.get('user-agent', '')}".strip()[:200]
        try:
            ticket = await run_in_threadpool(gateway.admit, inbound, client)
        except Refused as exc:
            say(Warning(message=f"refused {inbound.model}: {exc}"))
            headers = _headers(exc.used, exc.window, "refused")
            return JSONResponse(overflow_body(api, str(exc)), 400, headers=headers)
        except (ConfigError, LimitExceeded, ProviderError) as exc:
            return JSONResponse(error_body(api, str(exc), "server_error"), 502)
        try:
            return await _send(request, ticket)
        except _Disconnected:
            gateway.finish(ticket, "abandoned", None)
            return Response(status_code=499)  # nobody reads it: the client is gone
        except BaseException:
            gateway.finish(ticket, "failed", None)
            raise

    async def _send(request: Request, ticket: Ticket) -> Response:
        inbound, room = ticket.inbound, ticket.room
        way = _way(ticket)
        url = way.url
        client = http()
        upstream_request = client.build_request(
            "POST", url, content=encode(way.body), headers={"content-type": "application/json"}
        )
        limit = answer_bytes(inbound.request.max_tokens)
        try:
            resp = await _until_gone(request, lambda: client.send(upstream_request, stream=True))
        except httpx.TransportError as exc:
            gateway.finish(ticket, "failed", None)
            return JSONResponse(
                error_body(inbound.api, f"the upstream server failed: {exc}", "server_error"), 502
            )
        if resp.status_code >= 300:
            return await _failed(ticket, resp, url)
        if inbound.streams and room.live:
            headers = _ticket_headers(ticket, "admitted")
            live = _live(ticket, way, resp, limit)
            return StreamingResponse(live, headers=headers, media_type=way.media(resp))
        try:
            lines = await _until_gone(request, lambda: _read_lines(resp, limit, url))
        except (ServerLimitExceeded, httpx.TransportError) as exc:
            gateway.finish(ticket, "failed", None)
            return JSONResponse(error_body(inbound.api, str(exc), "server_error"), 502)
        finally:
            await resp.aclose()
        # Ollama's answer is one JSON line, or lines when it streams anyway: read line by line.
        whole = not inbound.streams and way.api == "openai"
        docs = whole_docs("\n".join(lines)) if whole else stream_docs(way.api, lines)
        end = end_of(way.api, docs)
        seen = await run_in_threadpool(gateway.observe, ticket, end)
        if seen.truncated:
            gateway.finish(ticket, "truncated", end)
            say(Warning(message=f"withheld {inbound.model}: {seen.message}"))
            headers = _ticket_headers(ticket, "truncated")
            return JSONResponse(overflow_body(inbound.api, seen.message), 400, headers=headers)
        verdict: Verdict = "clean" if end.usage.prompt_tokens > 0 else "unchecked"
        gateway.finish(ticket, verdict, end)
        text = "\n".join(way.shown(lines))
        if inbound.streams:
            text += "\n"
        headers = _ticket_headers(ticket, verdict)
        return Response(text, resp.status_code, headers=headers, media_type=way.media(resp))

    async def _failed(ticket: Ticket, resp: httpx.Response, url: str) -> Response:
        """Upstream refused: its overflow, in any server's dialect, as the client's; else passed on."""
        try:
            text = await _read_whole(resp, int(RESPONSE_BYTES.value), url)
        except (ServerLimitExceeded, httpx.TransportError):
            text = ""
        finally:
            await resp.aclose()
        overflow = map_overflow(resp.status_code, text)
        verdict: Verdict = "overflow" if overflow is not None else "failed"
        gateway.finish(ticket, verdict, None)
        headers = _ticket_headers(ticket, verdict)
        if overflow is not None:
            return JSONResponse(overflow_body(ticket.inbound.api, str(overflow)), 400, headers=headers)
        return Response(text, resp.status_code, headers=headers, media_type=resp.headers.get("content-type"))

    async def _live(ticket: Ticket, way: Way, resp: httpx.Response, limit: int) -> AsyncIterator[bytes]:
        """A loud server's stream, passed on as it arrives; judged at its end, for the record. A client
        that hangs up once it has the last line had its whole answer: judged all the same."""
        passed: list[str] = []  # upstream's lines, each once what the client gets of it was sent
        ended = gone = False
        try:
            try:
                async for line in _lines(resp, limit, way.url):
                    for out in way.shown([line]):
                        yield (out + "\n").encode()
                    passed.append(line)
                ended = True
            except (GeneratorExit, anyio.get_cancelled_exc_class()):
                gone = True  # cancelled while upstream's next line was awaited, or closed at a yield
                raise
            except (ServerLimitExceeded, httpx.TransportError) as exc:
                # Too late for a status: the stream ends with an error in its own shape, which the
                # client's stream reader raises (OpenAI's SDK and Ollama's clients both do).
                error = encode(error_body(ticket.inbound.api, str(exc) or type(exc).__name__, "server_error"))
                yield (b"data: " + error + b"\n\n") if ticket.inbound.api == "openai" else error + b"\n"
        finally:
            # Shielded: the row of a stream whose client hung up is written all the same.
            with anyio.CancelScope(shield=True):
                await resp.aclose()
                whole = ended or (gone and finished(way.api, passed))
                await _record(ticket, way, passed, whole=whole, gone=gone)

    async def _record(ticket: Ticket, way: Way, lines: list[str], *, whole: bool, gone: bool) -> None:
        """A live stream's row: its answer's verdict when the stream ended (or the client hung up with
        the last line in hand), else why it did not end."""
        verdict: Verdict = "abandoned" if gone and not whole else "failed"
        end = None
        try:
            if whole:
                end = end_of(way.api, stream_docs(way.api, lines))
                seen = await run_in_threadpool(gateway.observe, ticket, end)
                verdict = "truncated" if seen.truncated else "admitted"
        finally:
            gateway.finish(ticket, verdict, end)

    routes = [Route(path, chat(api), methods=["POST"]) for path, api in CHATS]
    routes += [Route(path, passthrough, methods=[method]) for path, method in PASSED]
    return Starlette(routes=routes, lifespan=lifespan)


@dataclass
class Way:
    """Where a request goes, in which dialect its answer comes back, and how the client gets it."""

    inbound: Inbound
    url: str
    body: dict[str, Any]
    api: Api  # the dialect upstream answers in
    bridge: ToOpenAI | None = None  # an OpenAI client's request answered by Ollama's native API

    def shown(self, lines: list[str]) -> list[str]:
        """What the client gets of these lines of the answer."""
        if self.bridge is None:
            return _shown(self.inbound, lines)
        if self.inbound.streams:
            return [out for doc in stream_docs(self.api, lines) for out in self.bridge.chunk(doc)]
        return [self.bridge.completion(stream_docs(self.api, lines))]

    def media(self, resp: httpx.Response) -> str | None:
        if self.bridge is None:
            return resp.headers.get("content-type")
        return "text/event-stream" if self.inbound.streams else "application/json"


def _way(ticket: Ticket) -> Way:
    """What goes upstream: the client's body; the governed conversation when the governor changed it;
    usage asked for in an OpenAI stream; to Ollama, `_on_ollama`'s settings, an OpenAI client's request
    included (through its native API: `bridge`)."""
    inbound, room, server = ticket.inbound, ticket.room, ticket.room.server
    if room.kind.sets_window and inbound.api == "openai":
        body = _on_ollama(to_ollama(inbound.body, ticket.admitted.request), ticket)
        bridge = ToOpenAI(inbound.model, usage=_asked_usage(inbound))
        return Way(inbound, f"{server.root_url}/api/chat", body, "ollama_chat", bridge)
    body = with_messages(inbound, ticket.admitted.request) if ticket.transformed else dict(inbound.body)
    if inbound.api == "openai":
        if inbound.streams:
            asked = body.get("stream_options")
            body["stream_options"] = {**(asked if isinstance(asked, dict) else {}), "include_usage": True}
        return Way(inbound, f"{server.v1_url}/chat/completions", body, "openai")
    if room.kind.sets_window:
        body = _on_ollama(body, ticket)
    path = "chat" if inbound.api == "ollama_chat" else "generate"
    return Way(inbound, f"{server.root_url}/api/{path}", body, inbound.api)


def _on_ollama(body: dict[str, Any], ticket: Ticket) -> dict[str, Any]:
    """Ollama is told the window it was budgeted for (num_ctx, so it never falls back to its default),
    not to truncate silently where its version allows, and, when the client set no limit, the reserve
    as the answer's: past the window while generating it would drop the oldest tokens without a word."""
    room = ticket.room
    options = body.get("options")
    options = {**(options if isinstance(options, dict) else {}), "num_ctx": room.budget.window}
    if ticket.inbound.asked_max_tokens is None:
        options["num_predict"] = room.budget.reserve
    else:
        options["num_predict"] = ticket.inbound.asked_max_tokens
    body = {**body, "options": options}
    if supports_truncate_flag(room.server.version):
        body["truncate"] = False
    return body


def _asked_usage(inbound: Inbound) -> bool:
    options = inbound.body.get("stream_options")
    return isinstance(options, dict) and options.get("include_usage") is True


def _keep(inbound: Inbound, line: str) -> bool:
    """Whether a streamed line goes to the client: not the usage-only chunk it did not ask for (a client
    that reads `choices[0]` of every chunk would fail on it)."""
    if inbound.api != "openai" or _asked_usage(inbound) or not line.startswith("data:"):
        return True
    return not ('"choices": []' in line or '"choices":[]' in line)


def _shown(inbound: Inbound, lines: list[str]) -> list[str]:
    return [line for line in lines if _keep(inbound, line)] if inbound.streams else lines


def _headers(used: int, window: int, verdict: Verdict) -> dict[str, str]:
    return {USED: str(used), WINDOW: str(window), VERDICT: verdict}


def _ticket_headers(ticket: Ticket, verdict: Verdict) -> dict[str, str]:
    headers = _headers(ticket.used, ticket.room.budget.window, verdict)
    if ticket.transformed:
        was, now = len(ticket.inbound.request.messages), len(ticket.admitted.request.messages)
        # A compaction replaces messages with a summary; clearing only rewrites old results in place.
        done = "compacted" if now != was else "cleared"
        headers[COMPACTED] = f"{done}: {was} messages -> {now}; checkpoint {ticket.admitted.checkpoint}"
    return headers


async def _read_request(request: Request) -> bytes:
    most = int(SERVE_REQUEST_BYTES.value)
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > most:
            raise LimitExceeded(SERVE_REQUEST_BYTES, "the request body")
        chunks.append(chunk)
    return b"".join(chunks)


async def _lines(resp: httpx.Response, limit: int, url: str) -> AsyncIterator[str]:
    """The answer's lines, within `limit` bytes in all, `stream_line_bytes` each and `answer_timeout`
    seconds from the first byte to the last (a silence is the client's read timeout's)."""
    pending, total = b"", 0
    most = int(STREAM_LINE_BYTES.value)
    deadline = time.monotonic() + float(ANSWER_TIMEOUT.value)
    async for chunk in resp.aiter_bytes():
        if time.monotonic() > deadline:
            raise ServerLimitExceeded(ANSWER_TIMEOUT, f"the answer of {url} took too long")
        total += len(chunk)
        if total > limit:
            raise ServerLimitExceeded(ANSWER_BYTES, f"the answer of {url} passed {limit} bytes")
        pending += chunk
        *whole, pending = pending.split(b"\n")
        if len(pending) > most or any(len(line) > most for line in whole):
            raise ServerLimitExceeded(STREAM_LINE_BYTES, f"a line of the answer of {url}")
        for line in whole:
            yield line.rstrip(b"\r").decode("utf-8", "replace")
    if pending:
        yield pending.decode("utf-8", "replace")


async def _read_lines(resp: httpx.Response, limit: int, url: str) -> list[str]:
    return [line async for line in _lines(resp, limit, url)]


async def _read_whole(resp: httpx.Response, limit: int, url: str) -> str:
    return "\n".join(await _read_lines(resp, limit, url))


async def _until_gone(request: Request, work: Callable[[], Awaitable[T]]) -> T:
    """`work`'s result; if the client disconnects first, `work` is cancelled (and with it the upstream
    request) and _Disconnected raised."""
    result: list[T] = []
    failed: list[Exception] = []

    async with anyio.create_task_group() as group:

        async def run() -> None:
            # Its failure leaves the group as itself, not wrapped in an ExceptionGroup.
            try:
                result.append(await work())
            except Exception as exc:
                failed.append(exc)
            group.cancel_scope.cancel()

        async def watch() -> None:
            while (await request.receive())["type"] != "http.disconnect":
                pass
            group.cancel_scope.cancel()

        group.start_soon(run)
        group.start_soon(watch)
    if failed:
        raise failed[0]
    if not result:
        raise _Disconnected()
    return result[0]
