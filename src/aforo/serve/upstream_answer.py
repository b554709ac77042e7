"""Upstream's answer, read for the governor as its lines go by: its documents, and what its end says
(usage, stop, served model: `wire.answer_end`, the providers' own reading). Nothing of the lines is
kept here: a live stream passes them on and keeps only what the verdict needs.

OpenAI's answer is one JSON completion or an SSE stream; Ollama's is one JSON object or NDJSON lines,
the last with `done`. Bodies are untrusted: what does not parse is no document (the watch then has
nothing to judge), never an exception.
"""

from __future__ import annotations

from typing import Any

from aforo.errors import LimitExceeded
from aforo.messages import MessageEnd
from aforo.serve.inbound import Api
from aforo.wire.answer_end import OllamaEnd, OpenAIEnd
from aforo.wire.bounded import SseEvents, server_json


class AnswerReading:
    """One answer in the dialect upstream answers in, fed a line at a time (or its body whole)."""

    def __init__(self, api: Api) -> None:
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
