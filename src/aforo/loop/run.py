"""One run's state and how it ends: `End` carries the reason to the one place that closes the run."""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass, field

from aforo.events import RunReason, RunResult
from aforo.messages import MessageEnd

CANCELLED = "cancelled by the user"
CANCELLED_RESULT = "[Cancelled by the user before this tool call finished.]"


class End(Exception):
    """The run ends here, for `reason`; `answer` is the text of the answer that ended it, if any."""

    def __init__(self, reason: RunReason, error: str | None = None, answer: str = "") -> None:
        super().__init__(reason)
        self.reason, self.error, self.answer = reason, error, answer


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
    context: int = 0  # tokens of the conversation once the last answer is in it
    compacted: frozenset[str] = frozenset()  # the compactions the run started with (not its own)
    deadline: float = math.inf  # when the time budget is spent (the agent's clock)
    late: int = 0  # turns started after the deadline
    read: set[str] = field(default_factory=set)  # the sources (as evidence lists name them) it called

    def add(self, end: MessageEnd) -> None:
        self.turns += 1
        self.input_tokens += end.usage.prompt_tokens
        self.output_tokens += end.usage.output_tokens

    def result(self, end: End) -> RunResult:
        used = (self.turns, self.tool_calls, self.input_tokens, self.output_tokens)
        return RunResult(end.reason, *used, error=end.error, answer=end.answer)
