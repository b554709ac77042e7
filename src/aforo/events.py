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
from typing import Any, Literal

from aforo.messages import Usage

# The version of the `--json` event schema: a field removed or changed in meaning raises it; a field or
# an event type added does not (readers ignore what they do not know).
SCHEMA_VERSION = 1

RunReason = Literal[
    "end_turn", "max_turns", "no_progress", "context_overflow", "max_tokens", "refusal", "aborted", "error"
]


@dataclass(frozen=True)
class TextDelta:
    text: str
    type: Literal["text_delta"] = "text_delta"


@dataclass(frozen=True)
class TextCall:
    """Tool calls the model wrote as text: `text` is what it wrote, never shown as part of the answer."""

    text: str
    calls: tuple[dict[str, Any], ...]  # {"name", "input"} each, in order
    type: Literal["text_call"] = "text_call"


@dataclass(frozen=True)
class ToolStart:
    id: str
    name: str
    input: dict[str, Any]
    type: Literal["tool_start"] = "tool_start"


@dataclass(frozen=True)
class ToolEnd:
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
    type: Literal["tool_end"] = "tool_end"


@dataclass(frozen=True)
class ContextAction:
    """The governor changed the conversation. `before`/`after` are context tokens."""

    action: Literal["cleared", "compacted", "restored", "reset"]
    before: int
    after: int
    count: int = 0
    checkpoint: str | None = None
    lane: str = ""  # the lane that did the work: for a compaction, the one that wrote the summary
    model: str = ""  # the model that lane's server said served it ("" when it did not say)
    type: Literal["context"] = "context"


@dataclass(frozen=True)
class Warning:
    message: str
    type: Literal["warning"] = "warning"


@dataclass(frozen=True)
class TurnEnd:
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
    type: Literal["turn_end"] = "turn_end"


@dataclass(frozen=True)
class ModelCheck:
    """The first answer on the conversation's lane after a summary on another lane: is the model that
    served it the one the conversation runs on? (SPEC §9). `served` is "" when the server did not say."""

    lane: str
    expected: str
    served: str
    restored: bool
    type: Literal["model_check"] = "model_check"


@dataclass(frozen=True)
class RunResult:
    reason: RunReason
    turns: int = 0
    tool_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    error: str | None = None
    answer: str = ""  # the text of the run's last answer, without calls written as text; "" if none


@dataclass(frozen=True)
class RunEnd:
    result: RunResult
    type: Literal["run_end"] = "run_end"

    @property
    def reason(self) -> RunReason:
        return self.result.reason


@dataclass(frozen=True)
class Result:
    """The last event of a `--json` run: what a script needs without reading the others."""

    ending: RunReason
    exit_code: int
    answer: str = ""
    turns: int = 0
    tool_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    duration_ms: float = 0.0
    error: str | None = None
    session: str | None = None
    type: Literal["result"] = "result"


@dataclass(frozen=True)
class Info:
    """Start-up facts for the renderer (workspace, model, window and its source...)."""

    fields: dict[str, Any] = field(default_factory=dict)
    type: Literal["info"] = "info"


@dataclass(frozen=True)
class Progress:
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
    type: Literal["progress"] = "progress"


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
        data = {"type": "run_end", **data["result"]}
        del data["answer"]  # the answer is the `result` event's
    elif isinstance(event, Info):
        data = {"type": "info", **data["fields"]}
    elif isinstance(event, TextCall):
        data["calls"] = list(data["calls"])
    return {"v": SCHEMA_VERSION, "type": data.pop("type"), **data}


def event_to_json(event: Event) -> str:
    return json.dumps(event_to_dict(event), ensure_ascii=False, sort_keys=False)


def discard(_event: Event) -> None:
    """A sink for callers that do not render anything."""


@contextmanager
def phase(emit: EventSink, name: str, detail: str = "") -> Iterator[None]:
    """Tell the status line that `name` runs until the block ends, however it ends."""
    emit(Progress(name, detail))
    try:
        yield
    finally:
        emit(Progress("idle"))
