"""One prompt, run: its mentioned files attached, the prompt saved, the run timed and its cost recorded.

`ask` is what the one-shot mode and the REPL do with a prompt. `RunLog` keeps what each run cost as
telemetry, one "run" row per prompt, for `aforo stats`. It sits in the event stream between the agent
and the rest: it adds up the usage of every `TurnEnd` (what the server reported, cached tokens
included) and, at the `RunEnd`, records the totals with the run's wall time (from `begin`, as the prompt
is handed to the agent) and its ending. A run is what the user waits for, so its time includes prompt
processing, tools and any compaction inside it.
"""

from __future__ import annotations

import time

from aforo.cli.mentions import attach
from aforo.cli.piped import Prompt, fit
from aforo.cli.session_keeper import SessionKeeper
from aforo.events import Event, EventSink, RunEnd, RunResult, TurnEnd, Warning
from aforo.loop.agent import Agent
from aforo.messages import Usage
from aforo.protocols import Journal
from aforo.records import Stamp, TelemetryRecord, Where


class RunLog:
    def __init__(self, inner: EventSink, journal: Journal) -> None:
        self.inner = inner
        self.journal = journal
        # Set once the runtime knows the model, server and window (before the first run).
        self.where = Where()
        self._started: float | None = None
        self._usage = Usage()
        self._served = ("", "")  # the lane and model of the run's last answer ("" while none came)

    def begin(self) -> None:
        """A run starts now."""
        self._started = time.monotonic()
        self._usage = Usage()
        self._served = ("", "")

    def __call__(self, event: Event) -> None:
        if isinstance(event, TurnEnd):
            self._usage += event.usage
            self._served = (event.lane, event.model)
        elif isinstance(event, RunEnd) and self._started is not None:
            self._record(event, self._started)
            self._started = None
        self.inner(event)

    def _record(self, end: RunEnd, started: float) -> None:
        lane, served = self._served
        self.journal.record(
            TelemetryRecord(
                event="run",
                stamp=Stamp(where=self.where, lane=lane, served=served),
                usage=self._usage,
                duration_ms=(time.monotonic() - started) * 1000,
                cause=end.reason,
            )
        )


def ask(agent: Agent, keeper: SessionKeeper, log: RunLog, prompt: Prompt) -> RunResult:
    """Run `prompt` with the files its question mentions attached and its piped text cut to fit; the
    caller saves the session after it."""
    attached = attach(prompt.question, agent.tools, agent.governor.tool_cap(), agent.messages, keeper)
    for note in attached.notes:
        keeper(Warning(message=note))
    fitted = fit(prompt, agent)
    if fitted.notice is not None:
        keeper(Warning(message=fitted.notice))
    # After the attachments' events (the keeper saves on events): the prompt is on disk before the run.
    keeper.begin(fitted.text)
    log.begin()
    # Piped text alone is the question: repeated after results in the form that fits.
    question = prompt.typed or fitted.text
    answer_first = prompt.from_text and not attached.messages
    return agent.run(fitted.text, attached=attached.messages, question=question, answer_first=answer_first)
