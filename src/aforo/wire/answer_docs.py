"""An upstream answer as the gateway relays it, in one call: its lines, each with the JSON documents it
completes, its end read on the way (`answer_end.AnswerReading`). `answer_lines` reads a streamed answer
line by line as it arrives, `held_answer` one held whole before the client sees it. The bytes are
inflated and counted as `inflate` and `bounded` count them (every Content-Encoding layer against the
answer's budget), the lines cut by `lines`' rules, in both dialects: OpenAI's one JSON completion or SSE
stream, Ollama's one JSON object or NDJSON lines.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx

from aforo.wire.answer_end import AnswerReading
from aforo.wire.bounded import AnswerBudget
from aforo.wire.inflate import decoded_async
from aforo.wire.lines import Lines


async def answer_lines(
    response: httpx.Response, budget: AnswerBudget, reading: AnswerReading
) -> AsyncIterator[tuple[str, list[Any]]]:
    """Each line of a streamed `response` as it arrives, with the documents it completes (fed to
    `reading` on the way)."""
    async for line in _lines(response, budget):
        yield line, reading.line(line)


async def held_answer(
    response: httpx.Response, budget: AnswerBudget, reading: AnswerReading, *, whole: bool
) -> tuple[list[str], list[Any]]:
    """All the lines of `response` and the documents they hold, fed to `reading`: line by line, or,
    `whole`, as one document (OpenAI's completion)."""
    lines = [line async for line in _lines(response, budget)]
    if whole:
        return lines, reading.whole("\n".join(lines))
    return lines, [doc for line in lines for doc in reading.line(line)]


async def _lines(response: httpx.Response, budget: AnswerBudget) -> AsyncIterator[str]:
    """The lines of a streamed `response`: every decoding layer counted against `budget`, each line
    within `stream_line_bytes`."""
    split = Lines(budget.url)
    async for piece in decoded_async(response, budget.url, budget.spend):
        for line in split.feed(piece):
            yield line
    for line in split.close():
        yield line
