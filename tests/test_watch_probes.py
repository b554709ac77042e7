"""The watch's probe measures what the conversation's prompt really grew by, constrained framing included.

A constrained request repeats the run's question after its newest results (aforo.steps.render). On the
next turn those results are no longer the newest: the question moves to the end, so the prompt grows by
the new messages alone. A probe that counted the question as new content would take a clean turn for a
truncated one.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterator
from pathlib import Path

from aforo.context.counting import Meter
from aforo.context.watch import Observation, Watch
from aforo.messages import Message, MessageEnd, Request, ToolResult, ToolUse, Usage
from aforo.steps import wire_messages
from aforo.tools.registry import default_registry

QUESTION = "Read the two reports and tell me which of the nodes crashed more often, and when it did."
TOOLS = default_registry(Path(".")).specs


class RenderingServer:
    """A server without a counter: it reports the tokens of what it read of the constrained wire messages
    (a token per four characters, four more per message); past its `window` it drops the oldest turns."""

    name = "rendering"
    model = "m"

    def __init__(self, window: int = 1 << 20) -> None:
        self.window = window
        self.requests: list[Request] = []

    def tokens(self, request: Request) -> int:
        """Keep-newest, as Ollama drops: the oldest turns after the system prompt go until it fits."""
        sizes = [math.ceil(len(t["content"]) / 4) + 4 for t in wire_messages(request)]
        while sum(sizes) > self.window and len(sizes) > 2:
            del sizes[1]
        return sum(sizes)

    def stream(self, request: Request, cancel: threading.Event | None = None) -> Iterator[MessageEnd]:
        self.requests.append(request)
        yield MessageEnd(Usage(self.tokens(request), output_tokens=1), "end_turn")


def read_step(call_id: str, path: str, lines: int) -> tuple[Message, Message]:
    use = ToolUse(call_id, "Read", {"file_path": path})
    body = "\n".join(f"{n}\t12:{n:02d} db-{n % 7} ok: job finished in {n * 7} s" for n in range(lines))
    return Message("assistant", (use,)), Message("user", (ToolResult(call_id, body),))


def constrained(messages: tuple[Message, ...]) -> Request:
    return Request("m", (), TOOLS, messages, 1024, 0.0, True, False, QUESTION)


def second_read(server: RenderingServer, lines: int) -> Observation:
    """A first read, judged good; then a large second read from a short conversation, which may have
    crossed a 2048-token window: the watch measures the new messages alone. What it concluded."""
    said: list[object] = []
    watch = Watch(Meter(None, said.append), said.append, window_known=False)
    first = (Message.user(QUESTION), *read_step("a", "reports/day01.txt", 8))
    prev = constrained(first)
    assert not watch.observe(prev, next(server.stream(prev)), server, None, 8192).truncated
    cur = constrained((*first, *read_step("b", "reports/day02.txt", lines)))
    seen = watch.observe(cur, next(server.stream(cur)), server, None, 8192)
    assert any(r.max_tokens == 1 for r in server.requests), "the suspicion was measured"
    return seen


def test_a_second_read_is_not_taken_for_a_truncation_when_the_question_moves() -> None:
    seen = second_read(RenderingServer(), 120)
    assert not seen.truncated, seen.message


def test_a_second_read_that_drops_the_question_is_still_caught() -> None:
    # 2 076 tokens in a 2048 window: the server drops the first message (the user's question, 38 tokens).
    seen = second_read(RenderingServer(window=2048), 175)
    assert seen.truncated
