"""What the governor's decisions leave in telemetry: one row each, built from plain values.

Every row is stamped alike (`aforo.records.Stamp`: where it was made, the lane, the model that lane's
server said served it), so an admission, a transformation, an overflow and a model check read the same
way in `aforo stats`. The governor decides; these only write down what it decided.
"""

from __future__ import annotations

import time
from dataclasses import replace

from aforo.context.lanes import ModelVerdict
from aforo.context.plan import Outcome
from aforo.context.tokens import Count, Sample, conversation_bytes
from aforo.messages import Message
from aforo.records import Stamp, TelemetryRecord


def decision(
    stamp: Stamp, event: str, before: Count, after: Count, started: float, cause: str | None = None
) -> TelemetryRecord:
    """An admission, a rejection or a transformation: the counts before and after, and how long it took."""
    return TelemetryRecord(
        event=event,
        stamp=stamp,
        tokens_before=before.tokens,
        tokens_after=after.tokens,
        tokens_estimated=after.estimated,
        duration_ms=round((time.monotonic() - started) * 1000, 3),
        cause=cause,
    )


def rejection(stamp: Stamp, count: Count, started: float, cause: str) -> TelemetryRecord:
    """A call or a transformation refused: the count it was refused at, and why."""
    return decision(stamp, "rejection", count, count, started, cause)


def transformation(
    stamp: Stamp,
    event: str,
    before: Count,
    was: tuple[Message, ...],
    outcome: Outcome,
    started: float,
    checkpoint: str | None,
) -> TelemetryRecord:
    """A transformation that was applied: `was` became `outcome`, kept first in `checkpoint`."""
    return replace(
        decision(stamp, event, before, outcome.after, started, outcome.cause),
        checkpoint=checkpoint,
        summary_tokens=outcome.summary_tokens,
        bytes_before=conversation_bytes(was),
        bytes_after=conversation_bytes(outcome.messages),
    )


def overflow(stamp: Stamp, sample: Sample, exact: int | None, cause: str) -> TelemetryRecord:
    """An answer the server gave without part of its prompt: what it reported next to our estimate."""
    return TelemetryRecord(
        event="overflow",
        stamp=stamp,
        tokens_estimated=sample.estimate,
        tokens_exact=exact,
        tokens_after=sample.tokens,
        cause=cause,
    )


def model_check(stamp: Stamp, verdict: ModelVerdict) -> TelemetryRecord:
    """What the first answer after a summary on another lane said about the conversation's model."""
    return TelemetryRecord(event=verdict.event, stamp=stamp, cause=verdict.cause)
