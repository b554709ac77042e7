"""Counting a request: the model's own tokenizer when there is one, else the calibrated estimate.

The estimate sizes the fixed part (system prompt, tools) once and the messages through a per-message
cache, so a turn costs only what is new. An exact counter that fails is dropped for the rest of the
session, with a warning: estimates are worse than exact counts but better than no admission at all.
"""

from __future__ import annotations

import math

from aforo.context.tokens import (
    CHARS_PER_TOKEN,
    Calibration,
    Count,
    MessageEstimates,
    frame_key,
)
from aforo.errors import ProviderError
from aforo.events import EventSink, Warning
from aforo.messages import Request
from aforo.protocols import TokenCounter
from aforo.reply_format import definition_chars, repeated_chars

ESTIMATE = "estimate"


class Meter:
    def __init__(self, counter: TokenCounter | None, emit: EventSink) -> None:
        self.counter = counter
        self.emit = emit
        self.calibration = Calibration()
        self.estimates = MessageEstimates()
        self._fixed: tuple[int, int] = (0, 0)  # (frame_key, characters of system prompt and tools)

    @property
    def name(self) -> str:
        return self.counter.name if self.counter else ESTIMATE

    def raw(self, request: Request) -> int:
        """The uncalibrated estimate of `request`."""
        key = frame_key(request)
        if self._fixed[0] != key:
            self._fixed = (key, len(request.system_text) + definition_chars(request))
        chars = self._fixed[1] + self.estimates.total_chars(request.messages) + repeated_chars(request)
        return math.ceil(chars / CHARS_PER_TOKEN)

    def count(self, request: Request) -> Count:
        estimated = self.calibration.scale(self.raw(request))
        if self.counter is not None:
            try:
                return Count(self.counter.count(request), True, self.counter.name, estimated)
            except ProviderError as exc:
                self.emit(
                    Warning(
                        message=f"Exact token counter {self.counter.name} failed ({exc}); using estimates."
                    )
                )
                self.counter = None
        return Count(estimated, False, ESTIMATE, estimated)
