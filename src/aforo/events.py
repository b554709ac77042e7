"""The typed event stream of a run: what the CLI renders, `--json` prints and tests assert on.

Every event is a frozen dataclass with a `type` tag and serializes to one JSON object. The loop and
the governor emit through an `EventSink` (a plain callable) passed in explicitly: no global bus.
This module imports nothing of ours except the canonical types.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from aforo.messages import Usage

RunReason = Literal["end_turn", "max_turns", "context_overflow", "max_tokens", "refusal", "aborted", "error"]


@dataclass(frozen=True)
class TextDelta:
    text: str
    type: Literal["text_delta"] = "text_delta"


@dataclass(frozen=True)
class ToolStart:
    id: str
    name: str
    input: dict[str, Any]
    type: Literal["tool_start"] = "tool_start"


@dataclass(frozen=True)
class ToolEnd:
    id: str
    name: str
    duration_ms: float
    ok: bool
    truncated: bool = False
    error: str | None = None
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
    """One model call finished. `context` is the context tokens of the request, by `counter`."""

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


@dataclass(frozen=True)
class RunEnd:
    result: RunResult
    type: Literal["run_end"] = "run_end"

    @property
    def reason(self) -> RunReason:
        return self.result.reason


@dataclass(frozen=True)
class Info:
    """Start-up facts for the renderer (workspace, model, window and its source...)."""

    fields: dict[str, Any] = field(default_factory=dict)
    type: Literal["info"] = "info"


Event = TextDelta | ToolStart | ToolEnd | ContextAction | Warning | TurnEnd | ModelCheck | RunEnd | Info
EventSink = Callable[[Event], None]


def event_to_dict(event: Event) -> dict[str, Any]:
    data = asdict(event)
    # Flatten so scripts read `reason`, `window`... at the top level, like every other field.
    if isinstance(event, RunEnd):
        data = {"type": "run_end", **data["result"]}
    elif isinstance(event, Info):
        data = {"type": "info", **data["fields"]}
    return data


def event_to_json(event: Event) -> str:
    return json.dumps(event_to_dict(event), ensure_ascii=False, sort_keys=False)


def discard(_event: Event) -> None:
    """A sink for callers that do not render anything."""
