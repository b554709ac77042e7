"""The one pipeline every transformation of the conversation goes through (the stages, /compact,
/clear, /undo, and putting back what a failed call's stages changed): plan, checkpoint first, transform
in memory, then event, telemetry and `Conversation.replace`; on failure a rejection record, and the
conversation is left as it was. The governor holds one and calls it; the pipeline gets the parts it
writes to (journal, events, conversation, served model), never the governor.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from aforo.context.compacted import in_flight
from aforo.context.conversation import Conversation
from aforo.context.lanes import Served
from aforo.context.plan import Applied, Plan
from aforo.context.rows import rejection, transformation
from aforo.context.tokens import Count
from aforo.context.trail import checkpoint_facts
from aforo.context.transforms import Kind
from aforo.errors import StoreError, TransformError
from aforo.events import ContextAction, EventSink, Warning, phase
from aforo.messages import Request
from aforo.protocols import Journal
from aforo.records import Stamp


class _NotWritten(Exception):
    """The checkpoint could not be written, so the transformation is not applied."""


class Pipeline:
    def __init__(
        self,
        *,
        journal: Journal,
        emit: EventSink,
        conversation: Conversation,
        served: Served,
        stamp: Callable[[], Stamp],
    ) -> None:
        self.journal, self.emit, self.conversation, self.served = journal, emit, conversation, served
        # Where the conversation's records are made: its lane, and the model its server last said served it.
        self.stamp = stamp
        # The checkpoint the last /undo restored: the next one goes further back from there.
        self.undone: str | None = None

    def apply(
        self, kind: Kind, request: Request, before: Count, step: Callable[[], Plan | None]
    ) -> Applied | None:
        """Plan, checkpoint, transform; then tell, record and adopt. None: the plan had nothing to do,
        or clearing was skipped for want of a checkpoint. Raises TransformError, conversation untouched."""
        names, started = kind.value, time.monotonic()
        try:
            with phase(self.emit, names.doing):  # the status line: a compaction asks the model
                plan = step()
                if plan is None:
                    return None
                checkpoint = self._checkpoint(kind, request, before)
                outcome = plan(checkpoint) if callable(plan) else plan
        except _NotWritten as exc:
            self.emit(Warning(message=names.not_written(exc)))
            self.journal.record(rejection(self.stamp(), before, started, f"checkpoint: {exc}"))
            if names.unwritten is None:
                return None
            raise TransformError(names.unwritten) from exc
        except TransformError as exc:
            self.journal.record(rejection(self.stamp(), before, started, f"{names.event}: {exc}"))
            raise
        named, own = outcome.source or checkpoint, self.stamp()
        # Who did the work: the lane that wrote a summary, else the conversation's own.
        lane, served = (outcome.lane, outcome.served) if outcome.lane else (own.lane, own.served)
        after = outcome.after.tokens
        self.emit(
            ContextAction(
                action=names.action,
                before=before.tokens,
                after=after,
                count=outcome.count,
                checkpoint=named,
                lane=lane,
                model=served,
            )
        )
        if outcome.told:
            self.emit(Warning(message=outcome.told))
        stamp, was = Stamp(where=own.where, lane=lane, served=served), request.messages
        self.journal.record(transformation(stamp, names.event, before, was, outcome, started, named))
        self.conversation.replace(outcome.messages)
        self.served.summary_on(lane)
        return Applied(
            request=request.with_messages(outcome.messages), after=outcome.after, checkpoint=checkpoint
        )

    def _checkpoint(self, kind: Kind, request: Request, before: Count) -> str | None:
        reason = kind.checkpoint_reason(request.messages)
        if reason is None:
            return None
        pending = in_flight(request.messages)
        trail, asked = self.conversation.trail, pending.request if pending else None
        facts = checkpoint_facts(reason, before.tokens, self.stamp(), request.messages, trail, asked)
        try:
            checkpoint = self.journal.checkpoint(request.messages, facts)
        except StoreError as exc:
            raise _NotWritten(str(exc)) from exc
        self.undone = None  # a new checkpoint: the next /undo walks back from it
        return checkpoint
