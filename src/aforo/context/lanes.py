"""Lanes (SPEC §9): named routes, each a server and a model with its own window, counter and detection.

The conversation runs on one lane: the governor's own budget, meter and watch. Summary requests may go to
another (`compact_lane`), a `Lane` here; a stage sees either lane as a `Summarizer` of plain values
(`summary_route`). After a summary went to another lane, the next answer on the
conversation's lane must come from the model the conversation runs on: on Ollama asking for another model
unloads the first, and a server shared with others may have been switched under us. `check_model`
decides that, from what the answers said.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from aforo.context.budget import Budget
from aforo.context.counting import Meter
from aforo.context.plan import Summarizer
from aforo.context.tokens import Sample
from aforo.events import Event, EventSink, ModelCheck, Progress, Warning
from aforo.messages import Request
from aforo.protocols import Provider
from aforo.stream import Reply, collect

# Whether the question's time is up (its hard end): a summary asked for it is stopped then.
Until = Callable[[], bool]

# The name of the conversation's lane when the configuration names none.
DEFAULT_LANE = "default"


@dataclass(kw_only=True)
class Lane:
    """A lane summary requests go to instead of the conversation's own."""

    name: str
    model: str  # what its requests name
    server: str  # its server's kind
    provider: Provider
    budget: Budget  # its window; a summary request must fit `available`, `reserve` bounds the summary
    meter: Meter  # its counter and its calibration, apart from the conversation's

    def summarizer(
        self,
        cancel: threading.Event | None = None,
        emit: EventSink | None = None,
        until: Until | None = None,
    ) -> Summarizer:
        # No growth baseline on this lane: it sees one summary request at a time, never a growing prompt.
        calibration = self.meter.calibration
        return Summarizer(
            lane=self.name,
            model=self.model,
            budget=self.budget,
            count=self.meter.count,
            ask=summary_asker(self.provider, cancel, emit, until),
            ratio=calibration.ratio,
            prev=None,
            calibrate=calibration.update,
        )


def summary_asker(
    provider: Provider, cancel: threading.Event | None, emit: EventSink | None, until: Until | None = None
) -> Callable[[Request], Reply]:
    """How a summary request is read: like a model call, in a worker thread that the run's `cancel`
    stops at once (read without it, the first Ctrl-C only set an event nobody looked at for the 10-35 s
    a summary took), its progress shown as the compaction's. `until` says when the summary's share of the
    question's time is up: it is stopped then (OutOfTime; a compaction before a question's first call
    took 269 s of a 180 s question on a loaded machine)."""
    progress = None if emit is None else partial(_as_compacting, emit)
    return partial(collect, provider, cancel=cancel, progress=progress, until=until)


def _as_compacting(emit: EventSink, event: Event) -> None:
    """The summary request's progress as the compaction's: the prompt's tokens and %, then the summary's
    (its end is not the compaction's, which goes on with the summary)."""
    if isinstance(event, Progress):
        emit(
            Progress(
                phase="compacting",
                done=event.done,
                total=event.total,
                cached=event.cached,
                tokens=event.tokens,
            )
        )


def summary_route(
    compaction: Lane | None,
    lane: str,
    model: str,
    budget: Budget,
    meter: Meter,
    prev: Sample | None,
    provider: Provider,
    cancel: threading.Event | None = None,
    emit: EventSink | None = None,
    until: Until | None = None,
) -> Summarizer:
    """Where a summary request goes: the `compaction` lane, else the conversation's own (`lane`, with its
    window, counter and last good sample `prev`); `cancel` stops it, and `until` when the question's
    time is up; `emit` shows its progress."""
    if compaction is not None:
        return compaction.summarizer(cancel, emit, until)
    return Summarizer(
        lane=lane,
        model=model,
        budget=budget,
        count=meter.count,
        ask=summary_asker(provider, cancel, emit, until),
        ratio=meter.calibration.ratio,
        prev=prev,
        # Summaries on the conversation's lane leave its calibration to the conversation's answers.
        calibrate=lambda _sample: None,
        own=True,
    )


@dataclass(frozen=True)
class ModelVerdict:
    """What the first answer after a summary elsewhere says about the conversation's model."""

    check: ModelCheck
    event: str  # of its telemetry record: model_restored | model_mismatch | warning (not said)
    warning: str | None = None  # for the user, when the model is not known to be back
    cause: str | None = None

    @property
    def said(self) -> tuple[ModelCheck | Warning, ...]:
        """What the user is told: the check, then the warning when there is one."""
        return (self.check,) if self.warning is None else (self.check, Warning(message=self.warning))


class Served:
    """What the conversation's server says it serves: the model of its last answer, the first model it
    named (the one the conversation runs on), and whether a summary went elsewhere since."""

    def __init__(self, lane: str, configured: str) -> None:
        self.lane, self.configured = lane, configured
        self.last = ""  # "" until an answer says
        self._runs_on = ""
        self._away: str | None = None  # the lane the last summary went to, until the next answer here

    def summary_on(self, lane: str) -> None:
        if lane != self.lane:
            self._away = lane

    def answer(self, served: str) -> ModelVerdict | None:
        """Note the model an answer here says served it; after a summary elsewhere, the check."""
        away, self._away = self._away, None
        verdict = check_model(self.lane, self._runs_on or self.configured, served, away) if away else None
        if served:
            self.last, self._runs_on = served, self._runs_on or served
        return verdict


def check_model(lane: str, expected: str, served: str, away: str) -> ModelVerdict:
    """Is the answer's model (`served`) the one the conversation runs on, after a summary on `away`?"""
    check = ModelCheck(
        lane=lane, expected=expected, served=served, restored=bool(served) and served == expected
    )
    if check.restored:
        return ModelVerdict(check, "model_restored")
    cause = f"expected {expected!r} after a summary on lane {away!r}"
    if not served:
        return ModelVerdict(
            check,
            "warning",
            f"Could not check that lane {lane!r} serves {expected!r} again after a summary on lane "
            f"{away!r}: its server does not say which model served the answer.",
            cause + "; the server did not say which model served",
        )
    return ModelVerdict(
        check,
        "model_mismatch",
        f"Lane {lane!r} answered with model {served!r}, not {expected!r}, after a summary on lane {away!r}: "
        "its server switched models (check what it has loaded, e.g. `ollama ps`), so this answer came "
        f"from {served!r}.",
        cause,
    )
