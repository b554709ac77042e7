"""The typed event stream of a run: what the CLI renders, `--json` prints and tests assert on.

Every event is a frozen dataclass with a `type` tag and serializes to one JSON object that carries the
schema version `v` (docs/json-events.md is the contract; docs/json-events.schema.json checks it). The
loop and the governor emit through an `EventSink` (a plain callable) passed in explicitly: no global
bus. `Progress` is for the terminal's status line only: it is never printed by `--json`, whose events
must come in the same order on every server, and a server may or may not report its progress.
This module imports nothing of ours except the canonical types.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar, Literal, dataclass_transform

from aforo.messages import Usage

# The version of the `--json` event schema: a field removed or changed in meaning raises it; a field or
# an event type added does not (readers ignore what they do not know).
SCHEMA_VERSION = 1


@dataclass_transform(frozen_default=True, kw_only_default=True)
class Tagged:
    """An event: a frozen dataclass whose `type`, its JSON `type`, is the tag it is declared with."""

    type: ClassVar[str]

    def __init_subclass__(cls, *, tag: str, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.type = tag
        dataclass(frozen=True, kw_only=True)(cls)


RunReason = Literal[
    "end_turn",
    "max_turns",
    "no_progress",
    "time_budget",
    "empty_answer",
    "context_overflow",
    "max_tokens",
    "refusal",
    "aborted",
    "error",
]


class TextDelta(Tagged, tag="text_delta"):
    text: str


class TextCall(Tagged, tag="text_call"):
    """Tool calls the model wrote as text: `text` is what it wrote, never shown as part of the answer."""

    text: str
    calls: tuple[dict[str, Any], ...]  # {"name", "input"} each, in order


class ToolStart(Tagged, tag="tool_start"):
    id: str
    name: str
    input: dict[str, Any]


class ToolEnd(Tagged, tag="tool_end"):
    """A call finished. The sizes are those of the result the model gets (after the cap); `tokens` is
    estimated with the session's calibrated characters-per-token ratio."""

    id: str
    name: str
    duration_ms: float
    ok: bool
    truncated: bool = False
    error: str | None = None
    bytes: int = 0
    lines: int = 0
    tokens: int = 0


class ContextAction(Tagged, tag="context"):
    """The governor changed the conversation. `before`/`after` are context tokens."""

    action: Literal["cleared", "compacted", "restored", "reset"]
    before: int
    after: int
    count: int = 0
    checkpoint: str | None = None
    lane: str = ""  # the lane that did the work: for a compaction, the one that wrote the summary
    model: str = ""  # the model that lane's server said served it ("" when it did not say)


class Warning(Tagged, tag="warning"):
    message: str


class TurnEnd(Tagged, tag="turn_end"):
    """One model call finished. `context` is the context tokens of the request, by `counter`.

    `truncated`: the server answered without part of the prompt, and the text of this turn is discarded.
    """

    turn: int
    usage: Usage
    context: int
    window: int
    exact: bool = False
    truncated: bool = False
    # The server reported prompt + completion beyond the window: it shifted context while generating.
    context_shift: bool = False
    lane: str = ""
    model: str = ""  # the model the server said served this answer ("" when it did not say)


class ModelCheck(Tagged, tag="model_check"):
    """The first answer on the conversation's lane after a summary on another lane: is the model that
    served it the one the conversation runs on? (SPEC §9). `served` is "" when the server did not say."""

    lane: str
    expected: str
    served: str
    restored: bool


@dataclass(frozen=True, kw_only=True)
class Cited:
    """One place the answer cites (`path`, `path:line`, `path:line-end`, or `name` defined in `path`),
    and whether it held against the workspace and the symbol index; `fact`: what is true instead."""

    text: str
    path: str
    line: int | None = None
    end: int | None = None
    name: str | None = None
    held: bool = True
    fact: str = ""


@dataclass(frozen=True, kw_only=True)
class RunResult:
    reason: RunReason
    turns: int = 0
    tool_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    error: str | None = None
    answer: str = ""  # the text of the run's last answer, without calls written as text; "" if none
    citations: tuple[Cited, ...] = ()  # the answer's citations, each checked (none when none was)
    # Turns whose usage the server never reported (an answer stopped as it looped): the token counts
    # leave them out, so the output count is then unknown, not the small number the others add up to.
    unreported_turns: int = 0


class RunEnd(Tagged, tag="run_end"):
    result: RunResult

    @property
    def reason(self) -> RunReason:
        return self.result.reason


class Result(Tagged, tag="result"):
    """The last event of a `--json` run: what a script needs without reading the others. `run` is how
    the run ended (its `reason` is the JSON `ending`); a run that could not start is an error run."""

    run: RunResult
    exit_code: int
    duration_ms: float = 0.0
    session: str | None = None


class Info(Tagged, tag="info"):
    """Start-up facts for the renderer (workspace, model, window and its source...)."""

    fields: dict[str, Any] = field(default_factory=dict)


class Progress(Tagged, tag="progress"):
    """What aforo is waiting for, for the status line: `phase` is connecting, prompt, generating, probing,
    or what the governor is doing (clearing, compacting...); idle ends it. `done`/`total`/`cached`: the
    server's own progress through the prompt, in tokens (0 when it sends none); `tokens`: pieces of the
    answer received so far."""

    phase: str
    detail: str = ""
    done: int = 0
    total: int = 0
    cached: int = 0
    tokens: int = 0


Event = (
    TextDelta
    | TextCall
    | ToolStart
    | ToolEnd
    | ContextAction
    | Warning
    | TurnEnd
    | ModelCheck
    | RunEnd
    | Result
    | Info
    | Progress
)
EventSink = Callable[[Event], None]


def event_to_dict(event: Event) -> dict[str, Any]:
    data = asdict(event)
    # Flatten so scripts read `reason`, `window`... at the top level, like every other field.
    if isinstance(event, RunEnd):
        data = dict(data["result"])
        del data["answer"]  # the answer is the `result` event's
        data["citations"] = list(data["citations"])
    elif isinstance(event, Result):
        # Flat, in the contract's order (docs/json-events.md): the ending, the answer and the run's counts.
        run, counts = data["run"], ("turns", "tool_calls", "input_tokens", "output_tokens")
        data = {
            "ending": run["reason"],
            "exit_code": data["exit_code"],
            "answer": run["answer"],
            **{key: run[key] for key in counts},
            "duration_ms": data["duration_ms"],
            "error": run["error"],
            "session": data["session"],
            "citations": list(run["citations"]),
            "unreported_turns": run["unreported_turns"],
        }
    elif isinstance(event, Info):
        data = dict(data["fields"])
    elif isinstance(event, TextCall):
        data["calls"] = list(data["calls"])
    return {"v": SCHEMA_VERSION, "type": event.type, **data}


def event_to_json(event: Event) -> str:
    return json.dumps(event_to_dict(event), ensure_ascii=False, sort_keys=False)


def discard(_event: Event) -> None:
    """A sink for callers that do not render anything."""


@contextmanager
def phase(emit: EventSink, name: str, detail: str = "") -> Iterator[None]:
    """Tell the status line that `name` runs until the block ends, however it ends."""
    emit(Progress(phase=name, detail=detail))
    try:
        yield
    finally:
        emit(Progress(phase="idle"))
