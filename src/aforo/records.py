"""What the governor leaves on record: the facts of a checkpoint and one telemetry row, as typed values.

They cross the `Journal` seam (aforo.protocols), so they sit low in the layering and import nothing of
ours but the canonical types: the context layer fills them, the store maps them onto files and SQLite columns.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from aforo.messages import Usage


@dataclass(frozen=True, kw_only=True)
class Where:
    """Where a record was made: the model, the server, its window and how tokens were counted."""

    model: str = ""
    server: str = ""
    window: int = 0
    window_source: str = ""
    counter: str = ""


@dataclass(frozen=True, kw_only=True)
class Stamp:
    """Who a record is about: where it was made, the lane, the model that lane's server said served."""

    where: Where
    lane: str
    served: str = ""  # "" unknown


@dataclass(frozen=True, kw_only=True)
class CheckpointFacts:
    """What a checkpoint says about the conversation it holds, next to the messages themselves."""

    reason: str
    tokens_before: int
    stamp: Stamp  # the conversation's lane, and the model its server last said served it
    goal: str = ""
    hard: tuple[str, ...] = ()
    soft: tuple[str, ...] = ()
    decisions: tuple[Decision, ...] = ()
    evidence: tuple[Evidence, ...] = ()
    next_action: str = ""


@dataclass(frozen=True, kw_only=True)
class TelemetryRecord:
    """One telemetry row. `event` is one of the store's event names ("admission", "compaction"...);
    `stamp` says where it was made and which lane's server it is about (a compaction's: the lane that
    wrote the summary), with the model that server said it served."""

    event: str
    stamp: Stamp
    tokens_before: int | None = None
    tokens_after: int | None = None
    tokens_estimated: int | None = None
    tokens_exact: int | None = None
    bytes_before: int | None = None
    bytes_after: int | None = None
    summary_tokens: int | None = None  # prompt tokens of the summary request (compaction)
    usage: Usage | None = None  # what a run cost, as the server reported it
    duration_ms: float | None = None
    cause: str | None = None
    checkpoint: str | None = None
    client: str | None = None  # who sent the request, for a request `aforo serve` passed on


class Decision(NamedTuple):
    decision: str
    why: str = ""


class Evidence(NamedTuple):
    """A fact the conversation relied on and where it came from (`detail`: the tool call id, if any)."""

    source: str
    detail: str = ""
