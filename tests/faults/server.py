"""A misbehaving model server: every chat request (OpenAI `/v1/chat/completions` or Ollama `/api/chat`)
gets what the test scripted, however hostile: streams that never end, lines that never break, gzip
bombs, JSON nested without end, redirects, every HTTP status with or without Retry-After.

    with LiveServer(misbehaving_app(lambda n: endless_sse())) as server: ...

`behave(n)` gets the 1-based number of the chat request and returns the starlette Response. Anything
else (discovery) is a 404 unless `discovery` answers it, so `--server openai` (or `ollama`) is how the
CLI is pointed at it.
The app records the chat request bodies it got in `app.state.bodies`.
"""

from __future__ import annotations

import asyncio
import json
import zlib
from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

MiB = 1024 * 1024
Behave = Callable[[int], Response]


def misbehaving_app(behave: Behave, *, discovery: Behave | None = None) -> Starlette:
    """`discovery`, when given, answers every GET (the n-th GET gets n) instead of a 404."""

    async def chat(request: Request) -> Response:
        request.app.state.bodies.append(json.loads(await request.body()))
        return behave(len(request.app.state.bodies))

    async def nothing(request: Request) -> Response:
        if discovery is not None and request.method == "GET":
            request.app.state.gets += 1
            return discovery(request.app.state.gets)
        return JSONResponse({"error": "not here"}, status_code=404)

    app = Starlette(
        routes=[
            Route("/v1/chat/completions", chat, methods=["POST"]),
            Route("/api/chat", chat, methods=["POST"]),
            Route("/{path:path}", nothing, methods=["GET", "POST"]),
        ]
    )
    app.state.bodies = []
    app.state.gets = 0
    return app


# --- well-formed pieces ----------------------------------------------------------------------------


def openai_chunk(text: str = "", finish: str | None = None, delta: dict[str, Any] | None = None) -> bytes:
    delta = delta if delta is not None else ({"content": text} if text else {})
    chunk: dict[str, Any] = {"id": "c", "object": "chat.completion.chunk", "model": "m"}
    chunk["choices"] = [{"index": 0, "delta": delta, "finish_reason": finish}]
    return b"data: " + json.dumps(chunk).encode() + b"\n\n"


def ollama_line(text: str = "", done: bool = False) -> bytes:
    line: dict[str, Any] = {"model": "m", "message": {"role": "assistant", "content": text}, "done": done}
    if done:
        line |= {"done_reason": "stop", "prompt_eval_count": 10, "eval_count": 2}
    return json.dumps(line).encode() + b"\n"


def sse(body: Iterable[bytes] | AsyncIterator[bytes], **headers: str) -> StreamingResponse:
    return StreamingResponse(body, media_type="text/event-stream", headers=headers)


def ndjson(body: Iterable[bytes] | AsyncIterator[bytes], **headers: str) -> StreamingResponse:
    return StreamingResponse(body, media_type="application/x-ndjson", headers=headers)


def ok_sse(text: str = "ok") -> StreamingResponse:
    return sse([openai_chunk(text), openai_chunk(finish="stop"), b"data: [DONE]\n\n"])


def tool_call_sse(*calls: tuple[str, str, str]) -> StreamingResponse:
    """An answer that is only tool calls, each (id, name, JSON arguments)."""
    deltas = [
        openai_chunk(
            delta={
                "tool_calls": [
                    {"index": i, "id": cid, "type": "function", "function": {"name": name, "arguments": args}}
                ]
            }
        )
        for i, (cid, name, args) in enumerate(calls)
    ]
    return sse([*deltas, openai_chunk(finish="tool_calls"), b"data: [DONE]\n\n"])


# --- misbehaviour ----------------------------------------------------------------------------------


async def endless(piece: bytes) -> AsyncIterator[bytes]:
    """`piece` again and again, as fast as the client reads, never an end."""
    burst = piece * max(1, 64 * 1024 // len(piece))
    while True:
        yield burst
        await asyncio.sleep(0)


async def drip(piece: bytes, every: float) -> AsyncIterator[bytes]:
    """One `piece` every `every` seconds, forever: each read is quick, the answer never ends."""
    while True:
        yield piece
        await asyncio.sleep(every)


async def one_line(prefix: bytes, size: int) -> AsyncIterator[bytes]:
    """`prefix` and then `size` bytes without a newline; then the body ends (the connection closes)."""
    yield prefix
    block = b"x" * MiB
    for _ in range(size // MiB):
        yield block
        await asyncio.sleep(0)


def gzip_bomb(inflated: int, block: bytes) -> tuple[bytes, bytes, int]:
    """A gzip stream of `block` repeated to `inflated` bytes, as (header, repeated part, repeats):
    after a full flush deflate starts afresh, so every block compresses to the same bytes."""
    squeeze = zlib.compressobj(9, zlib.DEFLATED, 31)
    first = squeeze.compress(block) + squeeze.flush(zlib.Z_FULL_FLUSH)
    again = squeeze.compress(block) + squeeze.flush(zlib.Z_FULL_FLUSH)
    return first[: len(first) - len(again)], again, inflated // len(block)


async def bomb_body(inflated: int, block: bytes) -> AsyncIterator[bytes]:
    header, part, repeats = gzip_bomb(inflated, block)
    yield header
    for _ in range(repeats):
        yield part
        await asyncio.sleep(0)


def layered_bomb(inflated: int, block: bytes, layers: int) -> bytes:
    """A gzip bomb (`gzip_bomb`) gzipped again `layers - 1` times, whole: each further layer compresses
    the one below it piece by piece, so no layer is ever held inflated, and a few KB hold gigabytes."""
    header, part, repeats = gzip_bomb(inflated, block)
    pieces = [header, *[part] * repeats]
    for _ in range(layers - 1):
        squeeze = zlib.compressobj(9, zlib.DEFLATED, 31)
        pieces = [squeeze.compress(piece) for piece in pieces] + [squeeze.flush()]
    return b"".join(pieces)


def encoded(body: bytes, *codings: str) -> bytes:
    """`body` encoded by each of `codings` in turn (as Content-Encoding lists them): gzip, deflate
    (zlib's format) or raw-deflate (the headerless form some servers send as deflate)."""
    wbits = {"gzip": 31, "deflate": 15, "raw-deflate": -15}
    for coding in codings:
        squeeze = zlib.compressobj(6, zlib.DEFLATED, wbits[coding])
        body = squeeze.compress(body) + squeeze.flush()
    return body


def deep_json(depth: int) -> str:
    return "[" * depth + "]" * depth


def status(code: int, body: str = "", **headers: str) -> Response:
    return Response(body, status_code=code, headers=headers, media_type="application/json")
