"""The canary of SPEC §5: a ~100 KB conversation compacted to a candidate that fits an 8k window.

A task marker sits in the first user message; dozens of tool exchanges (code, JSON, logs) follow. The
governor compacts through its transaction (checkpoint, summary request sized to fit, recount) and the
candidate must fit `available` with the marker intact. Bytes and tokens are different units, so both
are reported before and after.
"""

from __future__ import annotations

import json
import random
import sys
from dataclasses import dataclass

from aforo.context.budget import Budget
from aforo.context.governor import GovernedLane, Governor
from aforo.context.memory_journal import MemoryJournal
from aforo.context.policy import Policy
from aforo.context.tokens import conversation_bytes
from aforo.events import discard
from aforo.messages import Message, Request, SystemPart, ToolResult, ToolUse
from aforo.providers.fake import FakeProvider, FakeTurn

MARKER = "CANARY-5531"
TARGET_BYTES = 100_000


@dataclass(frozen=True)
class CanaryResult:
    bytes_before: int
    bytes_after: int
    tokens_before: int
    tokens_after: int
    available: int
    marker_intact: bool
    summary_prompt_tokens: int


VERBS = ("load", "save", "parse", "render", "fetch", "merge", "validate", "expire", "refresh", "lookup")
NOUNS = ("user", "session", "token", "order", "invoice", "cart", "price", "profile", "report", "index")
LEVELS = ("INFO", "INFO", "INFO", "WARN", "ERROR", "DEBUG")
EVENTS = (
    "cache miss key={key}",
    "cache hit key={key} age={n}s",
    "evicted key={key} reason=ttl",
    "request GET /api/{noun}/{n} took {ms} ms",
    "worker {n} restarted after {ms} ms",
    "config reloaded: ttl={n}",
)


def _code(rnd: random.Random, i: int) -> str:
    """A module of small, different cache-using functions, like the code a session reads."""
    parts = [f'"""Handlers of area {i}."""\n\nfrom app.cache import cache\nfrom app.store import store\n']
    for _ in range(14):
        verb, noun, ttl = rnd.choice(VERBS), rnd.choice(NOUNS), rnd.choice((0, 5, 30, 60, 300))
        parts.append(
            f"\ndef {verb}_{noun}_{rnd.randint(1, 999)}(req, ttl={ttl}):\n"
            f'    key = f"{noun}:{{req.id}}:{{req.{rnd.choice(NOUNS)}}}"\n'
            f"    value = cache.get(key)\n"
            f"    if value is None or req.{rnd.choice(('fresh', 'force', 'debug'))}:\n"
            f'        value = store.{verb}("{noun}", req.id)\n'
            f"        cache.set(key, value, ttl=ttl{rnd.choice(('', ' * 2', ' // 2', ' + 1'))})\n"
            f"    return value\n"
        )
    return "".join(parts)


def build_conversation(seed: int = 5) -> list[Message]:
    """A ~100 KB session: the task (with the marker) first, then tool exchanges of code, JSON and logs
    that differ from each other as a real session's do."""
    rnd = random.Random(seed)
    messages = [
        Message.user(f"{MARKER}: find why the cache is invalidated on every request. Never edit files.")
    ]
    i = 0
    while conversation_bytes(messages) < TARGET_BYTES:
        kind = i % 3
        if kind == 0:
            body = _code(rnd, i)
            use = ToolUse(f"c{i}", "Read", {"file_path": f"src/handlers_{i}.py"})
        elif kind == 1:
            rows = [
                {
                    "key": f"{rnd.choice(NOUNS)}:{rnd.randint(1, 9999)}",
                    "hits": rnd.randint(0, 999),
                    "misses": rnd.randint(0, 99),
                    "ttl": rnd.choice((0, 5, 30, 60, 300)),
                    "owner": rnd.choice(VERBS),
                }
                for _ in range(25)
            ]
            body = json.dumps(rows, indent=1)
            use = ToolUse(f"c{i}", "Grep", {"pattern": "ttl", "path": f"data/{i}.json"})
        else:
            lines = []
            for n in range(35):
                event = rnd.choice(EVENTS).format(
                    key=f"{rnd.choice(NOUNS)}:{rnd.randint(1, 9999)}",
                    n=rnd.randint(1, 300),
                    noun=rnd.choice(NOUNS),
                    ms=rnd.randint(2, 2500),
                )
                lines.append(f"2026-11-05T10:{n:02d}:{rnd.randint(0, 59):02d} {rnd.choice(LEVELS)} {event}")
            body = "\n".join(lines)
            use = ToolUse(f"c{i}", "Read", {"file_path": f"logs/app_{i}.log"})
        messages += [Message("assistant", (use,)), Message("user", (ToolResult(use.id, body),))]
        i += 1
    return messages


def run_canary() -> CanaryResult:
    messages = build_conversation()
    summary = (
        f"Goal: {MARKER} find why the cache is invalidated on every request.\n"
        "Constraints: never edit files.\nDecisions: handlers read with a default TTL of 30 s.\n"
        "Evidence: src/handlers_*.py return cache.get with a per-handler default; logs show misses.\n"
        "Next action: compare the TTL in data/*.json with the handlers' defaults."
    )
    provider = FakeProvider(lambda request: FakeTurn(summary))
    budget = Budget(8192)
    governor = Governor(GovernedLane(budget=budget), policy=Policy(), journal=MemoryJournal(), emit=discard)
    system = (SystemPart("You are a read-only coding assistant.", "system prompt"),)
    request = Request("m", system, (), tuple(messages), budget.reserve)
    governor.conversation.replace(messages)
    before = governor.count(request).tokens
    governor.compact_now(request, provider)
    compacted = governor.conversation.messages
    after = governor.count(request.with_messages(compacted)).tokens
    summary_request = provider.requests[-1]
    return CanaryResult(
        bytes_before=conversation_bytes(messages),
        bytes_after=conversation_bytes(compacted),
        tokens_before=before,
        tokens_after=after,
        available=budget.available,
        marker_intact=MARKER in compacted[0].text,
        summary_prompt_tokens=provider.input_tokens(summary_request),
    )


def main() -> int:
    r = run_canary()
    print("canary (SPEC §5): a ~100 KB conversation compacted for an 8k window")
    print(f"  before: {r.bytes_before} bytes, {r.tokens_before} tokens")
    print(f"  summary request: {r.summary_prompt_tokens} prompt tokens (must fit {r.available})")
    print(f"  after:  {r.bytes_after} bytes, {r.tokens_after} tokens (available {r.available})")
    print(f"  marker intact: {r.marker_intact}")
    ok = r.marker_intact and r.tokens_after <= r.available and r.summary_prompt_tokens <= r.available
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
