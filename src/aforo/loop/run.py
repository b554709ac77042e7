"""One run's state and how it ends: `End` carries the reason to the one place that closes the run."""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field

from aforo.context.ledger import evidence_source
from aforo.context.tokens import Count
from aforo.context.watch import Observation
from aforo.events import Cited, RunReason, RunResult, TurnEnd
from aforo.messages import MessageEnd, ToolUse

CANCELLED = "cancelled by the user"
CANCELLED_RESULT = "[Cancelled by the user before this tool call finished.]"


class End(Exception):
    """The run ends here, for `reason`; `answer` is the text of the answer that ended it, if any."""

    def __init__(
        self, reason: RunReason, error: str | None = None, answer: str = "", citations: tuple[Cited, ...] = ()
    ) -> None:
        super().__init__(reason)
        self.reason, self.error, self.answer, self.citations = reason, error, answer, citations


def out_of_turns(max_turns: int) -> End:
    return End("max_turns", f"stopped after {max_turns} turns (raise --max-turns)")


def stop_if(cancel: threading.Event) -> None:
    if cancel.is_set():
        raise End("aborted", CANCELLED)


@dataclass
class RunState:
    """One run's state: what it used, for its RunResult, and whether only an answer may come now."""

    turns: int = 0
    tool_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    answer_only: bool = False
    question: str = ""
    worded: bool = False  # an answer said nothing: the next must have a word in it (the schema says so)
    corrected: bool = False  # an answer's citations did not hold: the model was asked once to correct them
    unreported: int = 0  # turns whose usage the server never reported
    context: int = 0  # tokens of the conversation once the last answer is in it
    compacted: frozenset[str] = frozenset()  # the compactions the run started with (not its own)
    deadline: float = math.inf  # when the time budget is spent (the agent's clock)
    hard: float = math.inf  # when the answer asked for after it is stopped, as far as it got
    late: int = 0  # turns started after the deadline
    read: set[str] = field(default_factory=set)  # the sources (as evidence lists name them) it called
    # A question only about the session: the trail it is asked with, in place of the conversation
    # before `since` (the run's first message).
    record: str = ""
    since: int = 0
    # A question about the files read: the record's list, which its answer must name (loop.record_check).
    files_read: tuple[str, ...] | None = None

    def add(self, end: MessageEnd) -> None:
        self.turns += 1
        self.unreported += end.stopped
        self.input_tokens += end.usage.prompt_tokens
        self.output_tokens += end.usage.output_tokens

    def ran(self, uses: Sequence[ToolUse]) -> None:
        """The calls of one answer ran: counted, and their sources noted as read by this run."""
        self.tool_calls += len(uses)
        self.read |= {evidence_source(u) for u in uses}

    def result(self, end: End) -> RunResult:
        return RunResult(
            reason=end.reason,
            turns=self.turns,
            tool_calls=self.tool_calls,
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            error=end.error,
            answer=end.answer,
            citations=end.citations,
            unreported_turns=self.unreported,
        )


def turn_end(
    turn: int, count: Count, end: MessageEnd, seen: Observation, *, window: int, lane: str
) -> TurnEnd:
    """The turn_end event of one model call: what was sent, what came back, what the governor saw."""
    return TurnEnd(
        turn=turn,
        usage=end.usage,
        context=count.tokens,
        window=window,
        exact=count.exact,
        truncated=seen.truncated,
        context_shift=seen.context_shift,
        lane=lane,
        model=end.model,
    )
