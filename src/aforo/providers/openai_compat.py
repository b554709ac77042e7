"""The OpenAI-compatible chat adapter: one streamed POST to {base_url}/chat/completions.

It works against Ollama, llama-server, vLLM, LM Studio and LiteLLM, which agree on the happy path and
differ everywhere else: ids and names of tool calls may arrive in pieces or repeated in every chunk,
the usage chunk may come after the finish chunk (or never), some servers answer a streaming request
with a plain JSON completion, and llama-cpp-python answers an oversized prompt with an empty 200
stream. Every such difference is absorbed here; what leaves is the canonical stream (text deltas,
complete tool calls, exactly one MessageEnd) or one of our errors.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Generator, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx

from aforo.closing import Closing
from aforo.errors import ConfigError, ProtocolError
from aforo.messages import (
    Request,
    StreamEvent,
    StreamProgress,
    StreamText,
    StreamToolCall,
)
from aforo.providers.retry import retrying
from aforo.safejson import server_json
from aforo.wire.answer_end import OpenAIEnd
from aforo.wire.body import JSON_HEADERS, encode_body
from aforo.wire.bounded import DEFAULT_DEADLINES, Deadlines, read_body
from aforo.wire.http import answer_failure, status_error
from aforo.wire.lines import lines, sse_data
from aforo.wire.openai_chat import chat_body

SSE_HEADERS = {"Accept": "text/event-stream", "Cache-Control": "no-store"}

EMPTY_STREAM = (
    "the server returned an empty stream (HTTP 200, no events); some servers (llama-cpp-python) do this "
    "when the prompt does not fit the context window — try a smaller --context-window"
)


def _count(value: Any) -> int:
    return value if isinstance(value, int) and value > 0 else 0


def _merge(current: str, piece: Any) -> str:
    # Some servers repeat the id/name in every chunk, others split them: a repeat is not a new piece.
    if not isinstance(piece, str) or not piece or piece == current:
        return current
    return current + piece


@dataclass
class _Call:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


@dataclass(kw_only=True)
class _Answer:
    """What the chunks of one answer have said so far."""

    url: str
    model: str
    calls: dict[int, _Call] = field(default_factory=dict)
    ending: OpenAIEnd = field(default_factory=OpenAIEnd)  # usage, finish reason, served model
    chunks: int = 0
    progress: StreamProgress | None = None  # llama-server's `prompt_progress`, until it is passed on

    def feed(self, chunk: Any) -> list[str]:
        """Absorb one chunk; returns its text deltas."""
        if not isinstance(chunk, dict):
            raise ProtocolError(f"{self.url} sent a stream chunk that is not a JSON object: {chunk!r:.200}")
        if "error" in chunk:
            # llama-server and vLLM report failures after the 200 headers as an error chunk.
            error = chunk["error"]
            code = error.get("code") if isinstance(error, dict) else None
            status = code if isinstance(code, int) and code >= 400 else 500
            raise status_error(status, json.dumps(chunk), url=self.url, model=self.model)
        self.chunks += 1
        self.ending.feed(chunk)
        done = chunk.get("prompt_progress")
        if isinstance(done, dict):
            self.progress = StreamProgress(
                _count(done.get("processed")), _count(done.get("total")), _count(done.get("cache"))
            )
        choices = chunk.get("choices") or []
        if not isinstance(choices, list):
            raise ProtocolError(f"{self.url} sent `choices` that is not a list: {choices!r:.200}")
        texts: list[str] = []
        for choice in choices:
            if not isinstance(choice, dict):
                raise ProtocolError(f"{self.url} sent a choice that is not an object: {choice!r:.200}")
            if choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            if not isinstance(delta, dict):
                raise ProtocolError(f"{self.url} sent a delta that is not an object: {delta!r:.200}")
            content = delta.get("content")
            if isinstance(content, str) and content:
                texts.append(content)
            for call in delta.get("tool_calls") or []:
                self._add_call(call)
        return texts

    def _add_call(self, piece: Any) -> None:
        if not isinstance(piece, dict):
            raise ProtocolError(f"{self.url} sent a tool call that is not an object: {piece!r:.200}")
        index = piece.get("index")
        if not isinstance(index, int):
            # Without an index, a new id starts a new call; anything else continues the last one.
            ids = {c.id: i for i, c in self.calls.items()}
            new_id = piece.get("id")
            if isinstance(new_id, str) and new_id and new_id not in ids:
                index = max(self.calls, default=-1) + 1
            else:
                index = ids.get(new_id, max(self.calls, default=0)) if isinstance(new_id, str) else 0
        call = self.calls.setdefault(index, _Call())
        call.id = _merge(call.id, piece.get("id"))
        function = piece.get("function") or {}
        if isinstance(function, dict):
            call.name = _merge(call.name, function.get("name"))
            args = function.get("arguments")
            if isinstance(args, str):
                call.arguments.append(args)
            elif isinstance(args, dict):
                call.arguments.append(json.dumps(args, ensure_ascii=False))

    def progressed(self) -> Iterator[StreamEvent]:
        """The prompt progress the last chunk reported, once."""
        if self.progress is not None:
            yield self.progress
            self.progress = None

    def end(self) -> Iterator[StreamEvent]:
        """The complete tool calls and the MessageEnd, once the stream is over."""
        if self.chunks == 0:
            raise ProtocolError(f"{self.url}: {EMPTY_STREAM}")
        if self.ending.finish is None:
            raise ProtocolError(
                f"the stream from {self.url} ended without a finish reason — the server may have crashed "
                "or dropped the connection; the partial answer is not used"
            )
        for index in sorted(self.calls):
            call = self.calls[index]
            # Ids must be unique across the conversation: a tool_result names the call it answers.
            call_id = call.id or f"call_{uuid.uuid4().hex[:12]}"
            yield StreamToolCall(call_id, call.name, "".join(call.arguments) or "{}")
        yield self.ending.end()


_SSE_FIELDS = frozenset({"data", "event", "id", "retry"})


class _Body:
    """What a streamed body held, for the error when it holds no event: a body of something else (HTML,
    bytes in an encoding httpx cannot decode) is no empty stream, whose advice (the window) would mislead."""

    def __init__(self, encoding: str) -> None:
        self.encoding = encoding
        self.size = 0
        self.stray: str | None = None  # the first line that is no SSE field, comment or blank

    def count(self, chunks: Iterable[bytes]) -> Iterator[bytes]:
        for chunk in chunks:
            self.size += len(chunk)
            yield chunk

    def lines(self, lines: Iterable[str]) -> Iterator[str]:
        for line in lines:
            field = line.partition(":")[0]
            if self.stray is None and line and field and field not in _SSE_FIELDS:  # ":…" is a comment
                self.stray = line
            yield line

    def describe(self) -> str:
        encoded = f", Content-Encoding {self.encoding!r}" if self.encoding else ""
        return (
            f"a body that is not an event stream: {self.size:,} bytes{encoded}, starting "
            f"{(self.stray or '')[:60]!r}"
        )


class OpenAICompatProvider(Closing):
    """Streams chat completions from any OpenAI-compatible server."""

    name = "openai"

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        deadlines: Deadlines = DEFAULT_DEADLINES,
        retries: int = 2,
        extra_body: dict[str, Any] | None = None,
        auth: httpx.BasicAuth | None = None,
    ) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise ConfigError(f"--base-url must start with http:// or https://, got {base_url!r}")
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.url = f"{self.base_url}/chat/completions"
        self.retries = retries
        self.extra_body = dict(extra_body or {})  # fields only some servers understand
        self.deadlines = deadlines
        self._client = deadlines.client({"Authorization": f"Bearer {api_key}"} if api_key else {}, auth)

    def close(self) -> None:
        self._client.close()

    def stream(self, request: Request, cancel: threading.Event | None = None) -> Iterator[StreamEvent]:
        body = {**chat_body(request, stream=True), **self.extra_body}
        body["model"] = body["model"] or self.model
        # Retry only until the first event: after that the caller has seen part of an answer.
        first, events = retrying(self.retries)(self._open, body, cancel)
        try:
            if first is not None:
                yield first
                yield from events
        finally:
            events.close()

    def _open(
        self, body: dict[str, Any], cancel: threading.Event | None
    ) -> tuple[StreamEvent | None, Generator[StreamEvent, None, None]]:
        events = self._exchange(body, cancel)
        return next(events, None), events

    def _exchange(
        self, body: dict[str, Any], cancel: threading.Event | None
    ) -> Generator[StreamEvent, None, None]:
        if cancel is not None and cancel.is_set():
            return
        answer = _Answer(url=self.url, model=str(body["model"]))
        budget = self.deadlines.budget(self.url, int(body.get("max_tokens") or 0))
        try:
            with self._client.stream(
                "POST", self.url, content=encode_body(body), headers={**JSON_HEADERS, **SSE_HEADERS}
            ) as response:
                if response.status_code >= 300:
                    text = read_body(response, self.url)
                    raise status_error(
                        response.status_code, text, url=self.url, model=answer.model, headers=response.headers
                    )
                content_type = response.headers.get("content-type", "")
                if "json" in content_type:
                    # The server ignored `stream: true` and sent one whole completion.
                    yield from self._completion(read_body(response, self.url, budget=budget), answer)
                    return
                if "text/event-stream" not in content_type.partition(";")[0]:
                    raise ProtocolError(
                        f"{self.url} did not answer with an event stream (Content-Type {content_type!r})"
                    )
                received = _Body(response.headers.get("content-encoding", ""))
                for data in sse_data(
                    received.lines(lines(received.count(budget.metered(response)), self.url))
                ):
                    if cancel is not None and cancel.is_set():
                        return
                    data = data.strip()
                    if data == "[DONE]":
                        break
                    if not data:
                        continue
                    for text in answer.feed(self._json(data)):
                        yield StreamText(text)
                    yield from answer.progressed()
                if answer.chunks == 0 and received.stray is not None:
                    raise ProtocolError(f"{self.url}: the server answered 200 with {received.describe()}")
                yield from answer.end()
        except httpx.TransportError as exc:
            raise answer_failure(exc, self.base_url, budget, self.deadlines.read) from exc

    def _json(self, data: str) -> Any:
        try:
            return server_json(data, f"the data {self.url} sent")
        except ValueError as exc:
            raise ProtocolError(f"{self.url} sent data that is not JSON: {data[:200]!r}") from exc

    def _completion(self, text: str, answer: _Answer) -> Iterator[StreamEvent]:
        data = self._json(text) if text.strip() else None
        if data is None:
            raise ProtocolError(f"{self.url}: {EMPTY_STREAM}")
        if not isinstance(data, dict) or "error" in data:
            answer.feed(data)  # raises the right error
        choices = data.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise ProtocolError(f"{self.url} sent a completion without choices: {text[:200]!r}")
        message = choices[0].get("message") or {}
        if not isinstance(message, dict):
            raise ProtocolError(f"{self.url} sent a completion whose message is not an object")
        # A whole message is one big delta; its calls get explicit indexes so id-less calls stay apart.
        calls = message.get("tool_calls") or []
        delta = {
            "content": message.get("content"),
            "tool_calls": [{**c, "index": i} if isinstance(c, dict) else c for i, c in enumerate(calls)],
        }
        chunk = {
            "choices": [{"index": 0, "delta": delta, "finish_reason": choices[0].get("finish_reason")}],
            "usage": data.get("usage"),
            "timings": data.get("timings"),
            "model": data.get("model"),
        }
        for piece in answer.feed(chunk):
            yield StreamText(piece)
        yield from answer.end()
