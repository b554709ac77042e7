"""The agent loop (SPEC §1.1): call the model, run the tools it asks for, repeat; every run ends named.

The governor owns the conversation: before each call it admits (and may transform) the request, after
it says whether the server silently dropped part of the prompt. A truncated turn's answer is discarded
(its `turn_end` says `truncated`, so a renderer that streamed it can say so) and the run ends
`context_overflow` with the history intact. The answer's text goes out through a `TextHold`, so a tool
call the model writes as text is shown once, as a call (`TextCall`), never as part of the answer.
Provider errors end the run `error`; the user's Ctrl-C ends it `aborted` with the conversation still
well-formed (every tool call has a result).
Wherever a run ends, `_End` carries its reason to the one place that closes the run.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from functools import partial

from aforo.cancel import cancel_on_sigint
from aforo.context.governor import Governor
from aforo.context.watch import loud_overflow_message, recovery_failed
from aforo.errors import ContextOverflowError, ProviderError, RejectedError, TransformError
from aforo.events import (
    EventSink,
    RunEnd,
    RunReason,
    RunResult,
    TextCall,
    TextDelta,
    TurnEnd,
)
from aforo.messages import Message, MessageEnd, Request, SystemPart
from aforo.protocols import Provider
from aforo.stream import Reply, collect
from aforo.text_hold import TextHold
from aforo.tool_batch import answer, tool_uses
from aforo.tools.registry import ToolRegistry

DEFAULT_MAX_TURNS = 25
CANCELLED = "cancelled by the user"
CANCELLED_RESULT = "[Cancelled by the user before this tool call finished.]"


class _End(Exception):
    """The run ends here, for `reason`; `answer` is the text of the answer that ended it, if any."""

    def __init__(self, reason: RunReason, error: str | None = None, answer: str = "") -> None:
        super().__init__(reason)
        self.reason, self.error, self.answer = reason, error, answer


@dataclass
class _Totals:
    """What one run used, for its RunResult."""

    turns: int = 0
    tool_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0

    def add(self, end: MessageEnd) -> None:
        self.turns += 1
        self.input_tokens += end.usage.prompt_tokens
        self.output_tokens += end.usage.output_tokens

    def result(self, end: _End) -> RunResult:
        return RunResult(end.reason, **asdict(self), error=end.error, answer=end.answer)


@dataclass(kw_only=True, eq=False)
class Agent:
    provider: Provider
    tools: ToolRegistry
    governor: Governor
    system: tuple[SystemPart, ...]
    emit: EventSink
    max_turns: int = DEFAULT_MAX_TURNS
    temperature: float | None = None
    # Stream the answer as it arrives (a truncated one is then marked discarded by its turn_end); False:
    # show it only once the turn is known to be whole (a silent server whose window is a guess).
    live_text: bool = False

    @property
    def messages(self) -> tuple[Message, ...]:
        """The conversation, as the governor holds it."""
        return self.governor.conversation.messages

    def request(self) -> Request:
        reserve = self.governor.budget.reserve
        return Request(
            self.provider.model, self.system, self.tools.specs, self.messages, reserve, self.temperature
        )

    def run(
        self, prompt: str, cancel: threading.Event | None = None, attached: Sequence[Message] = ()
    ) -> RunResult:
        """Answer `prompt`. `attached`: messages that follow it before the first call (the Read calls
        and results of files the user attached), so they are tool results like any other."""
        cancel = cancel or threading.Event()
        totals = _Totals()
        self.governor.conversation.append(Message.user(prompt))
        for message in attached:
            self.governor.conversation.append(message)
        try:
            with cancel_on_sigint(cancel):
                for turn in range(1, self.max_turns + 1):
                    self._turn(turn, cancel, totals)
                _stop_if(cancel)
                raise _End("max_turns", f"stopped after {self.max_turns} turns (raise --max-turns)")
        except _End as end:
            result = totals.result(end)
        except KeyboardInterrupt:
            cancel.set()
            result = totals.result(_End("aborted", CANCELLED))
        if result.reason == "aborted":
            self.governor.conversation.close_pending(CANCELLED_RESULT)
        self.emit(RunEnd(result))
        return result

    # --- one turn ----------------------------------------------------------------------------------

    def _turn(self, turn: int, cancel: threading.Event, totals: _Totals) -> None:
        """Call the model and act on its answer: run its tools (the run goes on) or end the run."""
        _stop_if(cancel)
        reply = self._call(turn, cancel, totals)
        _stop_if(cancel)
        ran = answer(
            reply, self.tools, self.governor.conversation, self.governor.tool_cap(), self.emit, cancel
        )
        totals.tool_calls += ran
        if ran:
            return
        text = self.messages[-1].text if self.messages and self.messages[-1].role == "assistant" else ""
        if reply.end.stop_reason == "max_tokens":
            limit = self.governor.budget.reserve
            raise _End("max_tokens", f"the answer hit the output limit of {limit} tokens", text)
        if reply.end.stop_reason == "refusal":
            raise _End("refusal", "the model refused to answer", text)
        raise _End("end_turn", answer=text)

    def _call(self, turn: int, cancel: threading.Event, totals: _Totals) -> Reply:
        """One model call with its admission, one bounded recovery from a loud overflow, and the verdict."""
        gov, refused = self.governor, None
        while True:
            try:
                admitted = gov.admit(self.request(), self.provider, force_compact=refused is not None)
            except (RejectedError, TransformError) as exc:
                if refused is not None:
                    raise _End("context_overflow", recovery_failed(refused, exc, gov.summary_lane)) from exc
                raise _End("context_overflow", str(exc)) from exc
            hold = TextHold(self.tools.names)
            live = partial(self._hold_and_show, hold) if self.live_text else None
            try:
                reply = collect(self.provider, admitted.request, cancel, live, self.emit)
                break
            except ContextOverflowError as exc:
                # One recovery: adopt the window the server named, compact once (on the compaction
                # lane), retry once.
                if refused is not None or not gov.recoverable(exc):
                    raise _End("context_overflow", loud_overflow_message(exc)) from exc
                refused = exc
            except ProviderError as exc:
                gov.recover(admitted, str(exc))
                raise _End("error", str(exc)) from exc
        seen = gov.observe(admitted, reply.end, self.provider)
        totals.add(reply.end)
        if not seen.truncated:
            self._settle(hold, reply)
        count = admitted.count
        self.emit(
            TurnEnd(
                turn,
                reply.end.usage,
                count.tokens,
                gov.budget.window,
                count.exact,
                seen.truncated,
                seen.context_shift,
                gov.lane,
                reply.end.model,
            )
        )
        if seen.truncated:
            # The server answered without the start of the conversation: that answer is not part of the
            # task. It is dropped; the history stays whole, ending with the user's turn.
            raise _End("context_overflow", seen.message)
        return reply

    def _settle(self, hold: TextHold, reply: Reply) -> None:
        """The rest of the answer's text, then the calls it wrote as text, each as its own event."""
        if not self.live_text:
            self._show(hold.feed(reply.text))
        _rest, uses = tool_uses(reply, self.tools, self.messages)
        late, calls = hold.settle([] if reply.calls else [(u.name, u.input) for u in uses])
        self._show(late)
        for held in calls:
            self.emit(TextCall(held.text, tuple({"name": n, "input": a} for n, a in held.calls)))

    def _hold_and_show(self, hold: TextHold, piece: str) -> None:
        self._show(hold.feed(piece))

    def _show(self, text: str) -> None:
        if text:
            self.emit(TextDelta(text))


def _stop_if(cancel: threading.Event) -> None:
    if cancel.is_set():
        raise _End("aborted", CANCELLED)
