"""The watch's probe measures what the conversation's prompt really grew by, constrained framing included.

A constrained request repeats the run's question after its newest results (aforo.reply_format.render). On the
next turn those results are no longer the newest: the question moves to the end, so the prompt grows by
the new messages alone. A probe that counted the question as new content would take a clean turn for a
truncated one.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

from aforo.context.counting import Meter
from aforo.context.watch import Observation, Watch
from aforo.messages import Message, MessageEnd, Request, ToolResult, ToolUse, Usage
from aforo.reply_format import wire_messages
from aforo.tools.registry import default_registry

QUESTION = "Read the two reports and tell me which of the nodes crashed more often, and when it did."
TOOLS = default_registry(Path(".")).specs


class RenderingServer:
    """A server without a counter: it reads the constrained wire messages as one text (a turn is
    `<|role|>\ncontent<|end|>\n`, the prompt ends with the assistant's header) and reports a token per
    four characters. Past its `window` it drops turns: the oldest after the system prompt (`keep_first`
    False, as Ollama does) or the one after the first user turn (True, truncate-middle). Like
    llama-server it reports how many of the prompt's first tokens it took from its cache: the text it
    shares with the last prompt that began the same way (a request without the conversation's system
    prompt, as a probe is, is served from another slot and evicts nothing)."""

    name = "rendering"
    model = "m"

    def __init__(self, window: int = 1 << 20, *, keep_first: bool = False) -> None:
        self.window = window
        self.keep_first = keep_first
        self.requests: list[Request] = []
        self._slots: dict[str, str] = {}

    def read(self, request: Request) -> list[str]:
        turns = [f"<|{t['role']}|>\n{t['content']}<|end|>\n" for t in wire_messages(request)]
        first = 2 if self.keep_first else 1
        while len(prompt(turns)) // 4 > self.window and len(turns) > first + 1:
            del turns[first]
        return turns

    def stream(self, request: Request, cancel: threading.Event | None = None) -> Iterator[MessageEnd]:
        self.requests.append(request)
        turns = self.read(request)
        text, slot = prompt(turns), turns[0]
        cached = shared(text, self._slots.get(slot, "")) // 4
        self._slots[slot] = text
        tokens = len(text) // 4
        yield MessageEnd(Usage(tokens - cached, cache_read_tokens=cached, output_tokens=1), "end_turn")


def prompt(turns: list[str]) -> str:
    return "".join(turns) + "<|assistant|>\n"


def shared(a: str, b: str) -> int:
    """How many characters `a` and `b` begin with in common."""
    return next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))


def read_step(call_id: str, path: str, lines: int) -> tuple[Message, Message]:
    use = ToolUse(call_id, "Read", {"file_path": path})
    body = "\n".join(f"{n}\t12:{n:02d} db-{n % 7} ok: job finished in {n * 7} s" for n in range(lines))
    return Message("assistant", (use,)), Message("user", (ToolResult(call_id, body),))


def constrained(messages: tuple[Message, ...]) -> Request:
    return Request(
        "m",
        (),
        TOOLS,
        messages,
        1024,
        temperature=0.0,
        constrained=True,
        answer_only=False,
        question=QUESTION,
    )


def probed(server: RenderingServer) -> bool:
    return any(r.max_tokens == 1 for r in server.requests)


def last_turn(server: RenderingServer) -> Request:
    return [r for r in server.requests if r.max_tokens != 1][-1]


def reads(server: RenderingServer, *lines: int) -> Observation:
    """The question alone, judged good; then a read per `lines`, the last a large one, which may have
    crossed a 2048-token window: on a server that reports its cache hit, that hit may settle it. What
    the watch concluded of the last."""
    said: list[object] = []
    watch = Watch(Meter(None, said.append), said.append, window_known=False)
    messages: tuple[Message, ...] = (Message.user(QUESTION),)
    for n in (0, *lines):
        if n:
            messages = (*messages, *read_step(f"c{len(messages)}", f"reports/day{len(messages):02d}.txt", n))
        request = constrained(messages)
        seen = watch.observe(request, next(server.stream(request)), server, None, 8192)
        assert n == lines[-1] or not seen.truncated
    return seen


def middle_dropped(*lines: int) -> tuple[RenderingServer, Observation]:
    """A truncate-middle server whose window falls a few tokens short of the last request: it drops the
    turn after the question (the first call)."""
    full = RenderingServer()
    reads(full, *lines)
    server = RenderingServer(window=len(prompt(full.read(last_turn(full)))) // 4 - 5, keep_first=True)
    return server, reads(server, *lines)


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
    assert probed(server), "the suspicion was measured"
    return seen


def test_a_second_read_is_not_taken_for_a_truncation_when_the_question_moves() -> None:
    seen = second_read(RenderingServer(), 120)
    assert not seen.truncated, seen.message


def test_a_second_read_that_drops_the_question_is_still_caught() -> None:
    # Just over a 2048 window: the server drops the first message (the user's question).
    server = RenderingServer(window=2048)
    seen = second_read(server, 175)
    assert len(server.read(server.requests[1])) < len(wire_messages(server.requests[1]))
    assert seen.truncated


def test_a_cache_hit_over_the_whole_previous_prompt_settles_a_crossing_without_a_probe() -> None:
    server = RenderingServer()
    seen = reads(server, 175)
    assert not seen.truncated, seen.message
    assert not probed(server), "the cache showed the question was read: nothing to measure"


def test_without_a_cache_report_the_same_crossing_is_measured() -> None:
    class Uncached(RenderingServer):
        def stream(self, request: Request, cancel: threading.Event | None = None) -> Iterator[MessageEnd]:
            end = next(super().stream(request, cancel))
            yield MessageEnd(Usage(end.usage.prompt_tokens, output_tokens=1), "end_turn")

    server = Uncached()
    assert not reads(server, 175).truncated
    assert probed(server)


def test_a_keep_newest_drop_leaves_a_cache_hit_of_the_system_prompt_alone_and_is_caught() -> None:
    server = RenderingServer(window=2048)
    seen = reads(server, 185)
    kept = server.read(last_turn(server))
    assert len(kept) < len(wire_messages(last_turn(server))) and not kept[1].startswith("<|user|>\nRead")
    assert probed(server)
    assert seen.truncated


def test_a_truncate_middle_drop_keeps_the_question_but_the_cache_hit_stops_there_and_it_is_caught() -> None:
    server, seen = middle_dropped(175)
    kept = server.read(last_turn(server))
    assert kept[1].startswith("<|user|>\nRead the two") and kept[2].startswith("<|user|>"), kept[:3]
    assert probed(server)
    assert seen.truncated


def test_a_truncate_middle_drop_after_a_short_result_is_caught_though_the_hit_nears_the_prompt_end() -> None:
    # The first call and its one-line result weigh less than what the question repeated after that
    # result may weigh: the hit reaches as far as a clean turn's could. It stops before the end of the
    # first call, which a clean turn's passes.
    server, seen = middle_dropped(1, 175)
    assert len(server.read(last_turn(server))) == len(wire_messages(last_turn(server))) - 1
    assert probed(server)
    assert seen.truncated


def test_the_question_a_prompt_repeated_after_its_results_may_be_missing_from_the_cache_hit() -> None:
    # The hit stops where that question began (it is at the end now); the results before it were read.
    server = RenderingServer()
    seen = reads(server, 8, 175)
    assert not seen.truncated, seen.message
    assert not probed(server)
