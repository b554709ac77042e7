"""Run the tool calls of one assistant message: concurrently, capped (stage 1), results in the order
the model asked for them.

Small models sometimes repeat the same call many times in one message (seen with Qwen2.5-Coder 0.5B:
eighteen identical Reads). Each distinct call runs once; a repeat gets a one-line result pointing at the
first, so the transcript stays well-formed (every call has its result) without paying for the output
again.
"""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from aforo.context.stages import cap_text
from aforo.context.tokens import CHARS_PER_TOKEN
from aforo.messages import Message, ToolResult, ToolUse
from aforo.protocols import ToolOutput
from aforo.tools.registry import ToolRegistry

MAX_WORKERS = 8


@dataclass(frozen=True)
class CallOutcome:
    use: ToolUse
    result: ToolResult
    duration_ms: float
    truncated: bool
    error: str | None


def _key(use: ToolUse) -> str:
    return use.name + json.dumps(use.input, sort_keys=True, ensure_ascii=False)


def answered_calls(messages: list[Message]) -> dict[str, str]:
    """Calls whose successful, uncleared result is still in the conversation: key -> tool_use id."""
    results = {r.tool_use_id for m in messages for r in m.tool_results if not r.cleared and not r.is_error}
    return {_key(u): u.id for m in messages for u in m.tool_uses if u.id in results}


def run_batch(
    tools: ToolRegistry,
    uses: list[ToolUse],
    *,
    cap_tokens: int,
    ratio: float,
    answered: dict[str, str] | None = None,
) -> list[CallOutcome]:
    """`answered` holds calls already answered earlier in the conversation: a small model that loops
    on the same Read gets a pointer to the result it already has instead of the output again."""
    max_chars = int(cap_tokens * CHARS_PER_TOKEN / max(ratio, 0.05))
    answered = answered or {}
    first: dict[str, ToolUse] = {}
    for use in uses:
        first.setdefault(_key(use), use)
    distinct = [u for k, u in first.items() if k not in answered]

    def run_one(use: ToolUse) -> tuple[ToolOutput, float]:
        started = time.monotonic()
        raw = use.input.get("_raw_arguments")
        args: str | dict[str, object] = raw if isinstance(raw, str) else use.input
        output = tools.execute(use.name, args, max_chars=max_chars)
        return output, (time.monotonic() - started) * 1000

    ran: dict[str, tuple[ToolOutput, float]] = {}
    if distinct:
        with ThreadPoolExecutor(max_workers=min(MAX_WORKERS, len(distinct))) as pool:
            ran = dict(zip((u.id for u in distinct), pool.map(run_one, distinct), strict=True))
    outcomes = []
    for use in uses:
        earlier = answered.get(_key(use))
        if earlier is not None:
            note = (
                f"[Already done: this is the same call as {earlier} earlier in this conversation, and its "
                "result is above. Answer from it, or call a different tool.]"
            )
            outcomes.append(CallOutcome(use, ToolResult(use.id, note), 0.0, False, None))
            continue
        original = first[_key(use)]
        output, ms = ran[original.id]
        error = output.content.splitlines()[0] if output.is_error and output.content else None
        if original is not use:
            note = f"[Same call as {original.id} in this message: see its result.]"
            outcomes.append(CallOutcome(use, ToolResult(use.id, note, output.is_error), 0.0, False, error))
            continue
        capped = cap_text(output.content, cap_tokens, ratio)
        result = ToolResult(use.id, capped.content, output.is_error)
        outcomes.append(CallOutcome(use, result, round(ms, 1), capped.truncated, error))
    return outcomes
