"""Context accounting + stage decision per turn, for conversations of 100, 1 000 and 5 000 messages.

Each turn appends an assistant tool call and its result (mixed code / JSON / prose), then times what
the governor does before and after a model call: count the request, decide on the stages, admit, and
judge the reported usage. The window is large enough that no stage fires, so this is the per-turn
cost every request pays. Prints the median per turn at each size and how it grows (target: under
5 ms at 5 000 messages, and linear or better).
"""

from __future__ import annotations

import json
import random
import statistics
import sys
import time

from aforo.context.budget import Budget
from aforo.context.governor import GovernedLane, Governor
from aforo.context.memory_journal import MemoryJournal
from aforo.context.policy import Policy
from aforo.context.tokens import estimate_request
from aforo.events import discard
from aforo.messages import Message, MessageEnd, Request, SystemPart, ToolResult, ToolUse, Usage
from aforo.providers.fake import FakeProvider, FakeTurn

SIZES = (100, 1000, 5000)
MEASURED_TURNS = 50


def content(rnd: random.Random, i: int) -> str:
    kind = i % 3
    if kind == 0:
        return "".join(f"def f{i}_{n}(x):\n    return x + {n}\n" for n in range(rnd.randint(5, 40)))
    if kind == 1:
        return json.dumps({"items": [{"id": n, "name": f"item-{n}", "ok": n % 2 == 0} for n in range(30)]})
    return " ".join(rnd.choice(["the", "window", "server", "context", "token", "lost"]) for _ in range(200))


def exchange(rnd: random.Random, i: int) -> list[Message]:
    use = ToolUse(f"c{i}", "Read", {"file_path": f"src/m{i}.py"})
    return [Message("assistant", (use,)), Message("user", (ToolResult(use.id, content(rnd, i)),))]


def per_turn_ms(size: int) -> float:
    rnd = random.Random(size)
    messages: list[Message] = [Message.user("Find where the window is lost.")]
    while len(messages) < size - 2 * MEASURED_TURNS:
        messages += exchange(rnd, len(messages))
    governor = Governor(
        GovernedLane(budget=Budget(100_000_000, 8192)), policy=Policy(), journal=MemoryJournal(), emit=discard
    )
    provider = FakeProvider(lambda request: FakeTurn(""))  # answers the rare crossing probes
    system = (SystemPart("You are a test assistant.", "system prompt"),)
    timings = []
    conversation = governor.conversation
    conversation.replace(messages)
    for _turn in range(MEASURED_TURNS):
        for message in exchange(rnd, len(conversation.messages)):
            conversation.append(message)
        request = Request("m", system, (), conversation.messages, 8192)
        reported = estimate_request(request)  # what a server would say; computed outside the timing
        started = time.perf_counter()
        admitted = governor.admit(request, provider)
        governor.observe(admitted, MessageEnd(Usage(reported), "tool_use"), provider)
        timings.append((time.perf_counter() - started) * 1000)
    return statistics.median(timings)


def main() -> int:
    print("context accounting + stage decision per turn (median of 50 turns)")
    results = {size: per_turn_ms(size) for size in SIZES}
    for size, ms in results.items():
        print(f"  {size:>5} messages: {ms:7.3f} ms/turn")
    growth = results[SIZES[-1]] / max(results[SIZES[0]], 1e-9)
    size_growth = SIZES[-1] / SIZES[0]
    print(f"  growth 100 -> 5000 messages: x{growth:.1f} for x{size_growth:.0f} messages")
    ok = results[SIZES[-1]] < 5.0 and growth <= size_growth * 1.2
    print(f"  target (< 5 ms at 5000, linear or better): {'met' if ok else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
