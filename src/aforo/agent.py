"""The agent loop (SPEC §1.1): call the model, run the tools it asks for, repeat; every run ends named.

The loop owns the conversation and nothing else. Before each call the governor admits (and may
transform) the request; after it, the governor says whether the server silently dropped part of the
prompt. A truncated turn's answer is discarded and the run ends `context_overflow` with the history
intact. Provider errors end the run `error`; the user's Ctrl-C ends it `aborted` with the
conversation still well-formed (every tool call has a result).
"""

from __future__ import annotations

import json
import threading

from aforo.cancel import cancel_on_sigint, interruptible
from aforo.context.compaction import CompactionError
from aforo.context.governor import Governor, Prepared
from aforo.errors import ContextOverflowError, ProviderError, RejectedError
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
from aforo.messages import (
    Message,
    MessageEnd,
    Request,
    StreamText,
    StreamToolCall,
    SystemPart,
    TextBlock,
    ToolResult,
    ToolUse,
)
from aforo.protocols import Provider
from aforo.providers.textcalls import extract_text_tool_calls
from aforo.tool_batch import answered_calls, run_batch
from aforo.tools.registry import ToolRegistry

DEFAULT_MAX_TURNS = 25
CANCELLED_RESULT = "[Cancelled by the user before this tool call finished.]"
# Models that write their calls as text (Qwen2.5-Coder 0.5B) otherwise keep calling tools forever after
# the result arrives; measured on the real server, this line turns the next answer into prose.
TEXT_CALL_HINT = (
    "The output above is the result of your tool call. Now explain it to the user in prose, to answer "
    "their request."
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
        messages: list[Message] | None = None,
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
        self.messages: list[Message] = list(messages or [])
        self._tool_ids = 0

    def request(self) -> Request:
        return Request(
            self.provider.model,
            self.system,
            self.tools.specs,
            tuple(self.messages),
            self.governor.budget.reserve,
            self.temperature,
        )

    def run(self, prompt: str, cancel: threading.Event | None = None) -> RunResult:
        cancel = cancel or threading.Event()
        totals = _Totals()
        self.messages.append(Message.user(prompt))
        try:
            with cancel_on_sigint(cancel):
                result = self._loop(cancel, totals)
        except KeyboardInterrupt:
            cancel.set()
            result = totals.result("aborted", "cancelled by the user")
        if result.reason == "aborted":
            self._close_pending_calls()
        self.emit(RunEnd(result))
        return result

    # --- the loop --------------------------------------------------------------------------------

    def _loop(self, cancel: threading.Event, totals: _Totals) -> RunResult:
        for turn in range(1, self.max_turns + 1):
            if cancel.is_set():
                return totals.result("aborted", "cancelled by the user")
            outcome = self._call_model(turn, cancel, totals)
            if isinstance(outcome, RunResult):
                return outcome
            text, calls, end = outcome
            if cancel.is_set():
                return totals.result("aborted", "cancelled by the user")
            if not self.live_text and text:
                self.emit(TextDelta(text))
            text, uses = self._tool_uses(text, calls, end)
            blocks: list[TextBlock | ToolUse] = [TextBlock(text)] if text.strip() else []
            self.messages.append(Message("assistant", (*blocks, *uses)))
            if uses:
                self._run_tools(uses, totals, hint=not calls)
                if cancel.is_set():
                    return totals.result("aborted", "cancelled by the user")
                continue
            if end.stop_reason in ("max_tokens", "refusal"):
                why = (
                    f"the answer hit the output limit of {self.governor.budget.reserve} tokens"
                    if end.stop_reason == "max_tokens"
                    else "the model refused to answer"
                )
                return totals.result(end.stop_reason, why)
            return totals.result("end_turn")
        return totals.result("max_turns", f"stopped after {self.max_turns} turns (raise --max-turns)")

    def _call_model(
        self, turn: int, cancel: threading.Event, totals: _Totals
    ) -> tuple[str, list[StreamToolCall], MessageEnd] | RunResult:
        """One model call with its admission, one bounded recovery from a loud overflow, and the verdict."""
        force = False
        while True:
            try:
                prepared = self.governor.prepare(self.request(), self.provider, force_compact=force)
            except (RejectedError, CompactionError) as exc:
                return totals.result("context_overflow", str(exc))
            self.messages = list(prepared.request.messages)
            try:
                text, calls, end = self._stream(prepared.request, cancel)
            except ContextOverflowError as exc:
                # One recovery: adopt the window the server named, compact once, retry once.
                if force or not self._adopt_window(exc):
                    return totals.result("context_overflow", self._loud_overflow_message(exc))
                force = True
                continue
            except ProviderError as exc:
                if prepared.restore is not None:
                    self.messages = list(self.governor.restore(prepared, str(exc)))
                return totals.result("error", str(exc))
            if cancel.is_set():
                return totals.result("aborted", "cancelled by the user")
            return self._verdict(turn, prepared, text, calls, end, totals)

    def _verdict(
        self,
        turn: int,
        prepared: Prepared,
        text: str,
        calls: list[StreamToolCall],
        end: MessageEnd,
        totals: _Totals,
    ) -> tuple[str, list[StreamToolCall], MessageEnd] | RunResult:
        exact = prepared.tokens if prepared.exact else None
        seen = self.governor.observe(prepared.request, end, self.provider, exact)
        totals.add(end)
        self.emit(
            TurnEnd(
                turn,
                end.usage,
                prepared.tokens,
                self.governor.budget.window,
                exact=prepared.exact,
                truncated=seen.truncated,
                context_shift=seen.context_shift,
            )
        )
        if seen.truncated:
            # The server answered without the start of the conversation: that answer is not part of the
            # task. It is dropped; the history stays whole, ending with the user's turn.
            return totals.result("context_overflow", seen.message)
        return text, calls, end

    def _stream(
        self, request: Request, cancel: threading.Event
    ) -> tuple[str, list[StreamToolCall], MessageEnd]:
        text: list[str] = []
        calls: list[StreamToolCall] = []
        for event in interruptible(self.provider.stream(request, cancel), cancel):
            if isinstance(event, StreamText):
                text.append(event.text)
                if self.live_text:
                    self.emit(TextDelta(event.text))
            elif isinstance(event, StreamToolCall):
                calls.append(event)
            else:
                return "".join(text), calls, event
            if cancel.is_set():
                break
        if cancel.is_set():
            raise KeyboardInterrupt
        raise ProviderError(f"the {self.provider.name} stream ended without a final message")

    # --- overflow answered loudly by the server --------------------------------------------------

    def _adopt_window(self, exc: ContextOverflowError) -> bool:
        """Take the window the server told us, if it is smaller, and say so. False: nothing to retry with."""
        real = exc.n_ctx
        if real is None or real >= self.governor.budget.window:
            return False
        self.emit(
            Warning(
                f"The server says its window is {real} tokens, not {self.governor.budget.window}: "
                f"using {real} from now on, compacting once and retrying once. "
                f"Pass --context-window {real} to start with it."
            )
        )
        self.governor.set_window(real, "server error")
        return True

    def _loud_overflow_message(self, exc: ContextOverflowError) -> str:
        where = f" (server window {exc.n_ctx} tokens)" if exc.n_ctx else ""
        return (
            f"The server refused the request as too long{where}: {exc}. The conversation is intact. "
            "Fix: set the real window with --context-window N so aforo clears and compacts in time, "
            "or start a new conversation."
        )

    # --- tools -----------------------------------------------------------------------------------

    def _tool_uses(
        self, text: str, calls: list[StreamToolCall], end: MessageEnd
    ) -> tuple[str, list[ToolUse]]:
        """The calls of this answer, and its text without the calls that were written as text."""
        if calls:
            return text, [self._use(c.id, c.name, c.arguments) for c in calls]
        if end.stop_reason == "max_tokens":
            # An answer cut by the output limit is rambling; calls written in it are not to be trusted.
            return text, []
        # Small local models often write the call as JSON in their text instead of a structured call.
        rest, found = extract_text_tool_calls(text, self.tools.names)
        return rest, [self._use("", name, args) for name, args in found]

    def _use(self, call_id: str, name: str, arguments: str | dict[str, object]) -> ToolUse:
        self._tool_ids += 1
        call_id = call_id or f"call_{self._tool_ids}"
        if isinstance(arguments, dict):
            return ToolUse(call_id, name, dict(arguments))
        try:
            parsed = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError:
            parsed = None
        # Malformed arguments are kept verbatim so the tool result can quote them back to the model.
        return ToolUse(call_id, name, parsed if isinstance(parsed, dict) else {"_raw_arguments": arguments})

    def _run_tools(self, uses: list[ToolUse], totals: _Totals, *, hint: bool) -> None:
        for use in uses:
            self.emit(ToolStart(use.id, use.name, use.input))
        governor = self.governor
        cap = governor.policy.cap_tokens(governor.budget)
        outcomes = run_batch(
            self.tools,
            uses,
            cap_tokens=cap,
            ratio=governor.calibration.ratio,
            answered=answered_calls(self.messages[:-1]),
        )
        totals.tool_calls += len(uses)
        # Appended before the events are emitted: whoever persists on events saves the results too.
        results: tuple[ToolResult | TextBlock, ...] = tuple(o.result for o in outcomes)
        self.messages.append(Message("user", (*results, TextBlock(TEXT_CALL_HINT)) if hint else results))
        for o in outcomes:
            self.emit(
                ToolEnd(o.use.id, o.use.name, o.duration_ms, not o.result.is_error, o.truncated, o.error)
            )

    def _close_pending_calls(self) -> None:
        """After a cancel, give every unanswered tool call a result so the transcript stays well-formed."""
        if self.messages and self.messages[-1].role == "assistant" and self.messages[-1].tool_uses:
            pending = self.messages[-1].tool_uses
            self.messages.append(
                Message("user", tuple(ToolResult(u.id, CANCELLED_RESULT, is_error=True) for u in pending))
            )


class _Totals:
    def __init__(self) -> None:
        self.turns = 0
        self.tool_calls = 0
        self.input_tokens = 0
        self.output_tokens = 0

    def add(self, end: MessageEnd) -> None:
        self.turns += 1
        self.input_tokens += end.usage.prompt_tokens
        self.output_tokens += end.usage.output_tokens

    def result(self, reason: RunReason, error: str | None = None) -> RunResult:
        return RunResult(reason, self.turns, self.tool_calls, self.input_tokens, self.output_tokens, error)
