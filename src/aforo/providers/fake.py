"""A scripted provider for tests and demos (mini-swe-agent's DeterministicModel, pydantic-ai's FunctionModel).

Each call plays one `FakeTurn`: its text in a few deltas, its tool calls, then a MessageEnd whose usage
is the request's own estimate, as a server with a ~4 chars/token tokenizer would report it. With
`truncate`, it imitates a server that silently drops what does not fit and answers normally (SPEC §1.3):
when the request does not fit the window, mode `plateau` reports floor(window * 0.9) input tokens and
mode `collapse` reports 63, exactly the numbers a truncating Ollama showed.
"""

from __future__ import annotations

import json
import math
import re
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from aforo.context.tokens import estimate_request, estimate_text
from aforo.errors import ProviderError
from aforo.messages import MessageEnd, Request, StopReason, StreamEvent, StreamText, StreamToolCall, Usage

# What a truncating Ollama reported for single requests far beyond its window (SPEC §4).
COLLAPSED_PROMPT_TOKENS = 63
PLATEAU_FRACTION = 0.9


@dataclass(frozen=True)
class Truncate:
    """The window of the imitated server, in estimated tokens, and how it misreports an overflow."""

    window: int
    mode: Literal["plateau", "collapse"] = "plateau"


@dataclass(frozen=True)
class FakeTurn:
    """One scripted answer. `tool_calls` are (name, args); a str args is sent raw (e.g. malformed JSON)."""

    text: str = ""
    tool_calls: Sequence[tuple[str, dict[str, Any] | str]] = ()
    stop_reason: StopReason | None = None
    error: Exception | None = None
    served: str | None = None  # the model the answer says served it; None: the one the request named


class FakeScriptExhausted(ProviderError):
    """The test asked the fake for more turns than it scripted."""


Script = Sequence[FakeTurn] | Callable[[Request], FakeTurn]


def text_deltas(text: str, pieces: int = 3) -> list[str]:
    """`text` cut at word boundaries into at most `pieces` deltas, so consumers see real streaming."""
    words = re.findall(r"\s*\S+\s*", text) or ([text] if text else [])
    size = max(1, math.ceil(len(words) / pieces))
    return ["".join(words[i : i + size]) for i in range(0, len(words), size)]


class FakeProvider:
    name = "fake"

    def __init__(
        self,
        script: Script,
        *,
        truncate: Truncate | None = None,
        report_usage: bool = True,
        model: str = "fake",
    ) -> None:
        self.model = model
        self.truncate = truncate
        self.report_usage = report_usage
        self.requests: list[Request] = []
        self._script = script
        self._next = 0

    def _turn(self, request: Request) -> FakeTurn:
        if callable(self._script):
            return self._script(request)
        if self._next >= len(self._script):
            raise FakeScriptExhausted(
                f"the fake provider's script has {len(self._script)} turns and call {self._next + 1} "
                "asked for another; add a FakeTurn to the test's script"
            )
        turn = self._script[self._next]
        self._next += 1
        return turn

    def input_tokens(self, request: Request) -> int:
        """What this fake server reports as the prompt size of `request`."""
        estimate = estimate_request(request)
        if self.truncate is None or estimate <= self.truncate.window:
            return estimate
        if self.truncate.mode == "collapse":
            return COLLAPSED_PROMPT_TOKENS
        return math.floor(self.truncate.window * PLATEAU_FRACTION)

    def stream(self, request: Request, cancel: threading.Event | None = None) -> Iterator[StreamEvent]:
        self.requests.append(request)
        if request.max_tokens == 1 and not callable(self._script):
            # A measurement (the governor's probe): answered with its usage, the script left for turns.
            usage = Usage(self.input_tokens(request), output_tokens=1) if self.report_usage else Usage()
            yield MessageEnd(usage, "max_tokens")
            return
        turn = self._turn(request)
        if turn.error is not None:
            raise turn.error
        produced = turn.text
        for delta in text_deltas(turn.text):
            if cancel is not None and cancel.is_set():
                return
            yield StreamText(delta)
        calls = []
        for i, (name, args) in enumerate(turn.tool_calls):
            raw = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
            produced += name + raw
            calls.append(StreamToolCall(f"call_{len(self.requests)}_{i}", name, raw))
        if cancel is not None and cancel.is_set():
            return
        yield from calls
        stop: StopReason = turn.stop_reason or ("tool_use" if calls else "end_turn")
        usage = Usage(self.input_tokens(request), output_tokens=estimate_text(produced))
        served = turn.served if turn.served is not None else (request.model or self.model)
        yield MessageEnd(usage if self.report_usage else Usage(), stop, model=served)
