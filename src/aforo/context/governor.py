"""The governor: it owns the conversation, admits every model call and watches what comes back (SPEC §3-§5).

Before a call it runs the stages (clear, compact) and refuses locally what still cannot fit; after it,
the watch decides whether the server silently dropped part of the prompt. Every transformation goes
through one pipeline, `Pipeline.apply`: checkpoint first, transform in memory, then event, telemetry and
`Conversation.replace`; on failure a rejection record, and the conversation is left as it was.
Helpers get plain values (`Room`), never the governor. Summary requests go to the compaction lane when
one is set (`aforo.context.lanes`), and the next answer on the conversation's lane is checked for the
model it was served by.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, replace
from functools import partial

from aforo.context.breakdown import Breakdown, break_down
from aforo.context.budget import Budget
from aforo.context.compaction import compact
from aforo.context.conversation import Conversation
from aforo.context.counting import Meter
from aforo.context.dropped import Dropped, since_newest
from aforo.context.lanes import DEFAULT_LANE, Lane, Served, Until, summary_route
from aforo.context.pipeline import Pipeline
from aforo.context.plan import Admitted, Outcome, RecoveryFailed, Room, Summarizer
from aforo.context.policy import Policy
from aforo.context.rows import decision, model_check, overflow, rejection
from aforo.context.stages import Cap
from aforo.context.tokens import Count
from aforo.context.transforms import STAGES, Kind
from aforo.context.undo import Restore, choose
from aforo.context.watch import Observation, Watch
from aforo.errors import ContextOverflowError, RejectedError, TransformError
from aforo.events import EventSink, Warning
from aforo.messages import MessageEnd, Request
from aforo.protocols import Journal, Provider, TokenCounter
from aforo.records import Stamp, Where

_CANCELLED = "cancelled by the user during the compaction"


def _changed(room: Room, request: Request, checkpoint: str | None) -> Admitted:
    """What the stages so far did to `request`'s conversation (now `room`'s), for `recover` to put back."""
    back = request.messages if checkpoint else None
    return Admitted(request=room.request, count=room.before, restore=back, checkpoint=checkpoint)


@dataclass(frozen=True, kw_only=True)
class GovernedLane:
    """The lane a conversation runs on, as its governor knows it: the window it starts from, how its
    tokens are counted, whether that window was measured, and what records say of it. The front doors'
    opened lane (`aforo.servers.open_lane.OpenLane`) is one, with its server and provider besides."""

    budget: Budget
    name: str = DEFAULT_LANE
    model: str = ""
    server_kind: str = ""
    counter: TokenCounter | None = None  # None: the governor estimates
    window_known: bool = False  # the window came from the server or a probe, not a default


class Governor:
    def __init__(
        self,
        lane: GovernedLane,
        *,
        policy: Policy,
        journal: Journal,
        emit: EventSink,
        compaction: Lane | None = None,
    ) -> None:
        self.policy, self.journal, self.emit = policy, journal, emit
        self.model, self.server = lane.model, lane.server_kind
        # The conversation's lane, and the one summary requests go to instead (None: this one).
        self.lane, self.compaction = lane.name, compaction
        self.served = Served(lane.name, lane.model)
        self._budget = lane.budget  # the governor's own from here: a server's overflow may shrink it
        self.meter = Meter(lane.counter, emit)
        self.watch = Watch(self.meter, emit, window_known=lane.window_known)
        self.conversation = Conversation(self.meter, self.watch)
        self.pipeline = Pipeline(
            journal=journal, emit=emit, conversation=self.conversation, served=self.served, stamp=self._stamp
        )

    # --- views (the conversation's one door is `conversation`: the loop appends through it, a resumed
    # session replaces it, an interrupt closes its pending calls) ----------------------------------

    @property
    def budget(self) -> Budget:
        return self._budget

    @property
    def window(self) -> int:
        return self._budget.window

    def where(self) -> Where:
        """What every record says of where it was made: model, server, window and counter."""
        budget = self._budget
        return Where(
            model=self.model,
            server=self.server,
            window=budget.window,
            window_source=budget.source,
            counter=self.meter.name,
        )

    @property
    def summary_lane(self) -> str:
        """The lane summary requests go to."""
        return self.compaction.name if self.compaction is not None else self.lane

    def count(self, request: Request) -> Count:
        return self.meter.count(request)

    def tool_cap(self) -> Cap:
        """The cap of stage 1: no single tool result may exceed it."""
        return Cap(self.policy.cap_tokens(self._budget), self.meter.calibration.ratio)

    def results_room(self, context: int) -> int:
        """The tokens new tool results may add to a conversation of `context` tokens before it reaches
        compaction: a batch that filled the window would be compacted before the model read it."""
        return int(self.policy.compact_threshold(self._budget)) - context

    def breakdown(self, request: Request) -> Breakdown:
        """What fills the window, by section (/context)."""
        return break_down(request, self._budget, self.meter.count(request), self.meter.calibration.ratio)

    def dropped(self) -> tuple[str, Dropped] | None:
        """What the newest checkpoint holds that the conversation lost since (/dropped); None: no checkpoint.
        Raises StoreError when that checkpoint cannot be read."""
        return since_newest(self.journal.checkpoint_history(), self.conversation.messages)

    # --- around a call ---------------------------------------------------------------------------

    def admit(
        self,
        request: Request,
        provider: Provider,
        *,
        force_compact: bool = False,
        cancel: threading.Event | None = None,
        transform: bool = True,
        until: Until | None = None,
    ) -> Admitted:
        """Run the stages and refuse locally what still cannot fit (RejectedError: nothing was sent).

        `force_compact` compacts whatever the count; if that fails, RecoveryFailed says what to put back.
        `cancel` (the run's Ctrl-C) stops a summary request at once: KeyboardInterrupt, with the
        conversation as it was before this admission; `until` (the summary's share of the question's
        time) stops it too, and the compaction goes on with aforo's record alone. Without `transform`
        no stage runs: the conversation is sent as it is or refused (the gateway's default, where the
        conversation is the client's)."""
        started = time.monotonic()
        room = self._room(request, provider, force=force_compact, cancel=cancel, until=until)
        checkpoint = None
        for kind, stage in STAGES if transform else ():
            try:
                applied = self.pipeline.apply(kind, room.request, room.before, partial(stage, room))
            except KeyboardInterrupt:
                if checkpoint is not None:  # a clearing went before the compaction stopped: put it back
                    self.recover(_changed(room, request, checkpoint), _CANCELLED)
                raise
            except TransformError as exc:
                self.emit(Warning(message=f"{kind.value.event.capitalize()} failed: {exc}"))
                if force_compact:
                    raise RecoveryFailed(str(exc), _changed(room, request, checkpoint)) from exc
                continue
            if applied is not None:
                checkpoint = applied.checkpoint
                summary = self._summarizer(provider, cancel, until)
                room = replace(room, request=applied.request, before=applied.after, summary=summary)
        count = room.before
        if count.tokens > self._budget.available:
            self.journal.record(rejection(self._stamp(), count, started, "does_not_fit"))
            raise RejectedError(self._budget.refusal(count), cause="does_not_fit")
        self.journal.record(decision(self._stamp(), "admission", count, count, started))
        return Admitted(
            request=room.request,
            count=count,
            restore=request.messages if checkpoint else None,
            checkpoint=checkpoint,
        )

    def recoverable(self, exc: ContextOverflowError) -> bool:
        """The conversation's lane refused a request as too long: is one recovery (compact once, on the
        compaction lane, and retry once) worth it? Yes when the server named a smaller window, now adopted,
        or when summaries go to another lane, whose window the refusal says nothing against."""
        smaller = self._budget.smaller(exc.n_ctx)
        if smaller is not None:
            self.emit(Warning(message=smaller.adopted(self._budget.window)))
            self._budget = smaller
        return smaller is not None or self.compaction is not None

    def recover(self, admitted: Admitted, why: str) -> None:
        """Put back the conversation this call transformed, after the provider failed (or the recovery's
        compaction did: RecoveryFailed.changed)."""
        back = admitted.restore
        if back is not None:
            after = self.meter.count(admitted.request.with_messages(back))
            outcome = Outcome(messages=back, after=after, source=admitted.checkpoint, cause=why)
            self.pipeline.apply(Kind.RECOVERY, admitted.request, admitted.count, lambda: outcome)

    def observe(self, admitted: Admitted, end: MessageEnd, provider: Provider) -> Observation:
        exact = admitted.count.tokens if admitted.count.exact else None
        seen = self.watch.observe(admitted.request, end, provider, exact, self._budget.window)
        stamp = Stamp(where=self.where(), lane=self.lane, served=end.model)  # what this answer said served it
        verdict = self.served.answer(end.model)
        if verdict is not None:
            for event in verdict.said:
                self.emit(event)
            self.journal.record(model_check(stamp, verdict))
        if seen.truncated:
            self.journal.record(overflow(stamp, seen.sample, exact, seen.reason))
        return seen

    # --- explicit actions (the REPL's /compact, /clear, /undo) -------------------------------------

    def compact_now(
        self,
        request: Request,
        provider: Provider,
        instructions: str | None = None,
        cancel: threading.Event | None = None,
    ) -> None:
        """Compact now, through the same pipeline. Raises TransformError, or KeyboardInterrupt when
        `cancel` is set; the conversation is then kept."""
        room = self._room(request, provider, force=True, instructions=instructions, cancel=cancel)
        self.pipeline.apply(Kind.COMPACT, request, room.before, partial(compact, room))

    def start_over(self, request: Request) -> None:
        """Forget the conversation, after a checkpoint /undo can restore. Raises TransformError."""
        empty = self.meter.count(request.with_messages(()))
        outcome = Outcome(messages=(), after=empty, count=len(request.messages), cause="/clear")
        self.pipeline.apply(Kind.RESET, request, self.meter.count(request), lambda: outcome)

    def undo(self, request: Request, wanted: str | None = None) -> tuple[Restore, str | None] | None:
        """Restore one transformation further back (or the checkpoint `wanted`); None: nothing to undo.

        Returns what is restored and the checkpoint that now holds the conversation it replaces (None
        when that conversation was empty). Raises StoreError when a checkpoint cannot be read, and
        TransformError when the conversation cannot be checkpointed first: then nothing changes.
        """
        history = self.journal.checkpoint_history()
        chosen = choose(history, request.messages, below=self.pipeline.undone, wanted=wanted)
        if chosen is None:
            return None
        after = self.meter.count(request.with_messages(chosen.messages))
        outcome = Outcome(
            messages=chosen.messages,
            after=after,
            count=len(chosen.messages),
            source=chosen.checkpoint,
            cause="undo",
        )
        applied = self.pipeline.apply(Kind.UNDO, request, self.meter.count(request), lambda: outcome)
        self.pipeline.undone = chosen.checkpoint
        return chosen, applied.checkpoint if applied else None

    def _room(
        self,
        request: Request,
        provider: Provider,
        *,
        force: bool = False,
        instructions: str | None = None,
        cancel: threading.Event | None = None,
        until: Until | None = None,
    ) -> Room:
        """What a stage may look at, as plain values: the stages never see the governor."""
        return Room(
            request=request,
            before=self.meter.count(request),
            budget=self._budget,
            policy=self.policy,
            count=self.meter.count,
            estimate=self.meter.estimates.of,
            summary=self._summarizer(provider, cancel, until),
            force=force,
            instructions=instructions,
            cached=request,
        )

    def _summarizer(
        self, provider: Provider, cancel: threading.Event | None = None, until: Until | None = None
    ) -> Summarizer:
        model, prev, budget, meter = self.model or provider.model, self.watch.prev, self._budget, self.meter
        return summary_route(
            self.compaction, self.lane, model, budget, meter, prev, provider, cancel, self.emit, until
        )

    def _stamp(self) -> Stamp:
        """The conversation's lane, and the model its server last said served it."""
        return Stamp(where=self.where(), lane=self.lane, served=self.served.last)
