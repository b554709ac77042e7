"""The way of one chat request through the gateway, step by named step, from the client to upstream
and back. Start at `ChatPath.receive`; each step is a method below it, in the order a request meets
them.

A chat request is read (bounded), admitted by its conversation's governor (`gateway`), sent upstream,
and its answer judged before the client sees any of it (`hold`), unless the server is loud (it refuses
what does not fit, so nothing it streams can be a silently truncated answer): then it streams as it
arrives (`pass_live`), judged at its end for the record. A request that cannot fit, and an answer whose
reported prompt shows a drop, reach the client as the overflow error its own code handles. Every chat
response says what the gateway saw in `x-aforo-*` headers. A client that goes away stops the upstream
request. A step that ends the request early raises `Answered` with the response the client gets.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
import httpx
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from aforo import safejson
from aforo.context.budget import DEFAULT_MAX_TOKENS
from aforo.errors import ConfigError, LimitExceeded, ProviderError, ServerLimitExceeded
from aforo.events import EventSink, Warning
from aforo.limits import ANSWER_TIMEOUT, SERVE_ANSWER_BYTES
from aforo.serve.client_errors import encode, error_body, overflow_body
from aforo.serve.gateway import Gateway, Outcome, Refused, Ticket
from aforo.serve.hangup import Disconnected, until_gone
from aforo.serve.inbound import Api, BadRequest, Inbound, read_inbound, read_request
from aforo.serve.upstream import UpstreamClient
from aforo.serve.upstream_answer import AnswerReading
from aforo.serve.upstream_call import Way, way_for
from aforo.wire.bounded import AnswerBudget, async_lines
from aforo.wire.overflow_wordings import map_overflow

USED, WINDOW, VERDICT, COMPACTED = (
    "x-aforo-context-used",
    "x-aforo-context-window",
    "x-aforo-verdict",
    "x-aforo-compacted",
)


class Answered(Exception):
    """A step ended the request early: `response` is what the client gets."""

    def __init__(self, response: Response) -> None:
        super().__init__(response.status_code)
        self.response = response


class ChatPath:
    def __init__(self, gateway: Gateway, upstream: UpstreamClient, say: EventSink) -> None:
        self.gateway, self.upstream, self.say = gateway, upstream, say

    async def receive(self, request: Request, api: Api) -> Response:
        """A client's chat request, in `api`'s words: read, admitted, sent, answered."""
        try:
            inbound = await self.read(request, api)
            ticket = await self.admit(request, inbound)
            return await self.send(request, ticket)
        except Answered as answered:
            return answered.response

    async def read(self, request: Request, api: Api) -> Inbound:
        """The client's body, within `serve_request_bytes`, as a request the governor can count."""
        try:
            raw = await read_request(request)
            return read_inbound(api, safejson.loads(raw, "the request body"), DEFAULT_MAX_TOKENS)
        except LimitExceeded as exc:
            raise Answered(JSONResponse(error_body(api, str(exc)), 413)) from exc
        except (BadRequest, ValueError) as exc:
            message = f"not a request aforo serve can read: {exc}"
            raise Answered(JSONResponse(error_body(api, message), 400)) from exc

    async def admit(self, request: Request, inbound: Inbound) -> Ticket:
        """Its conversation's governor admits it (in a worker thread: it may ask the server to count or
        summarize), or it is refused as the overflow the client's code handles."""
        who = request.client.host if request.client else "?"
        client = f"{who} {request.headers.get('user-agent', '')}".strip()[:200]
        try:
            return await run_in_threadpool(self.gateway.admit, inbound, client)
        except Refused as exc:
            self.say(Warning(message=f"refused {inbound.model}: {exc}"))
            headers = _headers(exc.used, exc.window, "refused")
            raise Answered(JSONResponse(overflow_body(inbound.api, str(exc)), 400, headers=headers)) from exc
        except (ConfigError, LimitExceeded, ProviderError) as exc:
            body = error_body(inbound.api, str(exc), "server_error")
            raise Answered(JSONResponse(body, 502)) from exc

    async def send(self, request: Request, ticket: Ticket) -> Response:
        """Upstream gets what `way_for` says; its answer is passed on live, held and judged, or refused.
        However the request ends, the ticket is finished once."""
        try:
            way = way_for(ticket)
            upstream = self.upstream.http()
            call = upstream.build_request(
                "POST", way.url, content=encode(way.body), headers={"content-type": "application/json"}
            )
            try:
                resp = await until_gone(request, lambda: upstream.send(call, stream=True))
            except httpx.TransportError as exc:
                self.gateway.finish(ticket, "failed", None)
                message = f"the upstream server failed: {exc}"
                return JSONResponse(error_body(ticket.inbound.api, message, "server_error"), 502)
            if resp.status_code >= 300:
                return await self.refused_upstream(ticket, resp, way.url)
            if ticket.inbound.streams and ticket.lane.kind.loud:
                headers = _ticket_headers(ticket, "admitted")
                live = self.pass_live(ticket, way, resp)
                return StreamingResponse(live, headers=headers, media_type=way.media(resp))
            return await self.hold(request, ticket, way, resp)
        except Disconnected:
            self.gateway.finish(ticket, "abandoned", None)
            return Response(status_code=499)  # nobody reads it: the client is gone
        except BaseException:
            self.gateway.finish(ticket, "failed", None)
            raise

    async def hold(self, request: Request, ticket: Ticket, way: Way, resp: httpx.Response) -> Response:
        """A server that may drop part of a prompt without a word: its whole answer is read and judged
        before the client sees any of it."""
        inbound = ticket.inbound
        reading = AnswerReading(way.api)
        try:
            lines = await until_gone(request, lambda: _read_lines(resp, _budget(ticket, way.url)))
        except (ServerLimitExceeded, httpx.TransportError) as exc:
            self.gateway.finish(ticket, "failed", None)
            return JSONResponse(error_body(inbound.api, str(exc), "server_error"), 502)
        finally:
            await resp.aclose()
        # Ollama's answer is one JSON line, or lines when it streams anyway: read line by line.
        if not inbound.streams and way.api == "openai":
            docs = reading.whole("\n".join(lines))
        else:
            docs = [doc for line in lines for doc in reading.line(line)]
        end = reading.end()
        seen = await run_in_threadpool(self.gateway.observe, ticket, end)
        if seen.truncated:
            self.gateway.finish(ticket, "truncated", end)
            self.say(Warning(message=f"withheld {inbound.model}: {seen.message}"))
            headers = _ticket_headers(ticket, "truncated")
            return JSONResponse(overflow_body(inbound.api, seen.message), 400, headers=headers)
        outcome: Outcome = "clean" if end.usage.prompt_tokens > 0 else "unchecked"
        self.gateway.finish(ticket, outcome, end)
        text = "\n".join(way.shown(lines, docs))
        if inbound.streams:
            text += "\n"
        headers = _ticket_headers(ticket, outcome)
        return Response(text, resp.status_code, headers=headers, media_type=way.media(resp))

    async def pass_live(self, ticket: Ticket, way: Way, resp: httpx.Response) -> AsyncIterator[bytes]:
        """A loud server's stream, passed on as it arrives; judged at its end, for the record. A client
        that hangs up once it has the last line had its whole answer: judged all the same. Only the
        reading of the answer's end is kept, never the lines passed."""
        reading = AnswerReading(way.api)
        ended = gone = False
        try:
            try:
                async for line in async_lines(resp, _budget(ticket, way.url)):
                    for out in way.shown([line], reading.line(line)):
                        yield (out + "\n").encode()
                ended = True
            except (GeneratorExit, anyio.get_cancelled_exc_class()):
                gone = True  # cancelled while upstream's next line was awaited, or closed at a yield
                raise
            except (ServerLimitExceeded, httpx.TransportError) as exc:
                # Too late for a status: the stream ends with an error in its own shape, which the
                # client's stream reader raises (OpenAI's SDK and Ollama's clients both do).
                api = ticket.inbound.api
                error = encode(error_body(api, str(exc) or type(exc).__name__, "server_error"))
                yield (b"data: " + error + b"\n\n") if api == "openai" else error + b"\n"
        finally:
            # Shielded: the row of a stream whose client hung up is written all the same.
            with anyio.CancelScope(shield=True):
                await resp.aclose()
                whole = ended or (gone and reading.finished)
                await self.record_live(ticket, reading, whole=whole, gone=gone)

    async def record_live(self, ticket: Ticket, reading: AnswerReading, *, whole: bool, gone: bool) -> None:
        """A live stream's row: its answer's verdict when the stream ended (or the client hung up with
        the last line in hand), else why it did not end."""
        outcome: Outcome = "abandoned" if gone and not whole else "failed"
        end = None
        try:
            if whole:
                end = reading.end()
                seen = await run_in_threadpool(self.gateway.observe, ticket, end)
                outcome = "truncated" if seen.truncated else "admitted"
        finally:
            self.gateway.finish(ticket, outcome, end)

    async def refused_upstream(self, ticket: Ticket, resp: httpx.Response, url: str) -> Response:
        """Upstream refused: its overflow, in any server's dialect, as the client's; else passed on."""
        try:
            text = await self.upstream.read_whole(resp, url)
        except (ServerLimitExceeded, httpx.TransportError):
            text = ""
        finally:
            await resp.aclose()
        overflow = map_overflow(resp.status_code, text)
        outcome: Outcome = "overflow" if overflow is not None else "failed"
        self.gateway.finish(ticket, outcome, None)
        headers = _ticket_headers(ticket, outcome)
        if overflow is not None:
            return JSONResponse(overflow_body(ticket.inbound.api, str(overflow)), 400, headers=headers)
        return Response(text, resp.status_code, headers=headers, media_type=resp.headers.get("content-type"))


def _budget(ticket: Ticket, url: str) -> AnswerBudget:
    """What the answer may take: the bytes its max_tokens allows, never past `serve_answer_bytes` (the
    client's number costs the client nothing), and `answer_timeout` seconds."""
    asked = ticket.inbound.request.max_tokens
    return AnswerBudget(url, asked, float(ANSWER_TIMEOUT.value), cap=SERVE_ANSWER_BYTES)


async def _read_lines(resp: httpx.Response, budget: AnswerBudget) -> list[str]:
    return [line async for line in async_lines(resp, budget)]


def _headers(used: int, window: int, outcome: Outcome) -> dict[str, str]:
    return {USED: str(used), WINDOW: str(window), VERDICT: outcome}


def _ticket_headers(ticket: Ticket, outcome: Outcome) -> dict[str, str]:
    headers = _headers(ticket.used, ticket.lane.budget.window, outcome)
    if ticket.transformed:
        was, now = len(ticket.inbound.request.messages), len(ticket.admitted.request.messages)
        # A compaction replaces messages with a summary; clearing only rewrites old results in place.
        done = "compacted" if now != was else "cleared"
        headers[COMPACTED] = f"{done}: {was} messages -> {now}; checkpoint {ticket.admitted.checkpoint}"
    return headers
