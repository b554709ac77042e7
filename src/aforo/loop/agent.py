"""The agent loop (SPEC §1.1): call the model, run the tools it asks for, repeat; every run ends named.

The governor owns the conversation: before each call it admits (and may transform) the request, after
it says whether the server silently dropped part of the prompt. A truncated turn's answer is discarded
(its `turn_end` says `truncated`) and the run ends `context_overflow` with the history intact. Provider
errors end the run `error` (what the call or a failed recovery changed is put back); Ctrl-C, `aborted`.

Where the server forces a JSON schema, each answer is one constrained step (aforo.reply_format); a server that
refuses the schema is asked again without it, once, and the session goes on with tool definitions. Each
reply is read once (`reading`); what the run does after it, `after_answer`; its budgets of turns and
time, `budgets`. Wherever a run ends, `run.End` carries its reason to the one place that closes the run.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial

from aforo.cancel import cancel_on_sigint
from aforo.context.governor import Governor
from aforo.context.plan import RecoveryFailed
from aforo.context.watch import loud_overflow_message, recovery_failed
from aforo.errors import ContextOverflowError, OutOfTime, ProviderError, RejectedError, TransformError
from aforo.events import EventSink, Info, RunEnd, RunResult
from aforo.loop.after_answer import CitationCheck, next_step
from aforo.loop.budgets import (
    RunBudget,
    before_turn,
    late_seconds,
    past_hard_end,
    past_summary_share,
    spent_during,
    stopped_note,
)
from aforo.loop.opening import Defined, Guide, open_run, recall_view
from aforo.loop.reading import ReadReply, read_reply
from aforo.loop.record_check import asks_files_read, files_read
from aforo.loop.run import CANCELLED, CANCELLED_RESULT, End, RunState, out_of_turns, stop_if, turn_end
from aforo.loop.schema_refusal import refused_schema
from aforo.loop.shown import Shown
from aforo.loop.tool_batch import act_on
from aforo.messages import Message, MessageEnd, Request, SystemPart, Usage
from aforo.protocols import Provider
from aforo.stream import Reply, collect
from aforo.summarised import compacted, summarised
from aforo.tools.registry import ToolRegistry


@dataclass(kw_only=True, eq=False)
class Agent:
    provider: Provider
    tools: ToolRegistry
    governor: Governor
    system: tuple[SystemPart, ...]
    emit: EventSink
    run_budget: RunBudget = field(default_factory=RunBudget)  # the model calls and seconds of one question
    clock: Callable[[], float] = time.monotonic
    temperature: float | None = None
    # Stream the answer as it arrives (a truncated one is then marked discarded by its turn_end); False:
    # show it only once the turn is known to be whole (a silent server whose window is a guess).
    live_text: bool = False
    # Each answer is one JSON step the server's schema forces (aforo.reply_format); False: tool definitions.
    constrained: bool = False
    # What the harness finds for a question before the model reads (aforo.navigate).
    guide: Guide | None = None
    # Where the names of a question about the session are defined (it is not searched).
    defined: Defined | None = None
    # What checks an answer's citations before the run ends with it (aforo.loop.cited).
    check: CitationCheck | None = None

    @property
    def messages(self) -> tuple[Message, ...]:
        """The conversation, as the governor holds it."""
        return self.governor.conversation.messages

    def request(
        self,
        answer_only: bool = False,
        question: str = "",
        worded: bool = False,
        messages: Sequence[Message] | None = None,
    ) -> Request:
        """`messages`: what to send in place of the conversation (a question only about the session)."""
        gov = self.governor
        sent = self.messages if messages is None else tuple(messages)
        fixed = (self.provider.model, self.system, self.tools.specs_for(gov.window), sent)
        return Request(
            *fixed,
            gov.budget.reserve,
            temperature=self.temperature,
            constrained=self.constrained,
            answer_only=answer_only,
            question=question,
            worded=worded,
        )

    def run(
        self,
        prompt: str,
        cancel: threading.Event | None = None,
        attached: Sequence[Message] = (),
        question: str | None = None,
        answer_first: bool = False,
    ) -> RunResult:
        """Answer `prompt`. `attached`: messages that follow it before the first call (the Read calls
        and results of files the user attached), so they are tool results like any other. `question`:
        what a constrained step repeats after the newest results (default: the prompt); piped text the
        prompt frames is not repeated, only the question typed about it. `answer_first`: the first call
        allows only the answer (a question about piped text that asks nothing of the workspace)."""
        cancel = cancel or threading.Event()
        deadline = self.clock() + self.run_budget.seconds
        asked = prompt if question is None else question
        run = RunState(question=asked, compacted=compacted(self.messages), deadline=deadline)
        run.hard = deadline + late_seconds(self.run_budget.seconds)
        opened = open_run(
            self.governor.conversation,
            self.system,
            self.guide,
            self.emit,
            prompt=prompt,
            question=asked,
            attached=attached,
            defined=self.defined,
        )
        self.system = opened.system
        # A question only about the session is answered from its trail, shown for it: no tool call
        # first (the 1.5B wrote `Read a.py, Read b.py` asked which files it had read).
        run.record, run.since = opened.record, opened.since
        if opened.record and asks_files_read(asked):
            run.files_read = files_read(self.governor.conversation.trail)
        run.answer_only = answer_first or bool(opened.record) or opened.answer_only
        try:
            with cancel_on_sigint(cancel):
                for turn in range(1, self.run_budget.turns + 1):
                    self._turn(turn, cancel, run)
                stop_if(cancel)
                raise out_of_turns(self.run_budget.turns)
        except End as end:
            result = run.result(end)
        except KeyboardInterrupt:
            cancel.set()
            result = run.result(End("aborted", CANCELLED))
        if result.reason == "aborted":
            self.governor.conversation.close_pending(CANCELLED_RESULT)
        self.emit(RunEnd(result=result))
        return result

    # --- one turn ----------------------------------------------------------------------------------

    def _turn(self, turn: int, cancel: threading.Event, run: RunState) -> None:
        """Call the model and act on its answer: run its tools (the run goes on) or end the run."""
        stop_if(cancel)
        for note in before_turn(run, turn, self.run_budget, self.clock()):
            self.emit(Info(fields={"step": note}))
        read = self._call(turn, cancel, run)
        stop_if(cancel)
        if read.uses and not run.answer_only and self.clock() >= run.deadline:
            # Calls chosen as the budget ran out: none is run, the answer is asked for at once.
            run.answer_only = True
            self.emit(Info(fields={"step": spent_during(self.run_budget.seconds)}))
            return
        gov = self.governor
        cap, room = gov.tool_cap(), gov.results_room(run.context)
        known = {s: kept for s, kept in summarised(self.messages, run.compacted).items() if s in run.read}
        batch = act_on(
            read,
            self.tools,
            gov.conversation,
            cap,
            self.emit,
            cancel,
            answer_only=run.answer_only,
            question=run.question,
            room=room,
            known=known,
        )
        if batch.ran:
            run.ran(self.messages[-2].tool_uses)
        last, reserve = turn == self.run_budget.turns, gov.budget.reserve
        step = next_step(
            batch,
            read,
            run,
            gov.conversation,
            last=last,
            budget=self.run_budget,
            reserve=reserve,
            check=self.check,
        )
        if step is not None:
            self.emit(Info(fields={"step": step}))

    def _call(self, turn: int, cancel: threading.Event, run: RunState) -> ReadReply:
        """One model call with its admission, one bounded recovery from a loud overflow, and the verdict."""
        gov, refused = self.governor, None
        until = partial(past_hard_end, self.clock, run)  # the question's time is up: stop the call
        # A compaction's summary gets a share of it; then aforo's record stands in for the summary.
        summary_until = partial(past_summary_share, self.clock, run, self.run_budget.seconds)
        while True:
            try:
                view = recall_view(self.messages[run.since :], run.record) if run.record else None
                request = self.request(run.answer_only, run.question, run.worded, view)
                # The trail in place of the conversation: nothing of the conversation to transform.
                admitted = gov.admit(
                    request,
                    self.provider,
                    force_compact=refused is not None,
                    cancel=cancel,
                    transform=not run.record,
                    until=summary_until,
                )
            except (RejectedError, TransformError) as exc:
                if refused is None:
                    raise End("context_overflow", str(exc)) from exc
                if isinstance(exc, RecoveryFailed):  # what the recovery changed is put back
                    gov.recover(exc.changed, str(exc))
                raise End("context_overflow", recovery_failed(refused, exc, gov.summary_lane)) from exc
            shown = Shown(self.tools, self.emit, live=self.live_text)
            try:
                reply = collect(
                    self.provider,
                    admitted.request,
                    cancel,
                    shown.on_text,
                    self.emit,
                    until=until,
                )
                break
            except OutOfTime as exc:
                if exc.partial.strip():  # what the model had answered stays, is shown, and is the answer
                    gov.conversation.append(Message.assistant(exc.partial))
                    shown.settle(
                        read_reply(Reply(exc.partial, (), MessageEnd(Usage(), "end_turn")), self.tools, ())
                    )
                raise End("time_budget", stopped_note(self.run_budget.seconds), exc.partial) from exc
            except ContextOverflowError as exc:
                # One recovery: adopt the window the server named, compact once (on the compaction
                # lane), retry once.
                if refused is not None or not gov.recoverable(exc):
                    raise End("context_overflow", loud_overflow_message(exc)) from exc
                refused = exc
            except ProviderError as exc:
                refusal = refused_schema(exc) if self.constrained else None
                if refusal is not None:
                    self.constrained = False  # tool definitions from now on, said once
                    self.emit(refusal)
                    continue
                gov.recover(admitted, str(exc))
                if exc.partial.strip():  # what the model had answered stays in the conversation
                    gov.conversation.append(Message.assistant(exc.partial))
                raise End("error", str(exc), exc.partial) from exc
        seen = gov.observe(admitted, reply.end, self.provider)
        run.add(reply.end)
        run.context = admitted.count.tokens + reply.end.usage.output_tokens
        read = read_reply(reply, self.tools, self.messages)
        if not seen.truncated:
            shown.settle(read)
        self.emit(turn_end(turn, admitted.count, reply.end, seen, window=gov.window, lane=gov.lane))
        if seen.truncated:
            # The server answered without the start of the conversation: that answer is not part of the
            # task. It is dropped; the history stays whole, ending with the user's turn.
            raise End("context_overflow", seen.message)
        return read
