"""The tool calls of one answer: read from the reply (structured, or written as text), run concurrently,
capped (stage 1, at the governor's cap), results in the order the model asked for them.

Small models sometimes repeat the same call many times in one message (seen with Qwen2.5-Coder 0.5B:
eighteen identical Reads). Each distinct call runs once; a repeat gets a one-line result pointing at the
first, so the transcript stays well-formed (every call has its result) without paying for the output
again. An answer whose every call repeats one whose result the conversation still shows makes no
progress (the 0.5B model asks again for the files it just read, step after step): it is not added at
all, and the caller asks for the answer instead (`Batch.stalled`).

Nothing is added to the conversation besides the calls and their results: a line of aforo's own in the
user's turn (an earlier "now explain it in prose" after text-written calls) is what a small model copies
as its next answer.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from itertools import count

from aforo import safejson
from aforo.context.conversation import Conversation
from aforo.context.stages import Cap, cap_text
from aforo.context.tokens import estimate_text
from aforo.errors import LimitExceeded
from aforo.events import EventSink, ToolEnd, ToolStart
from aforo.messages import Message, TextBlock, ToolResult, ToolUse
from aforo.protocols import ToolOutput
from aforo.providers.textcalls import extract_text_tool_calls
from aforo.steps import says_nothing
from aforo.stream import Reply
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


@dataclass(frozen=True)
class Batch:
    """What became of one answer: how many calls ran, or (`stalled`, naming them) calls that would
    make no progress, which were not added: only repeats, or any call where only an answer may come;
    or an answer that says nothing, not added either."""

    ran: int = 0
    stalled: str = ""
    said_nothing: bool = False  # an answer with no word in it, or the reply format copied: not added


def answer(
    reply: Reply,
    tools: ToolRegistry,
    conversation: Conversation,
    cap: Cap,
    emit: EventSink,
    cancel: threading.Event | None = None,
    *,
    answer_only: bool = False,
) -> Batch:
    """Add the model's answer to the conversation and run the tools it calls.

    A `cancel` (the user's Ctrl-C) stops the running calls at once: each answers "cancelled"."""
    text, uses = tool_uses(reply, tools, conversation.messages)
    if not uses and reply.end.stop_reason == "end_turn" and says_nothing(text, tools.specs):
        return Batch(said_nothing=True)
    if uses and (answer_only or {_key(u) for u in uses} <= seen_calls(conversation.messages)):
        return Batch(stalled=_labels(uses))
    blocks: list[TextBlock | ToolUse] = [TextBlock(text)] if text.strip() else []
    conversation.append(Message("assistant", (*blocks, *uses)))
    if not uses:
        return Batch()
    for use in uses:
        emit(ToolStart(use.id, use.name, use.input))
    answered = answered_calls(conversation.messages[:-1])
    outcomes = run_batch(tools, uses, cap=cap, answered=answered, cancel=cancel)
    # Appended before the events are emitted: whoever persists on events saves the results too.
    conversation.append(Message("user", tuple(o.result for o in outcomes)))
    for o in outcomes:
        emit(tool_end(o, cap.ratio))
    return Batch(ran=len(uses))


def _labels(uses: Sequence[ToolUse], shown: int = 3) -> str:
    """The calls, one short line: the first few, then how many more."""
    labels = list(
        dict.fromkeys(f"{u.name} {' '.join(str(v) for v in u.input.values())}".strip() for u in uses)
    )
    more = f" and {len(labels) - shown} more" if len(labels) > shown else ""
    return ", ".join(labels[:shown]) + more


def tool_end(o: CallOutcome, ratio: float) -> ToolEnd:
    """The event that ends a call, with its result's bytes, lines and tokens (estimated, calibrated by
    `ratio`): what the call costs in the conversation."""
    content = o.result.content
    lines = content.count("\n") + (1 if content and not content.endswith("\n") else 0)
    size = len(content.encode("utf-8", "surrogatepass")), lines, round(estimate_text(content) * ratio)
    return ToolEnd(o.use.id, o.use.name, o.duration_ms, not o.result.is_error, o.truncated, o.error, *size)


def tool_uses(
    reply: Reply, tools: ToolRegistry, conversation: Sequence[Message]
) -> tuple[str, list[ToolUse]]:
    """The calls of this answer, and its text without the calls that were written as text.

    Every call gets an id of its own: a result names the call it answers, so two calls that share an id
    (a server that repeats one, or reuses one from earlier in the conversation) would both get the
    second's result. A missing or taken id is replaced by a fresh one."""
    taken = {u.id for m in conversation for u in m.tool_uses}
    fresh = (f"call_{n}" for n in count(len(taken) + 1) if f"call_{n}" not in taken)

    def own(call_id: str) -> str:
        chosen = call_id if call_id and call_id not in taken else next(fresh)
        taken.add(chosen)
        return chosen

    if reply.calls:
        return reply.text, [_use(own(c.id), c.name, c.arguments) for c in reply.calls]
    if reply.end.stop_reason == "max_tokens":
        # An answer cut by the output limit is rambling; calls written in it are not to be trusted.
        return reply.text, []
    # Small local models often write the call as JSON in their text instead of a structured call.
    rest, found = extract_text_tool_calls(reply.text, tools.names)
    return rest, [_use(own(""), name, args) for name, args in found]


def _use(call_id: str, name: str, arguments: str | dict[str, object]) -> ToolUse:
    if isinstance(arguments, dict):
        return ToolUse(call_id, name, dict(arguments))
    try:
        parsed = safejson.loads(arguments, f"the arguments of {name}") if arguments.strip() else {}
    except (json.JSONDecodeError, LimitExceeded):
        parsed = None
    # Malformed arguments are kept verbatim so the tool result can quote them back to the model.
    return ToolUse(call_id, name, parsed if isinstance(parsed, dict) else {"_raw_arguments": arguments})


def seen_calls(messages: Sequence[Message]) -> set[str]:
    """Calls whose result, good or an error, the conversation still shows (not cleared)."""
    shown = {r.tool_use_id for m in messages for r in m.tool_results if not r.cleared}
    return {_key(u) for m in messages for u in m.tool_uses if u.id in shown}


def answered_calls(messages: Sequence[Message]) -> dict[str, str]:
    """Calls whose successful, uncleared result is still in the conversation: key -> tool_use id."""
    results = {r.tool_use_id for m in messages for r in m.tool_results if not r.cleared and not r.is_error}
    return {_key(u): u.id for m in messages for u in m.tool_uses if u.id in results}


def run_batch(
    tools: ToolRegistry,
    uses: list[ToolUse],
    *,
    cap: Cap,
    answered: dict[str, str] | None = None,
    cancel: threading.Event | None = None,
) -> list[CallOutcome]:
    """`answered` holds calls already answered earlier in the conversation: a small model that loops
    on the same Read gets a pointer to the result it already has instead of the output again."""
    answered = answered or {}
    first: dict[str, ToolUse] = {}
    for use in uses:
        first.setdefault(_key(use), use)
    distinct = [u for k, u in first.items() if k not in answered]

    def run_one(use: ToolUse) -> tuple[ToolOutput, float]:
        started = time.monotonic()
        raw = use.input.get("_raw_arguments")
        args: str | dict[str, object] = raw if isinstance(raw, str) else use.input
        output = tools.execute(use.name, args, max_chars=cap.chars, cancel=cancel)
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
        capped = cap_text(output.content, cap.tokens, cap.ratio)
        result = ToolResult(use.id, capped.content, output.is_error)
        outcomes.append(CallOutcome(use, result, round(ms, 1), capped.truncated, error))
    return outcomes
