"""The compacted conversation: the ledger kept verbatim beside the summary, then a tail kept verbatim.

The ledger (requests, constraints, evidence) survives every compaction word for word, so the task does;
the tail is a run of complete messages (a request and what answered it, or the last tool exchange), so
the conversation stays well-formed. A request still at work when the compaction came is named last,
with what was read for it, so the next answer is to it: with only "Continue the user's task" after a
list of requests, a 7B model answered "Ready to continue or answer any specific questions".

Of the requests, the first (the goal) and the newest `KEPT_REQUESTS` are re-attached: every one would
grow each compaction by the last one's requests until none fits (the session's trail, persisted with
the session, keeps them all; the checkpoints too).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from aforo.context.ledger import (
    COMPACTED_HEADER,
    CONTINUE,
    EVIDENCE_HEADER,
    SUMMARY_HEADER,
    Ledger,
    evidence_line,
    evidence_source,
    is_aforos_ask,
    is_compacted,
)
from aforo.context.tokens import estimate_text
from aforo.messages import Message
from aforo.records import Evidence

LEFT_OUT_HEADER = "## Results the summary could not see (left out to fit its request; re-run to see them)"
IN_FLIGHT = "In flight when compacted; answer it now:"
# The requests re-attached after the goal, newest first kept; the older ones are the trail's.
KEPT_REQUESTS = 5


@dataclass(frozen=True)
class InFlight:
    """The newest request, when nothing has answered it yet, and the sources read for it so far."""

    request: str
    read: tuple[str, ...] = ()


def in_flight(messages: Sequence[Message]) -> InFlight | None:
    """The request at work at the end of `messages` (no answer after it), or None."""
    starts = [i for i, m in enumerate(messages) if _is_request(m)]
    if not starts:
        return None
    after = messages[starts[-1] + 1 :]
    if any(m.role == "assistant" and not m.tool_uses and m.text.strip() for m in after):
        return None
    read = dict.fromkeys(evidence_source(u) for m in after for u in m.tool_uses)
    return InFlight(messages[starts[-1]].text, tuple(read))


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
    """A turn the user wrote (not tool results, not an earlier compaction's summary, not aforo's ask)."""
    return (
        message.role == "user"
        and not message.tool_results
        and not is_compacted(message)
        and not is_aforos_ask(message)
    )


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
    pending: InFlight | None = None,
) -> Message:
    lines = [f"{COMPACTED_HEADER} Checkpoint: {checkpoint or 'none'} (/undo restores the conversation).]"]
    lines.append("\n## The user's requests, verbatim")
    # The request in flight is named once, last, in its own words: not also in the list.
    requests = tuple(r for r in ledger.requests if pending is None or r != pending.request)
    if len(requests) > KEPT_REQUESTS + 1:
        older = len(requests) - KEPT_REQUESTS - 1
        lines.append(f"<request>\n{requests[0]}\n</request>")
        lines.append(
            f"- ({older} requests after this one left out to save room; the session's record keeps them)"
        )
        requests = requests[-KEPT_REQUESTS:]
    lines += [f"<request>\n{r}\n</request>" for r in requests]
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
    if pending is not None:
        lines += [IN_FLIGHT, f"<request>\n{pending.request}\n</request>"]
        if pending.read:  # their facts are in the evidence list above: named, not repeated
            lines.append(f"Read for it so far: {', '.join(pending.read)}.")
    return Message.user("\n".join(lines))


def assemble(
    ledger: Ledger,
    summary: str,
    checkpoint: str | None,
    tail: list[Message],
    *,
    evidence_tokens: int | None = None,
    left_out: Sequence[str] = (),
    pending: InFlight | None = None,
) -> list[Message]:
    """The compacted conversation: the compacted message, then the tail. Nothing answers it in the
    model's name: an acknowledgement there ("Understood. I will continue the task from this summary.")
    was the one answer the 0.5B model saw after a /compact, and it answered the next question with it,
    or without reading anything (an invented `jso` function); without it, it read the files again. A
    request after it (the tail's, or the next prompt's) is joined to it on the wire (`wire.chat`,
    `steps.render`), so no chat template sees two user turns in a row. `pending`: the request at work
    (`in_flight`), named at the end of the compacted message when the tail does not hold it."""
    # The request in flight is named last only when the tail does not carry it already, and what was
    # read for it only when the tail does not show its last exchange either.
    named = pending if pending is not None and not any(_is_request(m) for m in tail) else None
    if named is not None and tail:
        named = InFlight(named.request)
    return [compacted_message(ledger, summary, checkpoint, evidence_tokens, left_out, named), *tail]
