"""What a transformation of the conversation sees and what it produces: plain values, never the governor.

A stage gets a `Room` (the request, its count, the budget, the policy, a callable that counts a request,
and the `Summarizer`: the lane summary requests go to, with that lane's own window, counter and call)
and returns a `Plan`, or None when it has nothing to do. A plan
is what replaces the conversation (an `Outcome`), or a function that makes it once the checkpoint is
written (compaction names the checkpoint in the summary it writes). Everything around that (checkpoint
first, events, telemetry, adopting the result) is the governor's one pipeline.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from aforo.context.budget import Budget
from aforo.context.policy import Policy
from aforo.context.tokens import Count, Sample
from aforo.errors import TransformError
from aforo.messages import Message, Request
from aforo.stream import Reply


@dataclass(frozen=True, kw_only=True)
class Summarizer:
    """The lane a summary request goes to (the conversation's own, or `compact_lane`): the request must
    fit ITS window, is counted by ITS counter, and is checked against ITS calibration (SPEC §9)."""

    lane: str
    model: str  # what the summary request names
    budget: Budget  # the request must fit `available`; `reserve` is the summary's output limit
    count: Callable[[Request], Count]
    ask: Callable[[Request], Reply]
    ratio: float  # that lane's calibrated tokens/estimate
    prev: Sample | None  # that lane's last good sample while the conversation grows (None on another lane)
    calibrate: Callable[[Sample], None]  # a summary request the lane measured well calibrates it
    # The conversation's own server: its prompt cache holds the conversation, so the summary is asked
    # as one more turn of it (summary_request.continued_summary_request).
    own: bool = False


@dataclass(frozen=True, kw_only=True)
class Room:
    """The conversation's numbers (its window, counter and estimates) and where summaries go."""

    request: Request
    before: Count
    budget: Budget
    policy: Policy
    count: Callable[[Request], Count]
    estimate: Callable[[Message], int]  # raw tokens of one message (cached)
    summary: Summarizer
    force: bool = False  # compact even below the threshold (/compact, or a loud overflow)
    instructions: str | None = None  # the user's instructions for the summary (/compact ...)
    # The request as this admission got it, before a stage changed it: the server's prompt cache holds
    # its beginning. A clearing rewrites old results, and a summary asked after it as one more turn
    # would make the server read the conversation again from the first of them (measured with the 1.5B:
    # 2 048 tokens at 13.5 a second, past the summary's share of the question's time).
    cached: Request | None = None


@dataclass(frozen=True, kw_only=True)
class Outcome:
    """The conversation a transformation made, and what the event and the telemetry say about it."""

    messages: tuple[Message, ...]
    after: Count
    count: int = 0  # what the event line counts: results cleared, messages set aside or restored
    source: str | None = None  # the checkpoint restored from, when it is not the one just written
    cause: str | None = None
    summary_tokens: int | None = None
    lane: str | None = None  # the lane whose server did the work, when it is not the conversation's own
    served: str = ""  # the model that server said served it
    told: str = ""  # what the user is told beside the event (a compaction made without its summary)


Plan = Outcome | Callable[[str | None], Outcome]


@dataclass(frozen=True, kw_only=True)
class Admitted:
    """A request admitted for sending; `restore` holds the conversation before this call transformed it."""

    request: Request
    count: Count
    restore: tuple[Message, ...] | None = None
    checkpoint: str | None = None


class RecoveryFailed(TransformError):
    """A forced compaction (the recovery from a refusal) failed. `changed` holds what the stages before
    it did to the conversation, for the caller to put back (`Governor.recover`) as after any failed call."""

    def __init__(self, message: str, changed: Admitted) -> None:
        super().__init__(message)
        self.changed = changed


@dataclass(frozen=True, kw_only=True)
class Applied:
    request: Request
    after: Count
    checkpoint: str | None  # the one written before the transformation (None: it needed none)
