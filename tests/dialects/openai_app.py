"""A scriptable OpenAI-compatible server: POST /v1/chat/completions and GET /v1/models.

A responder gets each request's parsed JSON body and returns what to answer:

- `Reply`: a streamed answer (text in a few deltas, tool calls split across deltas, a finish reason or
  none, a usage chunk or none, cached tokens, llama.cpp timings), or a plain JSON completion when the
  request did not ask to stream or `json=True` (a server that ignores `stream`);
- `Failure`: an HTTP error status with a body (every server's overflow dialect, 404, 500 ...);
- `Raw`: exact bytes of an event stream (malformed SSE, non-JSON data, an empty 200 stream).

`Script(*answers)` is a responder that plays answers in order and records the bodies it saw.

    with LiveServer(make_openai_app(Script(Reply(text="hi")))) as server:
        provider = OpenAICompatProvider(server.url + "/v1", "test-model")
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route


@dataclass(frozen=True)
class Call:
    """A tool call as the server streams it."""

    name: str
    arguments: str = "{}"
    id: str | None = None  # None: a fresh id, unique in this process (like a real server's)
    pieces: int = 3  # the arguments arrive in this many fragments
    split_header: bool = False  # the id and the name themselves arrive in two pieces


@dataclass(frozen=True)
class Reply:
    text: str = ""
    calls: Sequence[Call] = ()
    finish: str | None = "auto"  # "auto": tool_calls when there are calls, else stop; None: never sent
    usage: bool = True  # False: no usage anywhere (a server that ignores include_usage)
    prompt_tokens: int = 20
    completion_tokens: int = 5
    cached_tokens: int | None = None
    timings: dict[str, Any] | None = None  # llama-server puts these in its last chunk
    usage_in_finish_chunk: bool = False  # llama-server style; else a separate chunk with empty choices
    interleave: bool = False  # fragments of parallel calls alternate
    done: bool = True  # send `data: [DONE]`
    json: bool = False  # answer with one JSON completion even if the request asked to stream
    delay: float = 0.0  # seconds before the headers
    stall: float = 0.0  # seconds before each chunk


@dataclass(frozen=True)
class Failure:
    status: int
    body: str
    content_type: str = "application/json"


@dataclass(frozen=True)
class Raw:
    """An exact response body, e.g. `data: {not json}\\n\\n` or "" for an empty stream."""

    body: str
    status: int = 200
    content_type: str = "text/event-stream"


Answer = Reply | Failure | Raw
Responder = Callable[[dict[str, Any]], Answer]


class Script:
    """Plays `answers` in order, one per request; `bodies` holds every request body seen."""

    def __init__(self, *answers: Answer) -> None:
        self.answers = list(answers)
        self.bodies: list[dict[str, Any]] = []

    def __call__(self, body: dict[str, Any]) -> Answer:
        self.bodies.append(body)
        if not self.answers:
            return Failure(500, json.dumps({"error": {"message": "test script exhausted", "code": 500}}))
        return self.answers.pop(0)


def _finish(reply: Reply) -> str | None:
    if reply.finish == "auto":
        return "tool_calls" if reply.calls else "stop"
    return reply.finish


def _split(text: str, pieces: int) -> list[str]:
    size = max(1, -(-len(text) // max(1, pieces)))
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def _usage(reply: Reply) -> dict[str, Any]:
    usage: dict[str, Any] = {
        "prompt_tokens": reply.prompt_tokens,
        "completion_tokens": reply.completion_tokens,
        "total_tokens": reply.prompt_tokens + reply.completion_tokens,
    }
    if reply.cached_tokens is not None:
        usage["prompt_tokens_details"] = {"cached_tokens": reply.cached_tokens}
    return usage


_ids = itertools.count(1)


def _call_id(call: Call) -> str:
    return call.id or f"call_{next(_ids):04d}"


def _call_deltas(calls: Sequence[Call], interleave: bool) -> list[dict[str, Any]]:
    per_call: list[list[dict[str, Any]]] = []
    for i, call in enumerate(calls):
        cid = _call_id(call)
        if call.split_header:
            h = len(cid) // 2
            n = len(call.name) // 2
            head = [
                {"index": i, "id": cid[:h], "type": "function", "function": {"name": call.name[:n]}},
                {"index": i, "id": cid[h:], "function": {"name": call.name[n:], "arguments": ""}},
            ]
        else:
            head = [
                {"index": i, "id": cid, "type": "function", "function": {"name": call.name, "arguments": ""}}
            ]
        frags = [{"index": i, "function": {"arguments": f}} for f in _split(call.arguments, call.pieces)]
        per_call.append(head + frags)
    if not interleave:
        return [d for deltas in per_call for d in deltas]
    out: list[dict[str, Any]] = []
    for row in range(max((len(d) for d in per_call), default=0)):
        out.extend(deltas[row] for deltas in per_call if row < len(deltas))
    return out


def stream_chunks(reply: Reply, model: str) -> list[dict[str, Any]]:
    """The chunk objects of a streamed reply, in order (without the `[DONE]` sentinel)."""

    def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
        base: dict[str, Any] = {"id": "chatcmpl-test", "object": "chat.completion.chunk", "model": model}
        base["choices"] = [{"index": 0, "delta": delta, "finish_reason": finish}]
        if reply.usage:
            base["usage"] = None  # OpenAI sends null usage on every chunk but the last
        return {**base, **extra}

    chunks = [chunk({"role": "assistant", "content": ""})]
    chunks += [chunk({"content": piece}) for piece in _split(reply.text, 3) if piece]
    chunks += [chunk({"tool_calls": [d]}) for d in _call_deltas(reply.calls, reply.interleave)]
    finish = _finish(reply)
    if finish is not None:
        extra: dict[str, Any] = {}
        if reply.timings is not None:
            extra["timings"] = reply.timings
        if reply.usage and reply.usage_in_finish_chunk:
            extra["usage"] = _usage(reply)
        chunks.append(chunk({}, finish, **extra))
    if reply.usage and not reply.usage_in_finish_chunk:
        chunks.append({"id": "chatcmpl-test", "model": model, "choices": [], "usage": _usage(reply)})
    return chunks


def completion_json(reply: Reply, model: str) -> dict[str, Any]:
    """The same reply as one non-streamed chat completion."""
    message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
    if reply.calls:
        message["tool_calls"] = [
            {"id": _call_id(c), "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in reply.calls
        ]
    out: dict[str, Any] = {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": _finish(reply)}],
    }
    if reply.usage:
        out["usage"] = _usage(reply)
    if reply.timings is not None:
        out["timings"] = reply.timings
    return out


async def _sse(reply: Reply, model: str) -> AsyncIterator[str]:
    for chunk in stream_chunks(reply, model):
        if reply.stall:
            await asyncio.sleep(reply.stall)
        yield f"data: {json.dumps(chunk)}\n\n"
    if reply.done:
        yield "data: [DONE]\n\n"


async def respond(answer: Answer, body: dict[str, Any]) -> Response:
    """The HTTP response for one scripted answer to a chat request with `body`."""
    if isinstance(answer, Failure):
        return Response(answer.body, status_code=answer.status, media_type=answer.content_type)
    if isinstance(answer, Raw):
        return Response(answer.body, status_code=answer.status, media_type=answer.content_type)
    if answer.delay:
        await asyncio.sleep(answer.delay)
    model = str(body.get("model", "test-model"))
    if answer.json or not body.get("stream"):
        return JSONResponse(completion_json(answer, model))
    return StreamingResponse(_sse(answer, model), media_type="text/event-stream")


def models_endpoint(models: Mapping[str, int | None], window_field: str) -> Callable[[Request], Any]:
    """GET /v1/models listing `models`, each with its window under `window_field` when given."""

    async def handler(_: Request) -> Response:
        data = []
        for name, window in models.items():
            entry: dict[str, Any] = {"id": name, "object": "model", "created": 0, "owned_by": "aforo-tests"}
            if window is not None:
                entry[window_field] = window
            data.append(entry)
        return JSONResponse({"object": "list", "data": data})

    return handler


async def read_body(request: Request) -> dict[str, Any] | Response:
    try:
        body = json.loads(await request.body())
    except ValueError:
        return JSONResponse({"error": {"message": "body is not JSON", "code": 400}}, status_code=400)
    if not isinstance(body, dict):
        return JSONResponse({"error": {"message": "body is not an object", "code": 400}}, status_code=400)
    return body


def make_openai_app(
    responder: Responder,
    *,
    models: Mapping[str, int | None] | None = None,
    window_field: str = "max_model_len",
    headers: list[dict[str, str]] | None = None,
) -> Starlette:
    """An OpenAI-compatible app; `models` maps model ids to their window (None: not reported).

    `headers`, when given, receives the headers of every chat request (to check the API key).
    """

    async def chat(request: Request) -> Response:
        if headers is not None:
            headers.append(dict(request.headers))
        body = await read_body(request)
        if isinstance(body, Response):
            return body
        return await respond(responder(body), body)

    listing = models if models is not None else {"test-model": None}
    return Starlette(
        routes=[
            Route("/v1/chat/completions", chat, methods=["POST"]),
            Route("/v1/models", models_endpoint(listing, window_field), methods=["GET"]),
        ]
    )
