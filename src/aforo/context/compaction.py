"""Stage 3: size a compaction request that fits, ask for the summary, check it, assemble the result.

The request is built and shrunk to fit in `summary_request`; the result (the ledger verbatim next to
the model's summary, and a tail of complete messages) in `compacted`.

Every failure raises CompactionError before the live conversation is touched. The summary request goes
to the Room's `Summarizer` lane (the conversation's own, or `compact_lane`): it is sized for THAT lane's
window and counter, and checked for silent truncation against that lane's calibration (a summary of a
truncated input would replace the history with something that lost the task); the compacted result
must fit the conversation's own window. `compact` works on the plain values of a `Room`, never on the
governor.
"""

from __future__ import annotations

import re
from dataclasses import replace
from functools import partial

from aforo.context.compacted import assemble, in_flight, keep_tail
from aforo.context.ledger import (
    COMPACTED_HEADER,
    CONTINUE,
    EVIDENCE_HEADER,
    SUMMARY_HEADER,
    build_ledger,
    is_compacted,
)
from aforo.context.overflow import OVERFLOW_MIN_GROWTH_COMPACT, unread
from aforo.context.plan import Outcome, Plan, Room, Summarizer
from aforo.context.summary_request import (
    continued_summary_request,
    fit_summary_request,
    omitted,
    summary_limit,
)
from aforo.context.tokens import Count, Sample, estimate_request
from aforo.errors import CompactionError, OutOfTime, ProviderError
from aforo.messages import Request
from aforo.stream import Reply

CUT_SUMMARY = "[The summary was cut at its output limit.]"
WITHOUT_SUMMARY = (
    "it did not come within its share of the question's time (--time-budget), so aforo's own record "
    "(every request, decision and source, verbatim) stands in for it"
)
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
    summary_req, summary_count = _summary_request(room)
    # Sampled like the conversation: a user who asked for --temperature 0 gets repeatable summaries too.
    summary_req = replace(summary_req, temperature=room.request.temperature)
    return partial(_summarize, room, summary_req, summary_count)


def _summary_request(room: Room) -> tuple[Request, Count]:
    """The summary request and its count: one more turn of the conversation on its own server when it
    fits (the server reads only that turn), else the transcript, shrunk to fit the summary lane."""
    lane = room.summary
    limit = summary_limit(lane.budget.reserve)
    # The conversation as the server's cache holds it first (before a clearing of this admission); the
    # summary reads the results that clearing took out too. Only where the answer cannot be a call: a
    # constrained request's schema allows only the answer, and a request without tools has none to
    # call. With tool definitions a model told not to call may still call (the gateway's clients send
    # theirs; Ollama's OpenAI endpoint ignores tool_choice): the transcript carries none.
    cached = room.cached if room.cached != room.request else None
    callable_tools = bool(room.request.tools) and not room.request.constrained
    asked = [r for r in (cached, room.request) if r is not None]
    for request in asked if lane.own and not callable_tools else []:
        continued = continued_summary_request(request, limit, room.instructions)
        count = lane.count(continued)
        if count.tokens <= lane.budget.available:
            return continued, count
    return fit_summary_request(
        lane.model,
        room.request.messages,
        available=lane.budget.available,
        max_tokens=limit,
        count=lane.count,
        instructions=room.instructions,
        lane=lane.lane,
    )


def _says_something(summary: str) -> bool:
    """At least SUMMARY_MIN_WORDS words once aforo's own lines are taken out."""
    for own in (COMPACTED_HEADER, SUMMARY_HEADER, EVIDENCE_HEADER, CONTINUE):
        summary = summary.replace(own, " ")
    return len(re.findall(r"\w+", summary)) >= SUMMARY_MIN_WORDS


def _read_whole(lane: Summarizer, summary_req: Request, summary_count: Count, reply: Reply) -> Sample:
    """What the summary request's answer reports it read, checked to be the whole request: a summary of
    a truncated request would miss part of the conversation."""
    sent = Sample(reply.end.usage.prompt_tokens, estimate_request(summary_req))
    exact = summary_count.tokens if summary_count.exact else None
    if exact is not None:
        # The request's own exact count decides. The growth rule would compare it with the
        # conversation's last request, another shape (no tools, another system prompt): measured on
        # llama-server, /compact was refused for 1 100 tokens reported against about 1 154 expected.
        measured = f"{sent.tokens} prompt tokens reported, its exact count {exact}"
        truncated = unread(None, sent, exact=exact)
    else:
        expected = round(lane.ratio * sent.estimate)
        measured = f"{sent.tokens} prompt tokens reported for about {expected} expected"
        truncated = unread(lane.prev, sent, exact=None, min_growth=OVERFLOW_MIN_GROWTH_COMPACT) or (
            0 < sent.tokens < SUMMARY_MIN_REPORTED_SHARE * expected
        )
    if truncated:
        raise CompactionError(
            f"the server of lane {lane.lane!r} truncated the summary request ({measured}), so the "
            "summary would miss part of the conversation; the conversation was left as it was. Set that "
            "lane's real context window (--context-window, or its context_window)."
        )
    return sent


def _summary(lane: Summarizer, summary_req: Request, summary_count: Count) -> tuple[str, Reply | None]:
    """The model's summary, checked ("" when it says nothing), and its reply; ("", None) when it did
    not come within its share of the question's time: aforo's record stands in for it."""
    try:
        reply = lane.ask(summary_req)
    except OutOfTime:
        return "", None
    except ProviderError as exc:
        raise CompactionError(f"the summary request failed on lane {lane.lane!r}: {exc}") from exc
    sent = _read_whole(lane, summary_req, summary_count, reply)
    cut = reply.end.stop_reason == "max_tokens"
    if reply.end.stop_reason == "refusal" or (cut and not _says_something(reply.text)):
        raise CompactionError(
            f"the summary was not completed (stop reason {reply.end.stop_reason}, output limit "
            f"{summary_req.max_tokens} tokens); the conversation was left as it was. `/compact` with "
            "instructions (what to keep) asks for a shorter one."
        )
    if not reply.text.strip():
        raise CompactionError("the model returned an empty summary; the conversation was left as it was")
    lane.calibrate(sent)
    # A summary cut by its output limit still says what it got to (the 0.5B model wrote past its word
    # budget to the 2 048-token limit, and the run ended `context_overflow`): kept, marked as cut.
    summary = reply.text if _says_something(reply.text) else ""
    return (f"{summary.rstrip()}\n{CUT_SUMMARY}" if cut else summary), reply


def _summarize(room: Room, summary_req: Request, summary_count: Count, checkpoint: str | None) -> Outcome:
    messages = list(room.request.messages)
    before, available, lane = room.before.tokens, room.budget.available, room.summary
    summary, reply = _summary(lane, summary_req, summary_count)
    cut = reply is not None and reply.end.stop_reason == "max_tokens"
    ledger = build_ledger(messages)
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
            pending=in_flight(messages),
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
    if reply is None:  # no summary to miss or leave out anything: the record is all there is
        causes = [WITHOUT_SUMMARY]
    else:
        causes = [] if summary else ["the model's summary said nothing and was left out"]
        if cut:
            causes.append(
                f"the summary was cut at its output limit ({summary_req.max_tokens} tokens) and kept"
            )
        if left_out:
            causes.append(f"{len(left_out)} results left out of the summary request are named")
        if missing:
            causes.append(f"re-attached verbatim {len(missing)} ledger items the summary missed")
    return Outcome(
        messages=tuple(compacted),
        after=after,
        cause="; ".join(causes) or None,
        summary_tokens=summary_count.tokens,
        lane=lane.lane,
        served=reply.end.model if reply is not None else "",
        told=f"Compacted without the model's summary: {WITHOUT_SUMMARY}. /undo puts the conversation back."
        if reply is None
        else "",
    )
