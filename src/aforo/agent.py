"""The agent loop (SPEC §1.1): call the model, run the tools it asks for, repeat; every run ends named.

The governor owns the conversation: before each call it admits (and may transform) the request, after
it says whether the server silently dropped part of the prompt. A truncated turn's answer is discarded
(its `turn_end` says `truncated`) and the run ends `context_overflow` with the history intact. Provider
errors end the run `error` (what the call or a failed recovery changed is put back); Ctrl-C, `aborted`.

Where the server forces a JSON schema, each answer is one constrained step (aforo.steps); a server that
refuses the schema is asked again without it, once, and the session goes on with tool definitions. An
answer that only repeats calls whose results the model has is not kept: the next request allows only
the answer, and a model that still calls tools then ends the run `no_progress`. An answer that says
nothing (`...`, the reply format copied back) is not kept either: the model is asked once more, for an
answer that must start with a letter or a digit, and one that says nothing again ends `empty_answer`.
Wherever a run ends, `_End` carries its reason to the one place that closes the run.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field

from aforo.cancel import cancel_on_sigint
from aforo.context.governor import Governor
from aforo.context.ledger import evidence_source
from aforo.context.plan import RecoveryFailed
from aforo.context.watch import loud_overflow_message, recovery_failed
from aforo.errors import ContextOverflowError, HTTPStatusError, ProviderError, RejectedError, TransformError
from aforo.events import EventSink, Info, RunEnd, RunReason, RunResult, TurnEnd, Warning
from aforo.limits import RUN_SECONDS
from aforo.messages import Message, MessageEnd, Request, SystemPart
from aforo.navigate.guide import Guided
from aforo.protocols import Provider
from aforo.shown import Shown
from aforo.stream import Reply, collect
from aforo.summarised import compacted, summarised
from aforo.tool_batch import answer
from aforo.tools.registry import ToolRegistry

DEFAULT_MAX_TURNS = 25
CANCELLED = "cancelled by the user"
CANCELLED_RESULT = "[Cancelled by the user before this tool call finished.]"
# Turns past the time budget: the answer asked for, and once more if it said nothing.
LATE_TURNS = 2
# How much of an answer that said nothing its ending quotes.
SAID_CHARS = 40
NATIVE = "tools are sent as definitions instead (--tool-mode native)."


class _End(Exception):
    """The run ends here, for `reason`; `answer` is the text of the answer that ended it, if any."""

    def __init__(self, reason: RunReason, error: str | None = None, answer: str = "") -> None:
        super().__init__(reason)
        self.reason, self.error, self.answer = reason, error, answer


@dataclass
class _Run:
    """One run's state: what it used, for its RunResult, and whether only an answer may come now."""

    turns: int = 0
    tool_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    answer_only: bool = False
    question: str = ""
    worded: bool = False  # an answer said nothing: the next must have a word in it (the schema says so)
    context: int = 0  # tokens of the conversation once the last answer is in it
    compacted: frozenset[str] = frozenset()  # the compactions the run started with (not its own)
    deadline: float = math.inf  # when the time budget is spent (the agent's clock)
    late: int = 0  # turns started after the deadline
    read: set[str] = field(default_factory=set)  # the sources (as evidence lists name them) it called

    def add(self, end: MessageEnd) -> None:
        self.turns += 1
        self.input_tokens += end.usage.prompt_tokens
        self.output_tokens += end.usage.output_tokens

    def result(self, end: _End) -> RunResult:
        return RunResult(
            reason=end.reason,
            turns=self.turns,
            tool_calls=self.tool_calls,
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            error=end.error,
            answer=end.answer,
        )


@dataclass(kw_only=True, eq=False)
class Agent:
    provider: Provider
    tools: ToolRegistry
    governor: Governor
    system: tuple[SystemPart, ...]
    emit: EventSink
    max_turns: int = DEFAULT_MAX_TURNS
    # Seconds a question may take before the model is asked to answer from what it has.
    time_budget: float = RUN_SECONDS.value
    clock: Callable[[], float] = time.monotonic
    temperature: float | None = None
    # Stream the answer as it arrives (a truncated one is then marked discarded by its turn_end); False:
    # show it only once the turn is known to be whole (a silent server whose window is a guess).
    live_text: bool = False
    # Each answer is one JSON step the server's schema forces (aforo.steps); False: tool definitions.
    constrained: bool = False
    # What the harness finds for a question before the model reads (aforo.navigate): called as each run
    # begins with the question, the system prompt, the call ids taken and whether the conversation is empty.
    guide: Callable[[str, tuple[SystemPart, ...], Collection[str], bool], Guided] | None = None

    @property
    def messages(self) -> tuple[Message, ...]:
        """The conversation, as the governor holds it."""
        return self.governor.conversation.messages

    def request(self, answer_only: bool = False, question: str = "", worded: bool = False) -> Request:
        gov = self.governor
        fixed = (self.provider.model, self.system, self.tools.specs_for(gov.window), self.messages)
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
    ) -> RunResult:
        """Answer `prompt`. `attached`: messages that follow it before the first call (the Read calls
        and results of files the user attached), so they are tool results like any other. `question`:
        what a constrained step repeats after the newest results (default: the prompt); piped text the
        prompt frames is not repeated, only the question typed about it."""
        cancel = cancel or threading.Event()
        deadline = self.clock() + self.time_budget
        asked = prompt if question is None else question
        run = _Run(question=asked, compacted=compacted(self.messages), deadline=deadline)
        if self.guide is not None:
            taken = {u.id for m in (*self.messages, *attached) for u in m.tool_uses}
            guided = self.guide(run.question, self.system, taken, not self.messages)
            self.system, attached = guided.system, (*attached, *guided.messages)
            for event in guided.events:
                self.emit(event)
        for message in (Message.user(prompt), *attached):
            self.governor.conversation.append(message)
        try:
            with cancel_on_sigint(cancel):
                for turn in range(1, self.max_turns + 1):
                    self._turn(turn, cancel, run)
                _stop_if(cancel)
                raise _End("max_turns", f"stopped after {self.max_turns} turns (raise --max-turns)")
        except _End as end:
            result = run.result(end)
        except KeyboardInterrupt:
            cancel.set()
            result = run.result(_End("aborted", CANCELLED))
        if result.reason == "aborted":
            self.governor.conversation.close_pending(CANCELLED_RESULT)
        self.emit(RunEnd(result=result))
        return result

    # --- one turn ----------------------------------------------------------------------------------

    def _turn(self, turn: int, cancel: threading.Event, run: _Run) -> None:
        """Call the model and act on its answer: run its tools (the run goes on) or end the run."""
        _stop_if(cancel)
        self._mind_the_time(run)
        if turn == self.max_turns and not run.answer_only and self.max_turns > 1:
            run.answer_only = True  # the last call: an answer from what it has, rather than none
            self.emit(
                Info(
                    fields={
                        "step": f"the last of {self.max_turns} model calls (--max-turns); answer requested"
                    }
                )
            )
        reply = self._call(turn, cancel, run)
        _stop_if(cancel)
        gov, only = self.governor, run.answer_only
        cap, room = gov.tool_cap(), gov.results_room(run.context)
        known = {s: kept for s, kept in summarised(self.messages, run.compacted).items() if s in run.read}
        batch = answer(
            reply,
            self.tools,
            gov.conversation,
            cap,
            self.emit,
            cancel,
            answer_only=only,
            question=run.question,
            room=room,
            known=known,
        )
        run.tool_calls += batch.ran
        if batch.ran:
            run.read |= {evidence_source(u) for u in self.messages[-2].tool_uses}
        if batch.summarised:
            run.answer_only = True  # nothing new was asked: the next request allows only the answer
            said = f"asked again for what the compaction summarised ({batch.summarised}); answer requested"
            self.emit(Info(fields={"step": said}))
        if batch.ran:
            return
        if batch.said_nothing:
            said = reply.text.strip()[:SAID_CHARS]
            if run.worded:
                raise _End("empty_answer", f"the model's answer said nothing ({said!r}), twice")
            run.worded = True  # asked once more, for an answer that starts with a letter or a digit
            self.emit(
                Info(fields={"step": f"the answer said nothing ({said!r}); asked again for one in words"})
            )
            return
        if batch.stalled and only and turn == self.max_turns:
            raise _End("max_turns", f"stopped after {self.max_turns} turns (raise --max-turns)")
        if batch.stalled and only and run.late:
            raise _End("time_budget", f"the model kept calling tools ({batch.stalled}) {self._late_note()}")
        if batch.stalled and only:
            raise _End("no_progress", f"the model kept calling tools ({batch.stalled}) when asked to answer")
        if batch.stalled:
            run.answer_only = True  # the next request allows only the answer
            self.emit(
                Info(fields={"step": f"asked again for results it has ({batch.stalled}); answer requested"})
            )
            return
        text = self.messages[-1].text if self.messages and self.messages[-1].role == "assistant" else ""
        if reply.end.stop_reason == "max_tokens":
            raise _End("max_tokens", f"the answer hit the output limit of {gov.budget.reserve} tokens", text)
        if reply.end.stop_reason == "refusal":
            raise _End("refusal", "the model refused to answer", text)
        raise _End("end_turn", answer=text)

    def _mind_the_time(self, run: _Run) -> None:
        """Past the time budget only an answer may come: asked for once (and once more if it says
        nothing); a run still going after that ends `time_budget`."""
        if self.clock() < run.deadline:
            return
        run.late += 1
        if run.late > LATE_TURNS:
            raise _End("time_budget", f"no answer came {self._late_note()}")
        if not run.answer_only:
            run.answer_only = True
            spent = f"the time budget of {self.time_budget:g} s is spent; answer requested"
            self.emit(Info(fields={"step": spent}))

    def _late_note(self) -> str:
        return f"when asked to answer after the time budget of {self.time_budget:g} s (raise --time-budget)"

    def _call(self, turn: int, cancel: threading.Event, run: _Run) -> Reply:
        """One model call with its admission, one bounded recovery from a loud overflow, and the verdict."""
        gov, refused = self.governor, None
        while True:
            try:
                request = self.request(run.answer_only, run.question, run.worded)
                admitted = gov.admit(request, self.provider, force_compact=refused is not None, cancel=cancel)
            except (RejectedError, TransformError) as exc:
                if refused is None:
                    raise _End("context_overflow", str(exc)) from exc
                if isinstance(exc, RecoveryFailed):  # what the recovery changed is put back
                    gov.recover(exc.changed, str(exc))
                raise _End("context_overflow", recovery_failed(refused, exc, gov.summary_lane)) from exc
            shown = Shown(self.tools, self.emit, live=self.live_text)
            try:
                reply = collect(self.provider, admitted.request, cancel, shown.on_text, self.emit)
                break
            except ContextOverflowError as exc:
                # One recovery: adopt the window the server named, compact once (on the compaction
                # lane), retry once.
                if refused is not None or not gov.recoverable(exc):
                    raise _End("context_overflow", loud_overflow_message(exc)) from exc
                refused = exc
            except ProviderError as exc:
                if self.constrained and _refused_schema(exc):
                    self.constrained = False  # tool definitions from now on, said once
                    self.emit(
                        Warning(message=f"The server refused the JSON-schema constraint ({exc}); {NATIVE}")
                    )
                    continue
                gov.recover(admitted, str(exc))
                if exc.partial.strip():  # what the model had answered stays in the conversation
                    gov.conversation.append(Message.assistant(exc.partial))
                raise _End("error", str(exc), exc.partial) from exc
        seen = gov.observe(admitted, reply.end, self.provider)
        run.add(reply.end)
        run.context = admitted.count.tokens + reply.end.usage.output_tokens
        if not seen.truncated:
            shown.settle(reply, self.messages)
        count, end = admitted.count, reply.end
        window, cut, shift = gov.window, seen.truncated, seen.context_shift
        self.emit(
            TurnEnd(
                turn=turn,
                usage=end.usage,
                context=count.tokens,
                window=window,
                exact=count.exact,
                truncated=cut,
                context_shift=shift,
                lane=gov.lane,
                model=end.model,
            )
        )
        if seen.truncated:
            # The server answered without the start of the conversation: that answer is not part of the
            # task. It is dropped; the history stays whole, ending with the user's turn.
            raise _End("context_overflow", seen.message)
        return reply


def _refused_schema(exc: ProviderError) -> bool:
    """A client error to a constrained request: the server would not take the JSON schema."""
    return isinstance(exc, HTTPStatusError) and exc.status in (400, 422)


def _stop_if(cancel: threading.Event) -> None:
    if cancel.is_set():
        raise _End("aborted", CANCELLED)
