"""Stage 3: build a compaction request that fits, ask for the summary, check it, assemble the result.

The request itself must fit the window (peers fail with "context limit exceeded" while compacting): the
history is rendered as a transcript and shrunk until it fits `available` — re-runnable tool output
first, oldest first, then long assistant prose; the user's messages are never cut. The result keeps
the ledger (requests, constraints, evidence) verbatim next to the model's summary, and a recent tail
of complete tool pairs, so the conversation stays well-formed and the task survives.

Every failure raises CompactionError before the live conversation is touched. The summary request goes
to the Room's `Summarizer` lane (the conversation's own, or `compact_lane`): it is sized for THAT lane's
window and counter, and checked for silent truncation against that lane's calibration (a summary of a
truncated input would replace the history with something that lost the task); the compacted result
must fit the conversation's own window. `compact` works on the plain values of a `Room`, never on the
governor.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import partial

from aforo.context.ledger import (
    COMPACTED_HEADER,
    CONTINUE,
    EVIDENCE_HEADER,
    SUMMARY_HEADER,
    Ledger,
    build_ledger,
    evidence_line,
    evidence_source,
    is_compacted,
)
from aforo.context.overflow import EXACT_TOLERANCE, OVERFLOW_MIN_GROWTH_COMPACT, looks_truncated
from aforo.context.plan import Outcome, Plan, Room
from aforo.context.tokens import Count, Sample, estimate_request, estimate_text
from aforo.errors import CompactionError, ProviderError
from aforo.messages import Message, Request, SystemPart, TextBlock, ToolResult, ToolUse
from aforo.records import Evidence

SUMMARY_SYSTEM = """You compact the conversation of a read-only coding assistant so it can continue the \
user's task in less context. Write a summary with exactly these sections:
Goal: what the user asked, in their words.
Constraints: hard rules (must / never) and soft preferences the user stated.
Decisions: each decision taken so far, with why (e.g. "option A rejected because it broke X").
Evidence: each fact learned, with its source (file path and lines, or the tool call).
Next action: the single next step to finish the task.
Be specific: name files, functions and numbers. Do not invent anything. Output only the summary."""

OMITTED_OUTPUT = "[output omitted to fit the summary request; re-run the tool to see it]"
LEFT_OUT_HEADER = "## Results the summary could not see (left out to fit its request; re-run to see them)"
CUT_SUMMARY = "[The summary was cut at its output limit.]"
# How each kind of piece is shortened, in the order they are given up: re-runnable output first, then
# the assistant's prose (its head kept), then the call markers themselves (the evidence list keeps them).
SHORTER = {
    "tool": lambda text: OMITTED_OUTPUT,
    "assistant": lambda text: text[:300] + " [… shortened]",
    "call": lambda text: "",
}
# A summary with fewer words than this, once aforo's own lines are taken out of it, says nothing the
# requests and the evidence kept verbatim do not, and is left out: Qwen2.5-Coder 0.5B wrote
# `[Summary of the conversation]`, and the answers after it were wrong where the same requests without
# that section were answered right.
SUMMARY_MIN_WORDS = 5
# Share of the available space a verbatim tail (the last tool exchange) may take after compaction.
TAIL_SHARE = 0.3
# Share of the available space the evidence list may take. Each compaction carries the sources of the
# one before, so over a long session the list would grow until no compaction fits; its newest entries
# are kept (what is left out can be re-run, and the checkpoint keeps the whole list).
EVIDENCE_SHARE = 0.15
# A summary request whose reported prompt is below this share of what the calibration expects was
# cut by the server: content differs little from the conversation that calibrated the ratio.
SUMMARY_MIN_REPORTED_SHARE = 0.5


@dataclass(frozen=True)
class Piece:
    role: str
    text: str
    # "tool" (re-runnable output), "assistant" (prose), "call" (a tool call marker) or "" (never cut)
    shrinkable: str


def transcript_pieces(messages: list[Message] | tuple[Message, ...]) -> list[Piece]:
    """The conversation as pieces a summary request can shrink. Cleared results are left out (the
    call says the tool ran), and a call repeated back to back is one piece with a count."""
    names: dict[str, ToolUse] = {}
    pieces: list[Piece] = []
    last_marker, repeats = "", 0
    for message in messages:
        for block in message.content:
            if isinstance(block, TextBlock):
                kind = (
                    "assistant" if message.role == "assistant" else ("tool" if message.tool_results else "")
                )
                if block.text.strip():
                    pieces.append(Piece(message.role, block.text, kind))
            elif isinstance(block, ToolUse):
                names[block.id] = block
                marker = (
                    f"[called {block.name} {json.dumps(block.input, ensure_ascii=False, sort_keys=True)}]"
                )
                if pieces and pieces[-1].shrinkable == "call" and marker == last_marker:
                    repeats += 1
                    pieces[-1] = Piece("assistant", f"{marker} x{repeats}", "call")
                else:
                    last_marker, repeats = marker, 1
                    pieces.append(Piece("assistant", marker, "call"))
            elif isinstance(block, ToolResult) and not block.cleared:
                use = names.get(block.tool_use_id)
                label = f"{use.name} {json.dumps(use.input, ensure_ascii=False)}" if use else "tool"
                status = "error" if block.is_error else "result"
                pieces.append(Piece(f"{status} of {label}", block.content, "tool"))
    return pieces


def render(pieces: list[Piece]) -> str:
    return "\n\n".join(f"<{p.role}>\n{p.text}\n</{p.role.split(' ', 1)[0]}>" for p in pieces if p.text)


_OMITTED = re.compile(r"<(?:result|error) of (\w+) (\{.*\})>\n" + re.escape(OMITTED_OUTPUT))


def omitted(request: Request) -> list[str]:
    """The sources (as the evidence list names them) of the results a summary request left out to fit:
    the summary knows nothing of them, so the compacted message names them instead of losing them."""
    text = request.messages[-1].text if request.messages else ""
    found: dict[str, None] = {}
    for name, args in _OMITTED.findall(text):
        try:
            parsed = json.loads(args)
        except ValueError:
            continue
        if isinstance(parsed, dict):
            found[evidence_source(ToolUse("", name, parsed))] = None
    return list(found)


# A summary is worth applying only if it is much shorter than what it replaces (aforo keeps the requests
# verbatim next to it), and a small model without a length target writes up to its output limit. So the
# request names a word budget: a third of the conversation, within what the output limit can hold.
SUMMARY_SHARE = 1 / 3
WORDS_PER_TOKEN = 0.75
MIN_SUMMARY_WORDS = 60


def summary_words(conversation_tokens: int, max_tokens: int) -> int:
    """The word budget a summary request names for a conversation of `conversation_tokens`."""
    ceiling = int(max_tokens * WORDS_PER_TOKEN * 0.8)  # room for the section headers and stray tokens
    wanted = int(conversation_tokens * SUMMARY_SHARE * WORDS_PER_TOKEN)
    return max(min(MIN_SUMMARY_WORDS, ceiling), min(wanted, ceiling))


def summary_request(
    model: str, pieces: list[Piece], max_tokens: int, instructions: str | None, words: int | None = None
) -> Request:
    ask = "Here is the conversation to summarize:\n\n" + render(pieces)
    if instructions:
        ask += f"\n\nThe user adds these instructions for the summary: {instructions}"
    if words is not None:
        ask += f"\n\nKeep the summary under {words} words."
    ask += "\n\nWrite the summary now."
    return Request(model, (SystemPart(SUMMARY_SYSTEM, "compaction"),), (), (Message.user(ask),), max_tokens)


def fit_summary_request(
    model: str,
    messages: list[Message] | tuple[Message, ...],
    *,
    available: int,
    max_tokens: int,
    count: Callable[[Request], Count],
    instructions: str | None = None,
    lane: str = "",
) -> tuple[Request, Count]:
    """The largest faithful summary request whose prompt fits `available` tokens, and its count.

    Shrinks in order: tool outputs oldest first, then assistant prose oldest first (head kept). Pieces
    are sized with the cheap estimate, scaled by what `count` (maybe an exact, remote counter) said of
    the whole, so `count` runs a handful of times, not once per piece. Raises CompactionError when even
    the user's own messages do not fit.
    """
    pieces = transcript_pieces(messages)
    # The budget follows the whole conversation, not what is left of it after shrinking for the window.
    words = summary_words(estimate_text(render(pieces)), max_tokens)
    request = summary_request(model, pieces, max_tokens, instructions, words)
    counted = count(request)
    tokens = counted.tokens
    target = available
    for _round in range(4):
        if tokens <= available:
            return request, counted
        scale = tokens / max(1, estimate_request(request))
        excess = (tokens - target) / scale
        for kind in ("tool", "assistant", "call"):
            for i, piece in enumerate(pieces):
                if excess <= 0:
                    break
                if piece.shrinkable != kind:
                    continue
                short = SHORTER[kind](piece.text)
                if len(short) < len(piece.text):
                    excess -= estimate_text(piece.text) - estimate_text(short)
                    pieces[i] = Piece(piece.role, short, "")
        request = summary_request(model, pieces, max_tokens, instructions, words)
        previous, counted = tokens, count(request)
        tokens = counted.tokens
        if tokens >= previous:
            break
        # The estimate undershot: aim lower by what is still over.
        target = max(1, target - max(0, tokens - available))
    if tokens <= available:
        return request, counted
    on = f" on lane {lane!r}" if lane else ""
    raise CompactionError(
        f"the summary request still needs {tokens} tokens after dropping every re-runnable tool output, "
        "shortening the assistant's messages and the tool calls, "
        f"more than the {available} available{on}; the user's own messages are never cut, so nothing was "
        "compacted. Start a new conversation (/clear) or raise the context window (--context-window"
        + (", or that lane's context_window)." if lane else ").")
    )


def keep_tail(
    messages: list[Message], budget_tokens: int, estimate: Callable[[Message], int], *, example: bool = True
) -> list[Message]:
    """What stays verbatim after the summary, the first of these that fits `budget_tokens`:

    - with `example`, from the newest request the model has answered to the end: that request, its
      calls, their results and the answer — the model's own worked example of the task — then the
      request at work, if any, and what has been done for it so far;
    - mid-run, the last exchange (assistant tool calls + their results), to resume;
    - nothing.

    Measured with Qwen2.5-Coder 0.5B (`make bench-real`, long-session: twelve "Read reports/dayNN.txt
    and quote the INCIDENT line." in one session, compacted while the seventh was at work): with only
    its last exchange after the summary the model answered `1`, and so did the five answers after it;
    with the sixth request, its Read and its answer kept too, it quoted the right line.

    A tail starts at a user's request or at the assistant's calls, never at a result, so the compacted
    conversation has no orphan result and no call without its results.
    """
    # A conversation that ends with a user turn (a request, or results) has its newest request at work.
    back = 2 if messages and messages[-1].role == "user" else 1
    starts = [i for i, m in enumerate(messages) if _is_request(m)]
    answered = starts[-back] if len(starts) >= back else 0
    candidates = [messages[answered:]] if example and answered > 0 else []
    if len(messages) >= 2 and messages[-1].tool_results and messages[-2].tool_uses:
        candidates.append(messages[-2:])
    for tail in candidates:
        if sum(estimate(m) for m in tail) <= budget_tokens:
            return tail
    return []


def _is_request(message: Message) -> bool:
    """A turn the user wrote (not tool results, not an earlier compaction's summary)."""
    return message.role == "user" and not message.tool_results and not is_compacted(message)


def newest_evidence(ledger: Ledger, budget_tokens: int | None) -> tuple[list[str], int]:
    """The evidence lines that fit `budget_tokens` (None: all), newest kept, in their order; and how
    many were left out. Sources come first: the facts beside them take only the room the sources leave,
    newest first, so no source is left out for another's facts."""
    kept: list[Evidence] = []
    used = 0
    for ev in reversed(ledger.evidence):
        cost = estimate_text(evidence_line(ev.source, "") + "\n")
        if budget_tokens is not None and used + cost > budget_tokens:
            break
        used += cost
        kept.append(ev)
    facts = dict(ledger.facts)
    lines = []
    for ev in kept:
        line = evidence_line(ev.source, facts.get(ev.source, ""))
        extra = estimate_text(line) - estimate_text(evidence_line(ev.source, ""))
        if budget_tokens is not None and used + extra > budget_tokens:
            line = evidence_line(ev.source, "")
        else:
            used += extra
        lines.append(line)
    return lines[::-1], len(ledger.evidence) - len(kept)


def compacted_message(
    ledger: Ledger,
    summary: str,
    checkpoint: str | None,
    evidence_tokens: int | None = None,
    left_out: Sequence[str] = (),
) -> Message:
    lines = [f"{COMPACTED_HEADER} Checkpoint: {checkpoint or 'none'} (/undo restores the conversation).]"]
    lines.append("\n## The user's requests, verbatim")
    lines += [f"<request>\n{r}\n</request>" for r in ledger.requests]
    if ledger.hard or ledger.soft:
        lines.append("\n## Constraints the user stated (binding)")
        lines += [f"- (hard) {c}" for c in ledger.hard]
        lines += [f"- (soft) {c}" for c in ledger.soft]
    if summary.strip():
        lines.append(f"\n{SUMMARY_HEADER}")
        lines.append(summary.strip())
    if left_out:
        lines.append(f"\n{LEFT_OUT_HEADER}")
        lines += [f"- <left_out>{source}</left_out>" for source in left_out]
    if ledger.evidence:
        kept, older = newest_evidence(ledger, evidence_tokens)
        lines.append(f"\n{EVIDENCE_HEADER}")
        if older:
            lines.append(f"- ({older} older sources left out to save room; the checkpoint lists them)")
        lines += kept
    lines.append(f"\n{CONTINUE}")
    return Message.user("\n".join(lines))


def assemble(
    ledger: Ledger,
    summary: str,
    checkpoint: str | None,
    tail: list[Message],
    *,
    evidence_tokens: int | None = None,
    left_out: Sequence[str] = (),
) -> list[Message]:
    """The compacted conversation: the compacted message, then the tail. Nothing answers it in the
    model's name: an acknowledgement there ("Understood. I will continue the task from this summary.")
    was the one answer the 0.5B model saw after a /compact, and it answered the next question with it,
    or without reading anything (an invented `jso` function); without it, it read the files again. A
    request after it (the tail's, or the next prompt's) is joined to it on the wire (`wire.chat`,
    `steps.render`), so no chat template sees two user turns in a row."""
    return [compacted_message(ledger, summary, checkpoint, evidence_tokens, left_out), *tail]


def compact(room: Room) -> Plan | None:
    """Stage 3 past `compact_at`, once the model has answered (or when forced): the summary request is
    sized here, before any checkpoint; the summary itself is asked for once the checkpoint is written."""
    messages = room.request.messages
    answered = any(m.role == "assistant" for m in messages)
    over = room.before.tokens > room.policy.compact_threshold(room.budget)
    # Before the model has answered once there is nothing to summarize: admission decides alone.
    if not (room.force or (over and answered)):
        return None
    if not answered:
        since = " since the last compaction" if any(is_compacted(m) for m in messages) else " so far"
        raise CompactionError(f"there is nothing to compact yet (no answer from the model{since})")
    lane = room.summary
    summary_req, summary_count = fit_summary_request(
        lane.model,
        messages,
        available=lane.budget.available,
        max_tokens=lane.budget.reserve,
        count=lane.count,
        instructions=room.instructions,
        lane=lane.lane,
    )
    # Sampled like the conversation: a user who asked for --temperature 0 gets repeatable summaries too.
    summary_req = replace(summary_req, temperature=room.request.temperature)
    return partial(_summarize, room, summary_req, summary_count)


def _says_something(summary: str) -> bool:
    """At least SUMMARY_MIN_WORDS words once aforo's own lines are taken out."""
    for own in (COMPACTED_HEADER, SUMMARY_HEADER, EVIDENCE_HEADER, CONTINUE):
        summary = summary.replace(own, " ")
    return len(re.findall(r"\w+", summary)) >= SUMMARY_MIN_WORDS


def _summarize(room: Room, summary_req: Request, summary_count: Count, checkpoint: str | None) -> Outcome:
    messages = list(room.request.messages)
    before, available, lane = room.before.tokens, room.budget.available, room.summary
    try:
        reply = lane.ask(summary_req)
    except ProviderError as exc:
        raise CompactionError(f"the summary request failed on lane {lane.lane!r}: {exc}") from exc
    sent = Sample(reply.end.usage.prompt_tokens, estimate_request(summary_req))
    if summary_count.exact:
        # The request's own exact count decides. The growth rule would compare it with the
        # conversation's last request, another shape (no tools, another system prompt): measured on
        # llama-server, /compact was refused for 1 100 tokens reported against about 1 154 expected.
        expected = summary_count.tokens
        measured = f"{sent.tokens} prompt tokens reported, its exact count {expected}"
        truncated = 0 < sent.tokens < expected - EXACT_TOLERANCE
    else:
        expected = round(lane.ratio * sent.estimate)
        measured = f"{sent.tokens} prompt tokens reported for about {expected} expected"
        truncated = looks_truncated(lane.prev, sent, OVERFLOW_MIN_GROWTH_COMPACT) or (
            0 < sent.tokens < SUMMARY_MIN_REPORTED_SHARE * expected
        )
    if truncated:
        raise CompactionError(
            f"the server of lane {lane.lane!r} truncated the summary request ({measured}), so the "
            "summary would miss part of the conversation; the conversation was left as it was. Set that "
            "lane's real context window (--context-window, or its context_window)."
        )
    cut = reply.end.stop_reason == "max_tokens"
    if reply.end.stop_reason == "refusal" or (cut and not _says_something(reply.text)):
        raise CompactionError(
            f"the summary was not completed (stop reason {reply.end.stop_reason}, output limit "
            f"{summary_req.max_tokens} tokens); the conversation was left as it was. Raise the context "
            "window or --max-tokens so the summary fits."
        )
    if not reply.text.strip():
        raise CompactionError("the model returned an empty summary; the conversation was left as it was")
    lane.calibrate(sent)
    ledger = build_ledger(messages)
    # A summary cut by its output limit still says what it got to (the 0.5B model wrote past its word
    # budget to the 2 048-token limit, and the run ended `context_overflow`): kept, marked as cut.
    summary = reply.text if _says_something(reply.text) else ""
    if cut:
        summary = f"{summary.rstrip()}\n{CUT_SUMMARY}"
    left_out = omitted(summary_req)
    missing = ledger.missing_from(summary)
    budget = int(TAIL_SHARE * available)
    # A forced compaction (/compact, the recovery from a refusal) is asked for room: no worked example.
    # An automatic one whose example leaves it too large or saving nothing is tried once without.
    tails = [keep_tail(messages, budget, room.estimate, example=False)]
    if not room.force:
        with_example = keep_tail(messages, budget, room.estimate)
        if with_example != tails[0]:
            tails.insert(0, with_example)
    for tail in tails:
        compacted = assemble(
            ledger,
            summary,
            checkpoint,
            tail,
            evidence_tokens=int(EVIDENCE_SHARE * available),
            left_out=left_out,
        )
        after = room.count(room.request.with_messages(compacted))
        if after.tokens <= available and after.tokens < before:
            break
    if after.tokens > available:
        raise CompactionError(
            f"the compacted conversation would need {after.tokens} tokens, more than the {available} "
            "available, so it was not applied; the conversation was left as it was"
        )
    if after.tokens >= before:
        # Early in a run the summary plus what is kept verbatim (requests, the last tool exchange) can
        # outweigh the little there was to summarize: applying it would cost room, not save it.
        raise CompactionError(
            f"the compacted conversation would need {after.tokens} tokens, no fewer than the {before} it "
            "replaces (the summary and what is kept verbatim outweigh what was summarized), so it was not "
            "applied; the conversation was left as it was"
        )
    causes = [] if summary else ["the model's summary said nothing and was left out"]
    if cut:
        causes.append(f"the summary was cut at its output limit ({summary_req.max_tokens} tokens) and kept")
    if left_out:
        causes.append(f"{len(left_out)} results left out of the summary request are named")
    if missing:
        causes.append(f"re-attached verbatim {len(missing)} ledger items the summary missed")
    return Outcome(
        tuple(compacted),
        after,
        cause="; ".join(causes) or None,
        summary_tokens=summary_count.tokens,
        lane=lane.lane,
        served=reply.end.model,
    )
