"""The agent loop (SPEC §1.1): call the model, run the tools it asks for, repeat; every run ends named.

The governor owns the conversation: before each call it admits (and may transform) the request, after
it says whether the server silently dropped part of the prompt. A truncated turn's answer is discarded
and the run ends `context_overflow` with the history intact. Provider errors end the run `error`; the
user's Ctrl-C ends it `aborted` with the conversation still well-formed (every tool call has a result).
Wherever a run ends, `_End` carries its reason to the one place that closes the run.
"""

from __future__ import annotations

import threading

from aforo.cancel import cancel_on_sigint
from aforo.context.governor import Governor
from aforo.errors import ContextOverflowError, ProviderError, RejectedError, TransformError
from aforo.events import (
    EventSink,
    RunEnd,
    RunReason,
    RunResult,
    TextDelta,
    ToolEnd,
    ToolStart,
    TurnEnd,
    Warning,
)
from aforo.messages import Message, MessageEnd, Request, SystemPart, TextBlock, ToolResult, ToolUse
from aforo.protocols import Provider
from aforo.stream import Reply, collect
from aforo.tool_batch import answered_calls, run_batch, tool_uses
from aforo.tools.registry import ToolRegistry

DEFAULT_MAX_TURNS = 25
CANCELLED = "cancelled by the user"
CANCELLED_RESULT = "[Cancelled by the user before this tool call finished.]"
# Models that write their calls as text (Qwen2.5-Coder 0.5B) otherwise keep calling tools forever after
# the result arrives; measured on the real server, this line turns the next answer into prose.
TEXT_CALL_HINT = (
    "The output above is the result of your tool call. Now explain it to the user in prose, to answer "
    "their request."
)


class _End(Exception):
    """The run ends here, for `reason`."""

    def __init__(self, reason: RunReason, error: str | None = None) -> None:
        super().__init__(reason)
        self.reason, self.error = reason, error


class _Totals:
    """What one run used, for its RunResult."""

    def __init__(self) -> None:
        self.turns = self.tool_calls = self.input_tokens = self.output_tokens = 0

    def add(self, end: MessageEnd) -> None:
        self.turns += 1
        self.input_tokens += end.usage.prompt_tokens
        self.output_tokens += end.usage.output_tokens

    def result(self, end: _End) -> RunResult:
        return RunResult(
            end.reason, self.turns, self.tool_calls, self.input_tokens, self.output_tokens, end.error
        )


class Agent:
    def __init__(
        self,
        *,
        provider: Provider,
        tools: ToolRegistry,
        governor: Governor,
        system: tuple[SystemPart, ...],
        emit: EventSink,
        max_turns: int = DEFAULT_MAX_TURNS,
        temperature: float | None = None,
        live_text: bool = False,
    ) -> None:
        self.provider = provider
        self.tools = tools
        self.governor = governor
        self.system = system
        self.emit = emit
        self.max_turns = max_turns
        self.temperature = temperature
        # Stream the answer as it arrives only where a silent truncation cannot happen (a server that
        # errors on overflow); otherwise an answer is shown only once the turn is known to be whole.
        self.live_text = live_text

    @property
    def messages(self) -> tuple[Message, ...]:
        """The conversation, as the governor holds it."""
        return self.governor.conversation.messages

    def request(self) -> Request:
        gov = self.governor
        return Request(
            self.provider.model,
            self.system,
            self.tools.specs,
            self.messages,
            gov.budget.reserve,
            self.temperature,
        )

    def run(self, prompt: str, cancel: threading.Event | None = None) -> RunResult:
        cancel = cancel or threading.Event()
        totals = _Totals()
        self.governor.conversation.append(Message.user(prompt))
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
        if not self.live_text and reply.text:
            self.emit(TextDelta(reply.text))
        text, uses = tool_uses(reply, self.tools, self.messages)
        blocks: list[TextBlock | ToolUse] = [TextBlock(text)] if text.strip() else []
        self.governor.conversation.append(Message("assistant", (*blocks, *uses)))
        if uses:
            self._run_tools(uses, totals, hint=not reply.calls)
        elif reply.end.stop_reason == "max_tokens":
            raise _End(
                "max_tokens", f"the answer hit the output limit of {self.governor.budget.reserve} tokens"
            )
        elif reply.end.stop_reason == "refusal":
            raise _End("refusal", "the model refused to answer")
        else:
            raise _End("end_turn")

    def _call(self, turn: int, cancel: threading.Event, totals: _Totals) -> Reply:
        """One model call with its admission, one bounded recovery from a loud overflow, and the verdict."""
        gov, force = self.governor, False
        while True:
            try:
                admitted = gov.admit(self.request(), self.provider, force_compact=force)
            except (RejectedError, TransformError) as exc:
                raise _End("context_overflow", str(exc)) from exc
            try:
                reply = collect(self.provider, admitted.request, cancel, self._live_text)
                break
            except ContextOverflowError as exc:
                # One recovery: adopt the window the server named, compact once, retry once.
                if force or not self._adopt_window(exc.n_ctx):
                    raise _End("context_overflow", _loud_overflow_message(exc)) from exc
                force = True
            except ProviderError as exc:
                gov.recover(admitted, str(exc))
                raise _End("error", str(exc)) from exc
        seen = gov.observe(admitted, reply.end, self.provider)
        totals.add(reply.end)
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
            )
        )
        if seen.truncated:
            # The server answered without the start of the conversation: that answer is not part of the
            # task. It is dropped; the history stays whole, ending with the user's turn.
            raise _End("context_overflow", seen.message)
        return reply

    def _live_text(self, text: str) -> None:
        if self.live_text:
            self.emit(TextDelta(text))

    def _adopt_window(self, real: int | None) -> bool:
        """Take the window the server told us, if it is smaller, and say so. False: nothing to retry with."""
        window = self.governor.budget.window
        if real is None or real >= window:
            return False
        self.emit(
            Warning(
                f"The server says its window is {real} tokens, not {window}: using {real} from now on, "
                f"compacting once and retrying once. Pass --context-window {real} to start with it."
            )
        )
        self.governor.set_window(real, "server error")
        return True

    def _run_tools(self, uses: list[ToolUse], totals: _Totals, *, hint: bool) -> None:
        for use in uses:
            self.emit(ToolStart(use.id, use.name, use.input))
        answered = answered_calls(self.messages[:-1])
        outcomes = run_batch(self.tools, uses, cap=self.governor.tool_cap(), answered=answered)
        totals.tool_calls += len(uses)
        # Appended before the events are emitted: whoever persists on events saves the results too.
        results: tuple[ToolResult | TextBlock, ...] = tuple(o.result for o in outcomes)
        self.governor.conversation.append(
            Message("user", (*results, TextBlock(TEXT_CALL_HINT)) if hint else results)
        )
        for o in outcomes:
            self.emit(
                ToolEnd(o.use.id, o.use.name, o.duration_ms, not o.result.is_error, o.truncated, o.error)
            )


def _stop_if(cancel: threading.Event) -> None:
    if cancel.is_set():
        raise _End("aborted", CANCELLED)


def _loud_overflow_message(exc: ContextOverflowError) -> str:
    where = f" (server window {exc.n_ctx} tokens)" if exc.n_ctx else ""
    return (
        f"The server refused the request as too long{where}: {exc}. The conversation is intact. "
        "Fix: set the real window with --context-window N so aforo clears and compacts in time, "
        "or start a new conversation."
    )
