"""The end of an answer, read once for both dialects: what the server says it read and wrote (usage),
why it stopped, and which model served it. The providers and the gateway feed it the same documents.

OpenAI's end is spread over chunks (the finish reason in one, the usage in another, asked for with
`stream_options.include_usage`, or both in one whole completion); Ollama's is its `done` line, with
`prompt_eval_count` and `eval_count` (omitted when 0). A report with a count no server can mean is
refused whole (`wire.usage`): the answer is kept, its usage is not.

The gateway, which relays the answer's lines as they are, reads its end from them (`AnswerReading`):
an SSE event's data or an NDJSON line, or a body that came whole. Its bodies are untrusted: what does
not parse is no document (the reading then has nothing to judge), never an exception.
"""

from __future__ import annotations

from typing import Any

from aforo.errors import LimitExceeded
from aforo.messages import MessageEnd, StopReason, Usage
from aforo.safejson import server_json
from aforo.wire.lines import SseEvents
from aforo.wire.usage import UsageReader

FINISH_REASONS: dict[str, StopReason] = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
    "content_filter": "refusal",
}
DONE_REASONS: dict[str, StopReason] = {"stop": "end_turn", "length": "max_tokens"}
_OLLAMA_TIMINGS = ("total_duration", "load_duration", "prompt_eval_duration", "eval_duration")


def usage_from_openai(usage: dict[str, Any] | None) -> tuple[Usage, str]:
    """OpenAI usage -> ours; cached prompt tokens are split out of `input_tokens`. With it, why the
    report was refused ("" when taken)."""
    if not usage:
        return Usage(), ""
    read = UsageReader()
    prompt = read.count(usage.get("prompt_tokens"))
    details = usage.get("prompt_tokens_details")
    cached = min(read.count(details.get("cached_tokens")), prompt) if isinstance(details, dict) else 0
    output = read.count(usage.get("completion_tokens"))
    if read.refused:
        return Usage(), read.refused
    return Usage(input_tokens=prompt - cached, cache_read_tokens=cached, output_tokens=output), ""


class OpenAIEnd:
    """What the chunks (or the one completion) of an OpenAI answer say about its end."""

    def __init__(self) -> None:
        self.finish: str | None = None  # the first choice's finish_reason, once a chunk gave one
        self.served = ""  # the `model` the chunks name: what the server says it served
        self.calls = False  # whether the answer holds a tool call
        self._usage: dict[str, Any] | None = None
        self._timings: dict[str, Any] = {}

    def feed(self, chunk: dict[str, Any]) -> None:
        if not self.served and isinstance(chunk.get("model"), str):
            self.served = chunk["model"]
        if isinstance(chunk.get("usage"), dict):
            self._usage = chunk["usage"]
        if isinstance(chunk.get("timings"), dict):
            self._timings = chunk["timings"]
        choices = chunk.get("choices")
        for choice in choices if isinstance(choices, list) else ():
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            said = choice.get("delta") or choice.get("message")
            self.calls = self.calls or (isinstance(said, dict) and bool(said.get("tool_calls")))
            if isinstance(choice.get("finish_reason"), str):
                self.finish = choice["finish_reason"]

    def end(self) -> MessageEnd:
        reason = FINISH_REASONS.get(self.finish or "stop", "end_turn")
        if self.calls and reason == "end_turn":
            reason = "tool_use"
        usage, refused = usage_from_openai(self._usage)
        return MessageEnd(usage, reason, dict(self._timings), self.served, usage_refused=refused)


class OllamaEnd:
    """What the lines (or the one object) of an Ollama answer say about its end: its `done` line."""

    def __init__(self) -> None:
        self.done = False  # the `done` line came
        self.calls = False
        self._served = ""
        self._last: dict[str, Any] = {}

    def feed(self, line: dict[str, Any]) -> None:
        if isinstance(line.get("model"), str):
            self._served = line["model"]
        message = line.get("message")
        self.calls = self.calls or (isinstance(message, dict) and bool(message.get("tool_calls")))
        if line.get("done") is True:
            self.done, self._last = True, line

    def end(self) -> MessageEnd:
        last = self._last
        reason = DONE_REASONS.get(str(last.get("done_reason") or "stop"), "end_turn")
        if self.calls and reason == "end_turn":
            reason = "tool_use"
        read = UsageReader()
        usage = Usage(
            input_tokens=read.count(last.get("prompt_eval_count")),
            output_tokens=read.count(last.get("eval_count")),
        )
        timings = {k: last[k] for k in _OLLAMA_TIMINGS if isinstance(last.get(k), int)}
        return MessageEnd(Usage() if read.refused else usage, reason, timings, self._served, read.refused)


class AnswerReading:
    """One answer in the dialect upstream answers in, fed a line at a time (or its body whole)."""

    def __init__(self, api: str) -> None:  # "openai", or one of Ollama's native APIs
        self._ending = OpenAIEnd() if api == "openai" else OllamaEnd()
        self._events = SseEvents() if api == "openai" else None
        self._done = False  # OpenAI's `[DONE]` passed

    def line(self, line: str) -> list[Any]:
        """The documents this line of a stream completes (an SSE event's data, or an NDJSON line)."""
        if self._events is None:
            return self._docs(line)
        if line.startswith("data:") and line[5:].strip() == "[DONE]":
            self._done = True
        data = self._events.feed(line)
        return [] if data is None or data.strip() == "[DONE]" else self._docs(data)

    def whole(self, text: str) -> list[Any]:
        """The document of an answer that came whole (OpenAI's completion)."""
        doc = _doc(text)
        if isinstance(doc, dict):
            self._ending.feed(doc)
        return [doc]

    @property
    def finished(self) -> bool:
        """Whether the answer's last line went by: OpenAI's `[DONE]`, Ollama's `done` line."""
        return self._done if isinstance(self._ending, OpenAIEnd) else self._ending.done

    def end(self) -> MessageEnd:
        """What the answer says it read and wrote."""
        return self._ending.end()

    def _docs(self, text: str) -> list[Any]:
        if not text.strip():
            return []
        doc = _doc(text)
        if isinstance(doc, dict):
            self._ending.feed(doc)
        return [doc]


def _doc(text: str) -> Any:
    try:
        return server_json(text, "the server's answer")  # a count past int64 stays digits: refused
    except (ValueError, LimitExceeded):
        return None
