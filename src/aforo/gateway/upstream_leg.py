"""The upstream leg of a chat request (after `chat_path`): the call upstream, and its answer on the way
back, step by named step from `UpstreamLeg.go`.

The answer is judged before the client sees any of it (`hold`), unless the server is loud (it refuses
what does not fit, so nothing it streams can be a silently truncated answer): then it streams as it
arrives (`pass_live`), judged at its end for the record. An answer whose reported prompt shows a drop
reaches the client as the overflow error its own code handles (`overflow_body`), an upstream refusal
in any server's dialect too (`refused_upstream`). Every chat response says what the gateway saw in
`x-aforo-*` headers. A client that goes away stops the upstream request (`until_gone`).

The answer comes back from one call into `wire.answer_docs`: its lines with the documents they hold,
its end (usage, stop, served model) read on the way by the providers' own reading. A live stream keeps
its end's reading, never its lines; a held one holds its lines, within `serve_answer_bytes` whatever
max_tokens the client asked.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from functools import partial
from typing import Any, TypeVar

import anyio
import httpx
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from aforo.errors import ServerLimitExceeded
from aforo.events import EventSink, Warning
from aforo.gateway.decisions import Gateway, Outcome, Ticket
from aforo.gateway.inbound import Api, Inbound
from aforo.gateway.upstream import UpstreamClient
from aforo.gateway.upstream_call import Way
from aforo.limits import ANSWER_TIMEOUT, SERVE_ANSWER_BYTES
from aforo.wire.answer_docs import answer_lines, held_answer
from aforo.wire.answer_end import AnswerReading
from aforo.wire.bounded import AnswerBudget
from aforo.wire.overflow_wordings import map_overflow

USED, WINDOW, VERDICT, COMPACTED = (
    "x-aforo-context-used",
    "x-aforo-context-window",
    "x-aforo-verdict",
    "x-aforo-compacted",
)
# What Ollama itself says when a prompt does not fit (with `truncate: false`): clients match on it.
OLLAMA_OVERFLOW = "the input length exceeds the context length"
# The opening of OpenAI's own overflow message: clients that classify errors by their text (litellm, and
# with it mini-swe-agent and aider) read the body's `code` only through it.
OPENAI_OVERFLOW = "This model's maximum context length is exceeded"
T = TypeVar("T")


class UpstreamLeg:
    def __init__(self, gateway: Gateway, upstream: UpstreamClient, say: EventSink) -> None:
        self.gateway, self.upstream, self.say = gateway, upstream, say

    async def go(self, request: Request, ticket: Ticket, way: Way) -> Response:
        """Upstream gets what `way` says; its answer is passed on live, held and judged, or refused."""
        upstream = self.upstream.http()
        call = upstream.build_request(
            "POST", way.url, content=encode(way.body), headers={"content-type": "application/json"}
        )
        try:
            resp = await until_gone(request, partial(upstream.send, call, stream=True))
        except httpx.TransportError as exc:
            self.gateway.finish(ticket, "failed", None)
            message = f"the upstream server failed: {exc}"
            return JSONResponse(error_body(ticket.inbound.api, message, "server_error"), 502)
        if resp.status_code >= 300:
            return await self.refused_upstream(ticket, resp, way.url)
        if ticket.inbound.streams and ticket.lane.kind.loud:
            headers = ticket_headers(ticket, "admitted")
            live = self.pass_live(ticket, way, resp)
            return StreamingResponse(live, headers=headers, media_type=_media(way, resp))
        return await self.hold(request, ticket, way, resp)

    async def hold(self, request: Request, ticket: Ticket, way: Way, resp: httpx.Response) -> Response:
        """A server that may drop part of a prompt without a word: its whole answer is read and judged
        before the client sees any of it."""
        inbound = ticket.inbound
        reading = AnswerReading(way.api)
        # Ollama's answer is one JSON line, or lines when it streams anyway: read line by line.
        whole = not inbound.streams and way.api == "openai"
        try:
            lines, docs = await until_gone(
                request, partial(held_answer, resp, _budget(ticket, way.url), reading, whole=whole)
            )
        except (ServerLimitExceeded, httpx.TransportError) as exc:
            self.gateway.finish(ticket, "failed", None)
            return JSONResponse(error_body(inbound.api, str(exc), "server_error"), 502)
        finally:
            await resp.aclose()
        end = reading.end()
        seen = await run_in_threadpool(self.gateway.observe, ticket, end)
        if seen.truncated:
            self.gateway.finish(ticket, "truncated", end)
            self.say(Warning(message=f"withheld {inbound.model}: {seen.message}"))
            headers = ticket_headers(ticket, "truncated")
            return JSONResponse(overflow_body(inbound.api, seen.message), 400, headers=headers)
        outcome: Outcome = "clean" if end.usage.prompt_tokens > 0 else "unchecked"
        self.gateway.finish(ticket, outcome, end)
        text = "\n".join(shown(way, lines, docs))
        if inbound.streams:
            text += "\n"
        headers = ticket_headers(ticket, outcome)
        return Response(text, resp.status_code, headers=headers, media_type=_media(way, resp))

    async def pass_live(self, ticket: Ticket, way: Way, resp: httpx.Response) -> AsyncIterator[bytes]:
        """A loud server's stream, passed on as it arrives; judged at its end, for the record. A client
        that hangs up once it has the last line had its whole answer: judged all the same. Only the
        reading of the answer's end is kept, never the lines passed."""
        reading = AnswerReading(way.api)
        ended = gone = delivered = False  # delivered: the client has the last line
        try:
            try:
                async for line, docs in answer_lines(resp, _budget(ticket, way.url), reading):
                    for out in shown(way, [line], docs):
                        yield (out + "\n").encode()
                    delivered = reading.finished
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
                whole = ended or (gone and delivered)
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
        headers = ticket_headers(ticket, outcome)
        if overflow is not None:
            return JSONResponse(overflow_body(ticket.inbound.api, str(overflow)), 400, headers=headers)
        return Response(text, resp.status_code, headers=headers, media_type=resp.headers.get("content-type"))


def shown(way: Way, lines: list[str], docs: list[Any]) -> list[str]:
    """What the client gets of these lines of the answer (`docs`: the documents they hold): the lines
    themselves, in OpenAI's words when Ollama's native API answered an OpenAI client (`way.bridge`)."""
    inbound = way.inbound
    if way.bridge is None:
        return [line for line in lines if _keep(inbound, line)] if inbound.streams else lines
    if inbound.streams:
        return [out for doc in docs for out in way.bridge.chunk(doc)]
    return [way.bridge.completion(docs)]


def _keep(inbound: Inbound, line: str) -> bool:
    """Whether a streamed line goes to the client: not the usage-only chunk it did not ask for (a client
    that reads `choices[0]` of every chunk would fail on it)."""
    if inbound.api != "openai" or inbound.asks_usage or not line.startswith("data:"):
        return True
    return not ('"choices": []' in line or '"choices":[]' in line)


def _media(way: Way, resp: httpx.Response) -> str | None:
    if way.bridge is None:
        return resp.headers.get("content-type")
    return "text/event-stream" if way.inbound.streams else "application/json"


def _budget(ticket: Ticket, url: str) -> AnswerBudget:
    """What the answer may take: the bytes its max_tokens allows, never past `serve_answer_bytes` (the
    client's number costs the client nothing), and `answer_timeout` seconds."""
    asked = ticket.inbound.request.max_tokens
    return AnswerBudget(url, asked, float(ANSWER_TIMEOUT.value), cap=SERVE_ANSWER_BYTES)


def verdict_headers(used: int, window: int, outcome: Outcome) -> dict[str, str]:
    return {USED: str(used), WINDOW: str(window), VERDICT: outcome}


def ticket_headers(ticket: Ticket, outcome: Outcome) -> dict[str, str]:
    headers = verdict_headers(ticket.used, ticket.lane.budget.window, outcome)
    if ticket.transformed:
        was, now = len(ticket.inbound.request.messages), len(ticket.admitted.request.messages)
        # A compaction replaces messages with a summary; clearing only rewrites old results in place.
        done = "compacted" if now != was else "cleared"
        headers[COMPACTED] = f"{done}: {was} messages -> {now}; checkpoint {ticket.admitted.checkpoint}"
    return headers


def overflow_body(api: Api, message: str) -> dict[str, Any]:
    """The error a client's code already reads as "the context is full": OpenAI's, or Ollama's."""
    if api == "openai":
        return {
            "error": {
                "message": f"{OPENAI_OVERFLOW}: {message}",
                "type": "invalid_request_error",
                "param": "messages",
                "code": "context_length_exceeded",
            }
        }
    return {"error": f"{OLLAMA_OVERFLOW}: {message}"}


def error_body(api: Api, message: str, kind: str = "invalid_request_error") -> dict[str, Any]:
    """Any other error the gateway answers itself, in the client's shape."""
    if api == "openai":
        return {"error": {"message": message, "type": kind, "param": None, "code": None}}
    return {"error": message}


def encode(doc: dict[str, Any]) -> bytes:
    return json.dumps(doc, ensure_ascii=False).encode()


class Disconnected(Exception):
    """The client went away before its answer was ready."""


async def until_gone(request: Request, work: Callable[[], Awaitable[T]]) -> T:
    """`work`'s result; if the client disconnects first, `work` is cancelled (and with it the upstream
    request) and Disconnected raised."""
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
        raise Disconnected()
    return result[0]
