"""What upstream answered, read for the governor (`MessageEnd`: usage, stop, model), and what the client
gets when the gateway will not pass an answer on: the overflow error its own code already handles.

OpenAI's answer is one JSON completion or an SSE stream (usage in its last chunks, asked for with
`stream_options.include_usage`); Ollama's is one JSON object or NDJSON lines, the last with `done`,
`prompt_eval_count` and `eval_count`. Bodies are untrusted: what does not parse is no usage (the watch
then has nothing to judge), never an exception.
"""

from __future__ import annotations

import json
from typing import Any

from aforo.errors import LimitExceeded
from aforo.messages import MessageEnd, StopReason, Usage
from aforo.serve.inbound import Api
from aforo.wire.bounded import server_json
from aforo.wire.usage import UsageReader

_STOPS: dict[str, StopReason] = {
    "stop": "end_turn",
    "length": "max_tokens",
    "tool_calls": "tool_use",
    "content_filter": "refusal",
}
# What Ollama itself says when a prompt does not fit (with `truncate: false`): clients match on it.
OLLAMA_OVERFLOW = "the input length exceeds the context length"
# The opening of OpenAI's own overflow message: clients that classify errors by their text (litellm, and
# with it mini-swe-agent and aider) read the body's `code` only through it.
OPENAI_OVERFLOW = "This model's maximum context length is exceeded"


def _doc(text: str) -> Any:
    try:
        return server_json(text, "the server's answer")  # a count past int64 stays digits: refused
    except (ValueError, LimitExceeded):
        return None


def _openai_end(docs: list[Any]) -> MessageEnd:
    usage, stop, model, read = Usage(), "end_turn", "", UsageReader()
    for doc in docs:
        if not isinstance(doc, dict):
            continue
        if isinstance(doc.get("model"), str):
            model = doc["model"]
        for choice in doc.get("choices") or []:
            reason = choice.get("finish_reason") if isinstance(choice, dict) else None
            if isinstance(reason, str):
                stop = _STOPS.get(reason, "end_turn")
        raw = doc.get("usage")
        if isinstance(raw, dict):
            details = raw.get("prompt_tokens_details")
            cached = read.count(details.get("cached_tokens")) if isinstance(details, dict) else 0
            prompt = read.count(raw.get("prompt_tokens"))
            usage = Usage(max(0, prompt - cached), cached, 0, read.count(raw.get("completion_tokens")))
    return _end(usage, stop, model, read)


def _ollama_end(docs: list[Any]) -> MessageEnd:
    usage, stop, model, read = Usage(), "end_turn", "", UsageReader()
    for doc in docs:
        if not isinstance(doc, dict):
            continue
        if isinstance(doc.get("model"), str):
            model = doc["model"]
        if doc.get("done") is True:
            usage = Usage(read.count(doc.get("prompt_eval_count")), 0, 0, read.count(doc.get("eval_count")))
            reason = doc.get("done_reason")
            stop = "max_tokens" if reason == "length" else "end_turn"
    return _end(usage, stop, model, read)


def _end(usage: Usage, stop: str, model: str, read: UsageReader) -> MessageEnd:
    """A report with a count no server can mean is refused whole, as the providers refuse it
    (wire.usage): the governor then says so once instead of judging the answer by it."""
    kept = Usage() if read.refused else usage
    return MessageEnd(kept, stop, model=model, usage_refused=read.refused)  # type: ignore[arg-type]


def stream_docs(api: Api, lines: list[str]) -> list[Any]:
    """The JSON documents of a streamed answer's lines (SSE `data:` lines, or NDJSON)."""
    docs = []
    for line in lines:
        if api == "openai":
            if not line.startswith("data:"):
                continue
            line = line[5:].strip()
            if line == "[DONE]":
                continue
        if line.strip():
            docs.append(_doc(line))
    return docs


def finished(api: Api, lines: list[str]) -> bool:
    """Whether a streamed answer's lines hold its last one: OpenAI's `[DONE]`, Ollama's `done` line."""
    if api == "openai":
        return any(line.startswith("data:") and line[5:].strip() == "[DONE]" for line in lines)
    return any(isinstance(doc, dict) and doc.get("done") is True for doc in stream_docs(api, lines))


def end_of(api: Api, docs: list[Any]) -> MessageEnd:
    """What the answer says it read and wrote, from its documents (one, or a stream's)."""
    return _openai_end(docs) if api == "openai" else _ollama_end(docs)


def whole_docs(text: str) -> list[Any]:
    return [_doc(text)]


def overflow_body(api: Api, message: str) -> dict[str, Any]:
    """The error a client's code already reads as "the context is full": OpenAI's, or Ollama's."""
    if api == "openai":
        return {
            "error": {
                "message": f"{OPENAI_OVERFLOW}: {message}",
                "type": "invalid_request_error",
                "param": "messages",
                "code": "context_length_exceeded",
            }
        }
    return {"error": f"{OLLAMA_OVERFLOW}: {message}"}


def error_body(api: Api, message: str, kind: str = "invalid_request_error") -> dict[str, Any]:
    """Any other error the gateway answers itself, in the client's shape."""
    if api == "openai":
        return {"error": {"message": message, "type": kind, "param": None, "code": None}}
    return {"error": message}


def encode(doc: dict[str, Any]) -> bytes:
    return json.dumps(doc, ensure_ascii=False).encode()
