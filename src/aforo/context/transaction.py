"""The compaction transaction (SPEC §5): checkpoint -> summarize -> check -> recount -> keep only if it fits.

Every failure raises CompactionError before the live conversation is touched: the caller turns it into
a warning and the history stays as it was. The summary request is itself checked for silent truncation
(a summary of a truncated input would replace the history with something that lost the task).
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING

from aforo.context.calls import collect
from aforo.context.compaction import CompactionError, assemble, fit_summary_request, keep_tail
from aforo.context.ledger import build_ledger
from aforo.context.overflow import OVERFLOW_MIN_GROWTH_COMPACT, looks_truncated
from aforo.context.tokens import Sample, estimate_request
from aforo.errors import ProviderError
from aforo.events import ContextAction
from aforo.messages import Message, Request, messages_to_list
from aforo.protocols import Provider

if TYPE_CHECKING:
    from aforo.context.governor import Governor

# Share of the available space a verbatim tail (the last tool exchange) may take after compaction.
TAIL_SHARE = 0.3
# A summary request whose reported prompt is below this share of what the calibration expects was
# cut by the server: content differs little from the conversation that calibrated the ratio.
SUMMARY_MIN_REPORTED_SHARE = 0.5


def compact(
    gov: Governor, request: Request, provider: Provider, before: int, instructions: str | None
) -> tuple[Request, str, int, bool]:
    started = time.monotonic()
    messages = list(request.messages)
    if not any(m.role == "assistant" for m in messages):
        raise CompactionError("there is nothing to compact yet (no answer from the model so far)")
    ledger = build_ledger(messages)
    summary_req, summary_tokens = fit_summary_request(
        request.model,
        messages,
        available=gov.budget.available,
        max_tokens=gov.budget.reserve,
        count=lambda r: gov.count(r)[0],
        instructions=instructions,
    )
    checkpoint = gov.take_checkpoint("compact", request, before)
    if checkpoint is None:
        raise CompactionError("the checkpoint could not be written, so nothing was transformed")
    try:
        text, _calls, end = collect(provider, summary_req)
    except ProviderError as exc:
        raise CompactionError(f"the summary request failed: {exc}") from exc
    sent = Sample(end.usage.prompt_tokens, estimate_request(summary_req))
    expected = gov.calibration.ratio * sent.estimate
    if looks_truncated(gov.prev, sent, OVERFLOW_MIN_GROWTH_COMPACT) or (
        sent.tokens > 0 and sent.tokens < SUMMARY_MIN_REPORTED_SHARE * expected
    ):
        raise CompactionError(
            f"the server truncated the summary request ({sent.tokens} prompt tokens reported for about "
            f"{round(expected)} expected), so the summary would miss part of the conversation; the "
            "conversation was left as it was. Set the real context window with --context-window."
        )
    if end.stop_reason in ("max_tokens", "refusal"):
        raise CompactionError(
            f"the summary was not completed (stop reason {end.stop_reason}, output limit "
            f"{summary_req.max_tokens} tokens); the conversation was left as it was. Raise the context "
            "window or --max-tokens so the summary fits."
        )
    if not text.strip():
        raise CompactionError("the model returned an empty summary; the conversation was left as it was")
    missing = ledger.missing_from(text)
    tail = keep_tail(messages, int(TAIL_SHARE * gov.budget.available), gov.estimates.of)
    candidate = request.with_messages(
        assemble(ledger, text, checkpoint, tail, mid_run=messages[-1].role == "user")
    )
    after, exact = gov.count(candidate)
    if after > gov.budget.available:
        raise CompactionError(
            f"the compacted conversation would need {after} tokens, more than the {gov.budget.available} "
            "available, so it was not applied; the conversation was left as it was"
        )
    if after >= before:
        # Early in a run the summary plus what is kept verbatim (requests, the last tool exchange) can
        # outweigh the little there was to summarize: applying it would cost room, not save it.
        raise CompactionError(
            f"the compacted conversation would need {after} tokens, no fewer than the {before} it replaces "
            "(the summary and what is kept verbatim outweigh what was summarized), so it was not applied; "
            "the conversation was left as it was"
        )
    gov.emit(ContextAction("compacted", before, after, checkpoint=checkpoint))
    gov.record(
        "compaction",
        candidate,
        before,
        after,
        started,
        checkpoint=checkpoint,
        summary_tokens=summary_tokens,
        cause=f"re-attached verbatim {len(missing)} ledger items the summary missed" if missing else None,
        bytes_before=conversation_bytes(messages),
        bytes_after=conversation_bytes(candidate.messages),
    )
    gov.reset_detection()
    gov.estimates.prune(candidate.messages)
    return candidate, checkpoint, after, exact


def conversation_bytes(messages: list[Message] | tuple[Message, ...]) -> int:
    """Bytes and tokens are different units (SPEC §5): telemetry reports both."""
    return len(json.dumps(messages_to_list(messages), ensure_ascii=False).encode())
