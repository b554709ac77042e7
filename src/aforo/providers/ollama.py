"""The native Ollama adapter: `/api/chat` with NDJSON streaming, `num_ctx` set, truncation turned off.

Through its OpenAI-compatible endpoint Ollama runs every model at its default window and, when a prompt
does not fit, silently drops the oldest messages — the user's task first. The native endpoint removes
both by construction: `options.num_ctx` makes the server use the window aforo budgets for, and from
v0.12.6 `"truncate": false` turns the silent drop into an HTTP 400, which becomes ContextOverflowError.

The stream is NDJSON (one JSON object per line), not SSE. Tool call arguments arrive as objects and
calls carry no ids, so ids are made here; tool results go back as role "tool" messages with the tool's
name. Usage is `prompt_eval_count` / `eval_count`, omitted by the server when 0.
"""

from __future__ import annotations

import itertools
import json
import re
import threading
import uuid
from collections.abc import Iterator, Mapping
from typing import Any

import httpx

from aforo import reply_format
from aforo.closing import Closing
from aforo.errors import HTTPStatusError, ProtocolError, ProviderError
from aforo.messages import (
    Request,
    StreamEvent,
    StreamText,
    StreamToolCall,
    ToolUse,
)
from aforo.safejson import server_json
from aforo.wire.answer_end import OllamaEnd
from aforo.wire.body import JSON_HEADERS, encode_body
from aforo.wire.bounded import DEFAULT_DEADLINES, Deadlines, read_body
from aforo.wire.chat import Dialect, chat_messages
from aforo.wire.http import answer_failure, get_json_quiet, normalize_base_url, status_error
from aforo.wire.lines import lines
from aforo.wire.openai_chat import tools_to_openai

# The first release whose /api/chat accepts "truncate": false (older ones would truncate anyway).
TRUNCATE_FLAG_SINCE = (0, 12, 6)
# The first release whose `format` takes a JSON schema, not only "json".
SCHEMA_FORMAT_SINCE = (0, 5, 0)


def parse_version(version: str | None) -> tuple[int, ...] | None:
    """ "0.12.6" / "0.12.6-rc1" / "v0.13.0" -> (0, 12, 6) ...; None when there are no numbers."""
    if not version:
        return None
    match = re.match(r"v?(\d+(?:\.\d+)*)", version.strip())
    return tuple(int(p) for p in match.group(1).split(".")) if match else None


def supports_truncate_flag(version: str | None) -> bool:
    parsed = parse_version(version)
    return parsed is not None and parsed >= TRUNCATE_FLAG_SINCE


def supports_schema_format(version: str | None) -> bool:
    """Whether /api/chat takes a JSON schema as `format` (structured outputs, Ollama 0.5.0)."""
    parsed = parse_version(version)
    return parsed is not None and parsed >= SCHEMA_FORMAT_SINCE


def with_window(body: dict[str, Any], num_ctx: int, num_predict: int, version: str | None) -> dict[str, Any]:
    """`body` (its own options kept) telling Ollama the window it was budgeted for (`num_ctx` overrides
    every default: the Modelfile, OLLAMA_CONTEXT_LENGTH), the most the answer may take (`num_predict`:
    past the window while generating it would drop the oldest tokens without a word), and not to
    truncate silently where its version allows. The one place both the provider and the gateway set them."""
    options = body.get("options")
    options = {
        **(options if isinstance(options, dict) else {}),
        "num_ctx": num_ctx,
        "num_predict": num_predict,
    }
    out = {**body, "options": options}
    if supports_truncate_flag(version):
        out["truncate"] = False
    return out


def _call(use: ToolUse) -> dict[str, Any]:
    return {"function": {"name": use.name, "arguments": use.input}}


def _result(_tool_use_id: str, content: str, name: str | None) -> dict[str, Any]:
    return {"role": "tool", "content": content} | ({"tool_name": name} if name is not None else {})


# Calls carry no ids and take their arguments as an object; a result names the tool of its call.
OLLAMA = Dialect(_call, _result, calls_only="")


def messages_to_ollama(request: Request) -> list[dict[str, Any]]:
    return chat_messages(request, OLLAMA)


class OllamaProvider(Closing):
    """Streams `/api/chat` from an Ollama server, with the window aforo uses as `num_ctx`."""

    name = "ollama"

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        num_ctx: int,
        version: str | None = None,
        deadlines: Deadlines = DEFAULT_DEADLINES,
        auth: httpx.BasicAuth | None = None,
    ) -> None:
        self.root_url, _ = normalize_base_url(base_url)
        self.url = f"{self.root_url}/api/chat"
        self.model = model
        self.num_ctx = num_ctx
        self._version = version
        self._version_asked = version is not None
        self.deadlines = deadlines
        self._client = deadlines.client(auth=auth)
        # Ollama gives calls no ids; ours must be unique across a conversation that may span several
        # runs (a resumed session), hence a per-instance tag before the counter.
        self._call_tag = uuid.uuid4().hex[:6]
        self._call_numbers = itertools.count(1)

    def close(self) -> None:
        self._client.close()

    @property
    def version(self) -> str | None:
        """The server's version, asked once (`GET /api/version`); None when it does not say."""
        if not self._version_asked:
            self._version_asked = True
            doc = get_json_quiet(self._client, f"{self.root_url}/api/version")
            if isinstance(doc, dict) and isinstance(doc.get("version"), str):
                self._version = doc["version"]
        return self._version

    def body(self, request: Request) -> dict[str, Any]:
        constrained = request.constrained
        body: dict[str, Any] = {
            "model": request.model or self.model,
            "messages": reply_format.wire_messages(request) if constrained else messages_to_ollama(request),
            "stream": True,
            "options": {} if request.temperature is None else {"temperature": request.temperature},
        }
        if constrained:
            # A JSON schema as `format` (Ollama 0.5+) forces one step, answer or calls (aforo.reply_format).
            body["format"] = reply_format.request_schema(request)
        elif request.tools and not request.answer_only:  # no tool_choice in /api/chat: no tools at all
            body["tools"] = tools_to_openai(request.tools)
        return with_window(body, self.num_ctx, request.max_tokens, self.version)

    def stream(self, request: Request, cancel: threading.Event | None = None) -> Iterator[StreamEvent]:
        body = self.body(request)
        if cancel is not None and cancel.is_set():
            return
        budget = self.deadlines.budget(self.url, request.max_tokens)
        try:
            with self._client.stream(
                "POST", self.url, content=encode_body(body), headers=JSON_HEADERS
            ) as response:
                if response.status_code >= 300:
                    text = read_body(response, self.url)
                    raise self._status_error(response.status_code, text, body["model"], response.headers)
                yield from self._events(lines(budget.metered(response), self.url), body["model"], cancel)
        except httpx.TransportError as exc:
            raise answer_failure(exc, self.url, budget, self.deadlines.read) from exc

    def _events(
        self, stream_lines: Iterator[str], model: str, cancel: threading.Event | None
    ) -> Iterator[StreamEvent]:
        calls: list[StreamToolCall] = []
        ending = OllamaEnd()
        for line in stream_lines:
            if cancel is not None and cancel.is_set():
                return
            if not line.strip():
                continue
            chunk = self._json(line)
            if "error" in chunk:
                # A failure after the 200 headers arrives as {"error": "..."} on its own line.
                raise self._status_error(400, json.dumps(chunk), model)
            message = chunk.get("message") or {}
            if not isinstance(message, dict):
                raise ProtocolError(f"{self.url} sent a message that is not an object: {line[:200]!r}")
            content = message.get("content")
            if isinstance(content, str) and content:
                yield StreamText(content)
            for call in message.get("tool_calls") or []:
                calls.append(self._tool_call(call))
            ending.feed(chunk)
            if ending.done:
                yield from calls
                yield ending.end()
                return
        raise ProtocolError(
            f"the stream from {self.url} ended without `done` — the server may have crashed or dropped the"
            " connection; the partial answer is not used"
        )

    def _json(self, line: str) -> dict[str, Any]:
        try:
            chunk = server_json(line, f"a line {self.url} sent")
        except ValueError as exc:
            raise ProtocolError(f"{self.url} sent a line that is not JSON: {line[:200]!r}") from exc
        if not isinstance(chunk, dict):
            raise ProtocolError(f"{self.url} sent a line that is not a JSON object: {line[:200]!r}")
        return chunk

    def _tool_call(self, call: Any) -> StreamToolCall:
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            raise ProtocolError(f"{self.url} sent a tool call without a function name: {call!r:.200}")
        args = function.get("arguments")
        arguments = args if isinstance(args, str) else json.dumps(args or {}, ensure_ascii=False)
        call_id = call.get("id") if isinstance(call.get("id"), str) and call.get("id") else None
        return StreamToolCall(
            call_id or f"call_{self._call_tag}_{next(self._call_numbers)}", function["name"], arguments
        )

    def _status_error(
        self, status: int, body: str, model: str, headers: Mapping[str, str] | None = None
    ) -> ProviderError:
        error = status_error(status, body, url=self.url, model=model, headers=headers)
        if status == 404 and isinstance(error, HTTPStatusError):
            return HTTPStatusError(
                f"the Ollama server at {self.root_url} does not have the model {model!r} — pull it with"
                f" `ollama pull {model}` (see `ollama list`), or pass another --model",
                status,
                body,
            )
        return error
