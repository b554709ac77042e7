"""The seams of aforo, as small Protocols in one place (mini-swe-agent style).

Implementations are plain classes elsewhere; tests swap in fakes through these.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from aforo.messages import Message, Request, StreamEvent, ToolSpec
from aforo.records import CheckpointFacts, TelemetryRecord


class Provider(Protocol):
    """One wire dialect. `stream` yields text deltas and complete tool calls, then exactly one MessageEnd.

    It raises `aforo.errors.ProviderError` subclasses (ContextOverflowError for every "too long" answer)
    and never returns without a MessageEnd. `cancel`, when set, asks it to stop as soon as it can.
    """

    name: str
    model: str

    def stream(self, request: Request, cancel: threading.Event | None = None) -> Iterator[StreamEvent]: ...


@dataclass(frozen=True)
class ToolOutput:
    content: str
    is_error: bool = False
    # What the tool knows exactly about its result, in one line (`a.py: 120 lines; defines f, g`): it
    # stays in the conversation when the result's body is cleared to save room.
    facts: str = ""


@dataclass(frozen=True)
class ToolContext:
    workspace: Path
    # The cap of stage 1, in characters, so a tool can stop reading early instead of producing
    # output that will be cut anyway. The cap itself is applied by the context stages.
    max_chars: int | None = None
    # Set when the user cancels the run; the tool stops at its next check (aforo.tools.deadline).
    cancel: threading.Event | None = None
    # time.monotonic() by which the call must end (the tool_seconds limit); None: no deadline.
    deadline: float | None = None
    # The run's question, for a tool that shows the part of its result the question names.
    question: str = ""


class Tool(Protocol):
    spec: ToolSpec  # its name, what it does, its arguments' schema, whether a step batches it

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput: ...


class TokenCounter(Protocol):
    """Counts the prompt tokens of a request. `exact` counters apply the model's chat template."""

    name: str
    exact: bool

    def count(self, request: Request) -> int: ...

    def count_messages(self, messages: tuple[Message, ...] | list[Message]) -> int: ...


class Journal(Protocol):
    """Where the governor leaves durable traces: checkpoints before transformations, telemetry always.

    `checkpoint` must have written the checkpoint durably when it returns (its id), or raise
    `aforo.errors.StoreError`; the governor then does not apply the transformation. The journal knows
    which session it writes for: the records carry no session id.
    """

    def checkpoint(self, messages: tuple[Message, ...], facts: CheckpointFacts) -> str: ...

    def checkpoint_history(self) -> Iterator[tuple[str, str, list[Message]]]:
        """This session's checkpoints, newest first, as (id, reason, messages), read one at a time."""
        ...

    def record(self, record: TelemetryRecord) -> None: ...
