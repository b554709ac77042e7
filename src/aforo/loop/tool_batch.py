"""The tool calls of one answer (as `reading.read_reply` found them, structured or written as text),
run concurrently, capped (stage 1, at the governor's cap), results in the order the model asked for them.

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
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace

from aforo.context.conversation import Conversation
from aforo.context.ledger import evidence_source
from aforo.context.stages import Cap, cap_text
from aforo.context.tokens import estimate_text
from aforo.events import EventSink, Info, ToolEnd, ToolStart
from aforo.loop.copied import copied_format
from aforo.loop.reading import ReadReply
from aforo.messages import Message, TextBlock, ToolResult, ToolUse
from aforo.protocols import ToolOutput
from aforo.reply_format import result_label, says_nothing
from aforo.summarised import note
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
    copied: str = ""  # the answer was one of aforo's formats (loop.copied), named: not added either
    summarised: str = ""  # the calls, when each was summarised by a compaction of this run or is shown


def act_on(
    read: ReadReply,
    tools: ToolRegistry,
    conversation: Conversation,
    cap: Cap,
    emit: EventSink,
    cancel: threading.Event | None = None,
    *,
    answer_only: bool = False,
    question: str = "",
    room: int | None = None,
    known: Mapping[str, str] | None = None,
) -> Batch:
    """Add the model's answer (the reply as `read_reply` read it) to the conversation and run the tools
    it calls.

    `room`: the tokens new results may take (None: no bound but the cap); calls past it are not kept,
    and the last result names them. `known`: sources a compaction of this run summarised -> its summary
    (aforo.summarised); a call of one is not run, its result says what the summary keeps. A `cancel`
    (the user's Ctrl-C) stops the running calls at once: each answers "cancelled"."""
    uses = list(read.uses)
    if not uses and read.reply.end.stop_reason == "end_turn":
        if says_nothing(read.text, tools.specs):
            return Batch(said_nothing=True)
        if copied := copied_format(read.text, tools.specs, question):
            return Batch(said_nothing=True, copied=copied)
    seen = seen_calls(conversation.messages)
    if uses and (answer_only or {_key(u) for u in uses} <= seen):
        return Batch(stalled=_labels(uses))
    known = known or {}
    told = {
        _key(u): note(u, known[evidence_source(u)])
        for u in uses
        if evidence_source(u) in known and _key(u) not in seen
    }
    answered = answered_calls(conversation.messages)
    uses, later = within(uses, {**answered, **told}, cap, room)
    fresh = len({_key(u) for u in uses} - answered.keys() - told.keys())
    blocks: list[TextBlock | ToolUse] = [TextBlock(read.answer)] if read.answer else []
    conversation.append(Message("assistant", (*blocks, *uses)))
    if not uses:
        return Batch()
    for use in uses:
        emit(ToolStart(id=use.id, name=use.name, input=use.input))
    outcomes = run_batch(tools, uses, cap=cap, answered=answered, told=told, cancel=cancel, question=question)
    if later:
        why = _deferred_because(fresh, cap, room)
        outcomes[-1] = _with_note(outcomes[-1], later, why)
        emit(Info(fields={"step": f"not read yet: {_targets(later)} ({why})"}))
    # Appended before the events are emitted: whoever persists on events saves the results too.
    conversation.append(Message("user", tuple(o.result for o in outcomes)))
    for o in outcomes:
        emit(tool_end(o, cap.ratio))
    nothing_new = bool(told) and {_key(u) for u in uses} <= seen | told.keys()
    return Batch(ran=len(uses), summarised=_labels(uses) if nothing_new else "")


def within(
    uses: list[ToolUse], answered: dict[str, str], cap: Cap, room: int | None
) -> tuple[list[ToolUse], list[ToolUse]]:
    """The calls whose results fit `room`, each new one counted at the cap (all it may take), in the
    order asked, and the calls left for later. The first new call always runs: a step must make
    progress, and once its result is in, clearing and compaction make room for the next (a compaction
    keeps that last exchange verbatim).

    Asked "what does this package do?" the 0.5B model named the whole file list in its first step: twelve
    results at the cap, 8 000-11 000 tokens where 6 144 fit, compacted before it read any of them."""
    if room is None:
        return uses, []
    kept: list[ToolUse] = []
    later: list[ToolUse] = []
    new: set[str] = set()
    for use in uses:
        key = _key(use)
        if key in answered or key in new:  # a pointer to a result, not a new one
            kept.append(use)
        elif later or (new and (len(new) + 1) * cap.tokens > room):
            later.append(use)
        else:
            new.add(key)
            kept.append(use)
    return kept, later


def _targets(uses: Sequence[ToolUse]) -> str:
    return ", ".join(dict.fromkeys(result_label(u) for u in uses))


def _deferred_because(fresh: int, cap: Cap, room: int | None) -> str:
    """Why a step's later calls were not run: the room `within` counted them against, said as it is.
    "For want of room in the context window" was shown with the window 3-30 % full (issue 41): a step's
    results are counted at the cap, all that each may take, not at what they take."""
    results = f"{fresh} new result{'' if fresh == 1 else 's'}"
    return (
        f"a step reads {results} at most now: each is counted at the cap, {cap.tokens:,} tokens, all one "
        f"may take, and {max(0, room or 0):,} tokens are left before compaction"
    )


def _with_note(outcome: CallOutcome, later: Sequence[ToolUse], why: str) -> CallOutcome:
    """The last result, naming the calls of its step that were not run: the model asks for them again."""
    note = f"\n[Not read yet: {why}. Ask again after this for: {_targets(later)}.]"
    result = replace(outcome.result, content=outcome.result.content + note)
    return replace(outcome, result=result)


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
    return ToolEnd(
        id=o.use.id,
        name=o.use.name,
        duration_ms=o.duration_ms,
        ok=not o.result.is_error,
        truncated=o.truncated,
        error=o.error,
        bytes=len(content.encode("utf-8", "surrogatepass")),
        lines=lines,
        tokens=round(estimate_text(content) * ratio),
    )


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
    told: Mapping[str, str] | None = None,
    cancel: threading.Event | None = None,
    question: str = "",
) -> list[CallOutcome]:
    """`answered` holds calls already answered earlier in the conversation: a small model that loops
    on the same Read gets a pointer to the result it already has instead of the output again. `told`:
    calls answered by a note instead of running (a compaction summarised them)."""
    answered, told = answered or {}, told or {}
    first: dict[str, ToolUse] = {}
    for use in uses:
        first.setdefault(_key(use), use)
    distinct = [u for k, u in first.items() if k not in answered and k not in told]

    def run_one(use: ToolUse) -> tuple[ToolOutput, float]:
        started = time.monotonic()
        raw = use.input.get("_raw_arguments")
        args: str | dict[str, object] = raw if isinstance(raw, str) else use.input
        output = tools.execute(use.name, args, max_chars=cap.chars, cancel=cancel, question=question)
        return output, (time.monotonic() - started) * 1000

    ran: dict[str, tuple[ToolOutput, float]] = {}
    if distinct:
        with ThreadPoolExecutor(max_workers=min(MAX_WORKERS, len(distinct))) as pool:
            ran = dict(zip((u.id for u in distinct), pool.map(run_one, distinct), strict=True))
    outcomes = []
    for use in uses:
        if _key(use) in told:
            # Marked cleared: its output is not here, so a later question may run it for real.
            result = ToolResult(use.id, told[_key(use)], cleared=True)
            outcomes.append(CallOutcome(use, result, 0.0, False, None))
            continue
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
            outcomes.append(
                CallOutcome(use, ToolResult(use.id, note, is_error=output.is_error), 0.0, False, error)
            )
            continue
        capped = cap_text(output.content, cap.tokens, cap.ratio)
        result = ToolResult(use.id, capped.content, is_error=output.is_error, facts=output.facts)
        outcomes.append(CallOutcome(use, result, round(ms, 1), capped.truncated, error))
    return outcomes
