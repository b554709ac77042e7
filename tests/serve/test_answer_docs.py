"""The gateway's one call into wire/ for an upstream answer: its lines as they came (what the client is
relayed), each with the documents it completes, and its end read on the way, in both dialects; a held
answer the same, or as one document when it came whole. Over real HTTP on 127.0.0.1, gzip included."""

from __future__ import annotations

import asyncio
import gzip
import json
from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from aforo.wire.answer_docs import answer_lines, held_answer
from aforo.wire.answer_end import AnswerReading
from aforo.wire.bounded import AnswerBudget
from support.live_server import LiveServer

SSE = (
    'data: {"model": "m", "choices": [{"index": 0, "delta": {"content": "hi"}}]}\n\n'
    'data: {"model": "m", "choices": [{"index": 0, "delta": {}, "finish_reason": "length"}],\n'
    'data:  "usage": {"prompt_tokens": 11, "completion_tokens": 2}}\n\n'
    "data: [DONE]\n\n"
)
NDJSON = (
    '{"model": "m", "message": {"content": "hi"}, "done": false}\n'
    "not json\n"
    '{"model": "m", "message": {"content": ""}, "done": true, "prompt_eval_count": 7, "eval_count": 1}\n'
)
WHOLE = (
    '{"model": "m",\n"choices": [{"message": {"content": "hi"}, "finish_reason": "stop"}],\n'
    '"usage": {"prompt_tokens": 5}}'
)


def app() -> Starlette:
    async def body(request: Request) -> Response:
        text = {"sse": SSE, "ndjson": NDJSON, "whole": WHOLE}[request.path_params["kind"]]
        return Response(gzip.compress(text.encode()), headers={"content-encoding": "gzip"})

    return Starlette(routes=[Route("/{kind}", body)])


def read(url: str, api: str, *, held: bool = False, whole: bool = False) -> tuple[list[Any], AnswerReading]:
    async def go() -> tuple[list[Any], AnswerReading]:
        reading = AnswerReading(api)
        async with httpx.AsyncClient() as client, client.stream("GET", url) as resp:
            budget = AnswerBudget(url, 100, 10.0)
            if held:
                return [await held_answer(resp, budget, reading, whole=whole)], reading
            return [pair async for pair in answer_lines(resp, budget, reading)], reading

    return asyncio.run(go())


def test_a_streamed_sse_answer_comes_back_line_by_line_with_its_documents_and_its_end() -> None:
    with LiveServer(app()) as server:
        pairs, reading = read(f"{server.url}/sse", "openai")
    assert [line for line, _ in pairs] == SSE.removesuffix("\n").split("\n")
    docs = [doc for _, found in pairs for doc in found]
    assert [d["choices"][0].get("finish_reason") for d in docs] == [None, "length"]
    assert dict(pairs)[""] == []  # the blank line after [DONE] completes nothing
    end = reading.end()
    assert (end.usage.input_tokens, end.usage.output_tokens, end.stop_reason) == (11, 2, "max_tokens")
    assert reading.finished


def test_ndjson_lines_come_back_each_with_its_object_and_one_that_is_not_json_with_none() -> None:
    with LiveServer(app()) as server:
        pairs, reading = read(f"{server.url}/ndjson", "ollama_chat")
    assert [line for line, _ in pairs] == NDJSON.splitlines()
    assert [found for _, found in pairs][1] == [None]
    assert reading.finished and reading.end().usage.input_tokens == 7


def test_a_held_answer_is_all_its_lines_and_its_documents_line_by_line_or_whole() -> None:
    with LiveServer(app()) as server:
        [(lines, docs)], reading = read(f"{server.url}/ndjson", "ollama_chat", held=True)
        assert lines == NDJSON.splitlines() and len(docs) == 3 and reading.end().usage.output_tokens == 1
        [(lines, docs)], reading = read(f"{server.url}/whole", "openai", held=True, whole=True)
    assert lines == WHOLE.split("\n")
    assert docs == [json.loads(WHOLE)] and reading.end().usage.input_tokens == 5
