"""One name per transformation of the conversation; every other name of it comes from this one table.

The checkpoint reason and the telemetry event are already on disk (checkpoint files and databases of
earlier runs), so they never change; the event action is what `--json` prints. A transformation with
a stage is one admission runs by itself before every model call, in the order of the table: a new
stage is its function (Room -> Plan | None, see `aforo.context.plan`) plus one row here.

The tool-output cap (stage 1) has no row on purpose: it shapes a new result before it enters the
history (`Governor.tool_cap`, applied by `tool_batch`), so there is no history to checkpoint, nothing
an /undo could give back that the conversation ever held, and nothing to replace. Each capped result
says so itself (its marker, and the `tool_end` event's `truncated`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Literal

from aforo.context.compaction import compact
from aforo.context.plan import Plan, Room
from aforo.context.stages import clear
from aforo.context.undo import UNDO_REASON
from aforo.messages import Message


@dataclass(frozen=True, kw_only=True)
class Names:
    reason: str | None  # of its checkpoint; None: it takes none (the history is in one already)
    action: Literal["cleared", "compacted", "restored", "reset"]  # of its ContextAction event
    event: str  # of its telemetry record
    doing: str  # in "Not <doing> the conversation: the checkpoint could not be written"
    # Why it was not applied when its checkpoint could not be written; None: it is silently skipped.
    unwritten: str | None = None
    stage: Callable[[Room], Plan | None] | None = None

    def not_written(self, why: object) -> str:
        """The warning when its checkpoint could not be written (`why`)."""
        return f"Not {self.doing} the conversation: the checkpoint could not be written ({why})."


# Why a transformation that needs a checkpoint was not applied without one (the user reads these).
_NOTHING_TRANSFORMED = "the checkpoint could not be written, so nothing was transformed"
_CONVERSATION_KEPT = "the checkpoint could not be written, so the conversation was kept"
_NOTHING_UNDONE = "the conversation as it is could not be checkpointed first, so nothing was undone"


class Kind(Enum):
    CLEAR = Names(reason="clear", action="cleared", event="clearing", doing="clearing", stage=clear)
    COMPACT = Names(
        reason="compact",
        action="compacted",
        event="compaction",
        doing="compacting",
        unwritten=_NOTHING_TRANSFORMED,
        stage=compact,
    )
    RESET = Names(  # /clear
        reason="manual_clear",
        action="reset",
        event="clearing",
        doing="clearing",
        unwritten=_CONVERSATION_KEPT,
    )
    UNDO = Names(
        reason=UNDO_REASON, action="restored", event="recovery", doing="undoing", unwritten=_NOTHING_UNDONE
    )
    # After a failed call.
    RECOVERY = Names(reason=None, action="restored", event="recovery", doing="restoring")

    def checkpoint_reason(self, messages: tuple[Message, ...]) -> str | None:
        """The reason of the checkpoint taken before it transforms `messages`; None: it takes none."""
        # An undo from an empty conversation has nothing to keep.
        return None if self is Kind.UNDO and not messages else self.value.reason


# What admission runs before every call, in this order.
STAGES = tuple((kind, kind.value.stage) for kind in Kind if kind.value.stage is not None)
