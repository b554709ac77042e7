"""The governor: it owns the conversation, admits every model call and watches what comes back (SPEC §3-§5).

Before a call it runs the stages (clear, compact) and refuses locally what still cannot fit; after it,
the watch decides whether the server silently dropped part of the prompt. Every transformation goes
through one pipeline, `_apply`: checkpoint first, transform in memory, then event, telemetry and
`Conversation.replace`; on failure a rejection record, and the conversation is left as it was.
Helpers get plain values (`Room`), never the governor. Summary requests go to the compaction lane when
one is set (`aforo.context.lanes`), and the next answer on the conversation's lane is checked for the
model it was served by.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import partial

from aforo.context.breakdown import Breakdown, break_down
from aforo.context.budget import Budget
from aforo.context.compaction import compact
from aforo.context.conversation import Conversation
from aforo.context.counting import Meter
from aforo.context.dropped import Dropped, since_newest
from aforo.context.lanes import DEFAULT_LANE, Lane, Served, summary_route
from aforo.context.ledger import checkpoint_facts
from aforo.context.plan import Admitted, Applied, Outcome, Plan, RecoveryFailed, Room, Summarizer
from aforo.context.policy import Policy
from aforo.context.rows import decision, model_check, overflow, rejection, transformation
from aforo.context.stages import Cap
from aforo.context.tokens import Count
from aforo.context.transforms import STAGES, Kind
from aforo.context.undo import Restore, choose
from aforo.context.watch import Observation, Watch
from aforo.errors import ContextOverflowError, RejectedError, StoreError, TransformError
from aforo.events import ContextAction, EventSink, Warning, phase
from aforo.messages import Message, MessageEnd, Request
from aforo.protocols import Journal, Provider, TokenCounter
from aforo.records import Stamp, Where


class _NotWritten(Exception):
    """The checkpoint could not be written, so the transformation is not applied."""


class Governor:
    def __init__(
        self,
        *,
        budget: Budget,
        policy: Policy,
        journal: Journal,
        emit: EventSink,
        counter: TokenCounter | None = None,
        model: str = "",
        server: str = "",
        window_known: bool = False,
        lane: str = DEFAULT_LANE,
        compaction: Lane | None = None,
    ) -> None:
        self.policy, self.journal, self.emit = policy, journal, emit
        self.model, self.server = model, server
        # The conversation's lane, and the one summary requests go to instead (None: this one).
        self.lane, self.compaction = lane, compaction
        self.served = Served(lane, model)
        self._budget = budget
        self.meter = Meter(counter, emit)
        self.watch = Watch(self.meter, emit, window_known=window_known)
        self.conversation = Conversation(self.meter, self.watch)
        # The checkpoint the last /undo restored: the next one goes further back from there.
        self._undone: str | None = None

    # --- views, and the history's two commands (the loop appends through `conversation`) ----------

    @property
    def budget(self) -> Budget:
        return self._budget

    @property
    def window(self) -> int:
        return self._budget.window

    def where(self) -> Where:
        """What every record says of where it was made: model, server, window and counter."""
        budget = self._budget
        return Where(self.model, self.server, budget.window, budget.source, self.meter.name)

    @property
    def summary_lane(self) -> str:
        """The lane summary requests go to."""
        return self.compaction.name if self.compaction is not None else self.lane

    def count(self, request: Request) -> Count:
        return self.meter.count(request)

    def tool_cap(self) -> Cap:
        """The cap of stage 1: no single tool result may exceed it."""
        return Cap(self.policy.cap_tokens(self._budget), self.meter.calibration.ratio)

    def breakdown(self, request: Request) -> Breakdown:
        """What fills the window, by section (/context)."""
        return break_down(request, self._budget, self.meter.count(request), self.meter.calibration.ratio)

    def dropped(self) -> tuple[str, Dropped] | None:
        """What the newest checkpoint holds that the conversation lost since (/dropped); None: no checkpoint.
        Raises StoreError when that checkpoint cannot be read."""
        return since_newest(self.journal.checkpoint_history(), self.conversation.messages)

    def replace_history(self, messages: Sequence[Message]) -> None:
        """Take `messages` as the conversation (a resumed session): growth detection restarts."""
        self.conversation.replace(messages)

    def close_pending(self, note: str) -> None:
        """Answer the last message's unanswered tool calls with `note`, so the transcript stays whole."""
        self.conversation.close_pending(note)

    # --- around a call ---------------------------------------------------------------------------

    def admit(
        self, request: Request, provider: Provider, *, force_compact: bool = False, transform: bool = True
    ) -> Admitted:
        """Run the stages and refuse locally what still cannot fit (RejectedError: nothing was sent).

        `force_compact` compacts whatever the count; if that fails, RecoveryFailed says what to put back.
        Without `transform` no stage runs: the conversation is sent as it is or refused (the gateway's
        default, where the conversation is the client's)."""
        started = time.monotonic()
        room = self._room(request, provider, force=force_compact)
        checkpoint = None
        for kind, stage in STAGES if transform else ():
            try:
                applied = self._apply(kind, room.request, room.before, partial(stage, room))
            except TransformError as exc:
                self.emit(Warning(f"{kind.value.event.capitalize()} failed: {exc}"))
                if force_compact:
                    back = request.messages if checkpoint else None
                    changed = Admitted(room.request, room.before, back, checkpoint)
                    raise RecoveryFailed(str(exc), changed) from exc
                continue
            if applied is not None:
                checkpoint = applied.checkpoint
                summary = self._summarizer(provider)
                room = replace(room, request=applied.request, before=applied.after, summary=summary)
        count = room.before
        if count.tokens > self._budget.available:
            self.journal.record(rejection(self._stamp(), count, started, "does_not_fit"))
            raise RejectedError(self._budget.refusal(count), cause="does_not_fit")
        self.journal.record(decision(self._stamp(), "admission", count, count, started))
        return Admitted(room.request, count, request.messages if checkpoint else None, checkpoint)

    def recoverable(self, exc: ContextOverflowError) -> bool:
        """The conversation's lane refused a request as too long: is one recovery (compact once, on the
        compaction lane, and retry once) worth it? Yes when the server named a smaller window, now adopted,
        or when summaries go to another lane, whose window the refusal says nothing against."""
        smaller = self._budget.smaller(exc.n_ctx)
        if smaller is not None:
            self.emit(Warning(smaller.adopted(self._budget.window)))
            self._budget = smaller
        return smaller is not None or self.compaction is not None

    def recover(self, admitted: Admitted, why: str) -> None:
        """Put back the conversation this call transformed, after the provider failed (or the recovery's
        compaction did: RecoveryFailed.changed)."""
        back = admitted.restore
        if back is not None:
            after = self.meter.count(admitted.request.with_messages(back))
            outcome = Outcome(back, after, source=admitted.checkpoint, cause=why)
            self._apply(Kind.RECOVERY, admitted.request, admitted.count, lambda: outcome)

    def observe(self, admitted: Admitted, end: MessageEnd, provider: Provider) -> Observation:
        exact = admitted.count.tokens if admitted.count.exact else None
        seen = self.watch.observe(admitted.request, end, provider, exact, self._budget.window)
        stamp = Stamp(self.where(), self.lane, end.model)  # what this answer said served it
        verdict = self.served.answer(end.model)
        if verdict is not None:
            for event in verdict.said:
                self.emit(event)
            self.journal.record(model_check(stamp, verdict))
        if seen.truncated:
            self.journal.record(overflow(stamp, seen.sample, exact, seen.reason))
        return seen

    # --- explicit actions (the REPL's /compact, /clear, /undo) -------------------------------------

    def compact_now(self, request: Request, provider: Provider, instructions: str | None = None) -> None:
        """Compact now, through the same pipeline. Raises TransformError; the conversation is then kept."""
        room = self._room(request, provider, force=True, instructions=instructions)
        self._apply(Kind.COMPACT, request, room.before, partial(compact, room))

    def start_over(self, request: Request) -> None:
        """Forget the conversation, after a checkpoint /undo can restore. Raises TransformError."""
        empty = self.meter.count(request.with_messages(()))
        outcome = Outcome((), empty, len(request.messages), cause="/clear")
        self._apply(Kind.RESET, request, self.meter.count(request), lambda: outcome)

    def undo(self, request: Request, wanted: str | None = None) -> tuple[Restore, str | None] | None:
        """Restore one transformation further back (or the checkpoint `wanted`); None: nothing to undo.

        Returns what is restored and the checkpoint that now holds the conversation it replaces (None
        when that conversation was empty). Raises StoreError when a checkpoint cannot be read, and
        TransformError when the conversation cannot be checkpointed first: then nothing changes.
        """
        history = self.journal.checkpoint_history()
        chosen = choose(history, request.messages, below=self._undone, wanted=wanted)
        if chosen is None:
            return None
        after = self.meter.count(request.with_messages(chosen.messages))
        outcome = Outcome(chosen.messages, after, len(chosen.messages), chosen.checkpoint, cause="undo")
        applied = self._apply(Kind.UNDO, request, self.meter.count(request), lambda: outcome)
        self._undone = chosen.checkpoint
        return chosen, applied.checkpoint if applied else None

    # --- the one pipeline ------------------------------------------------------------------------

    def _apply(
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
            self.emit(Warning(names.not_written(exc)))
            self.journal.record(rejection(self._stamp(), before, started, f"checkpoint: {exc}"))
            if names.unwritten is None:
                return None
            raise TransformError(names.unwritten) from exc
        except TransformError as exc:
            self.journal.record(rejection(self._stamp(), before, started, f"{names.event}: {exc}"))
            raise
        named = outcome.source or checkpoint
        # Who did the work: the lane that wrote a summary, else the conversation's own.
        lane, served = (outcome.lane, outcome.served) if outcome.lane else (self.lane, self.served.last)
        after = outcome.after.tokens
        self.emit(ContextAction(names.action, before.tokens, after, outcome.count, named, lane, served))
        stamp, was = Stamp(self.where(), lane, served), request.messages
        self.journal.record(transformation(stamp, names.event, before, was, outcome, started, named))
        self.conversation.replace(outcome.messages)
        self.served.summary_on(lane)
        return Applied(request.with_messages(outcome.messages), outcome.after, checkpoint)

    def _checkpoint(self, kind: Kind, request: Request, before: Count) -> str | None:
        reason = kind.checkpoint_reason(request.messages)
        if reason is None:
            return None
        facts = checkpoint_facts(reason, request.messages, before.tokens, self._stamp())
        try:
            checkpoint = self.journal.checkpoint(request.messages, facts)
        except StoreError as exc:
            raise _NotWritten(str(exc)) from exc
        self._undone = None  # a new checkpoint: the next /undo walks back from it
        return checkpoint

    def _room(
        self, request: Request, provider: Provider, *, force: bool = False, instructions: str | None = None
    ) -> Room:
        """What a stage may look at, as plain values: the stages never see the governor."""
        return Room(
            request,
            self.meter.count(request),
            self._budget,
            self.policy,
            self.meter.count,
            self.meter.estimates.of,
            self._summarizer(provider),
            force,
            instructions,
        )

    def _summarizer(self, provider: Provider) -> Summarizer:
        model, prev = self.model or provider.model, self.watch.prev
        return summary_route(self.compaction, self.lane, model, self._budget, self.meter, prev, provider)

    def _stamp(self) -> Stamp:
        """The conversation's lane, and the model its server last said served it."""
        return Stamp(self.where(), self.lane, self.served.last)
