"""When a tool call must stop: the user cancelled the run, or the call used up its tool_seconds.

The registry puts both into the ToolContext. Loops that read files call `check(ctx)`; ripgrep's watcher
polls `interruption(ctx)` and kills rg. A stopped call therefore ends within one poll interval, and its
work does not go on in the background after the registry has answered.
"""

from __future__ import annotations

import time

from aforo.errors import ToolError
from aforo.protocols import ToolContext

# How often waiting code looks at the cancel event and the clock; bounds how late a stop is noticed.
POLL_S = 0.05


class Interrupted(ToolError):
    """The call was stopped before it finished: cancelled by the user, or out of time."""

    def __init__(self, *, cancelled: bool) -> None:
        super().__init__("cancelled by the user" if cancelled else "out of time")
        self.cancelled = cancelled


def interruption(ctx: ToolContext) -> Interrupted | None:
    """Why the call must stop now, or None while it may go on."""
    if ctx.cancel is not None and ctx.cancel.is_set():
        return Interrupted(cancelled=True)
    if ctx.deadline is not None and time.monotonic() >= ctx.deadline:
        return Interrupted(cancelled=False)
    return None


def check(ctx: ToolContext) -> None:
    """Raise Interrupted if the call must stop."""
    stop = interruption(ctx)
    if stop is not None:
        raise stop
