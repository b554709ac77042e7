"""OpenAI's chat API in front of Ollama's native one, so an OpenAI client gets `num_ctx` too.

Ollama's own OpenAI endpoint takes no window: every model runs there at Ollama's default, and a prompt
past it loses its oldest messages without a word. So a request in OpenAI's words for a model on Ollama
goes to `/api/chat` instead: the conversation as the governor admitted it (written by the providers'
own walk, `wire.chat` with Ollama's dialect, in `upstream_call.way_for`), with `num_ctx` and
`truncate: false`; and Ollama's answer comes back in OpenAI's words: one `chat.completion`, or
`chat.completion.chunk` events ending in `[DONE]` (with the usage chunk when the client asked for it).
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

# OpenAI's sampling fields and their names among Ollama's options.
_OPTIONS = {"temperature": "temperature", "top_p": "top_p", "seed": "seed", "stop": "stop"}


def to_ollama(body: dict[str, Any], model: str) -> dict[str, Any]:
    """The `/api/chat` body for the OpenAI `body`, but for its conversation, which `way_for` writes (as
    admitted, in Ollama's words: `upstream_call.with_messages`), with the window and the answer's limit
    set as for any request to Ollama."""
    options = {theirs: body[ours] for ours, theirs in _OPTIONS.items() if ours in body}
    out: dict[str, Any] = {"model": model, "stream": bool(body.get("stream", False)), "options": options}
    if isinstance(body.get("tools"), list):
        out["tools"] = body["tools"]  # the same function-tool shape
    return out


class ToOpenAI:
    """Ollama's answer, line by line, in OpenAI's words."""

    def __init__(self, model: str, *, usage: bool) -> None:
        self.model, self.usage = model, usage
        self.id = f"chatcmpl-{uuid.uuid4().hex[:24]}"
        self.created = int(time.time())
        self._calls = 0

    def completion(self, docs: list[Any]) -> str:
        """A non-streamed answer (one document, or a stream's lines read whole) as a `chat.completion`."""
        parts = [self._message(d) for d in docs if isinstance(d, dict)]
        message: dict[str, Any] = {"content": "".join(p["content"] for p in parts)}
        calls = [c for p in parts for c in p.get("tool_calls", [])]
        if calls:
            message["tool_calls"] = calls
        last = next((d for d in reversed(docs) if isinstance(d, dict) and d.get("done")), {})
        finish = _finish(last, message)
        choice = {"index": 0, "message": {"role": "assistant", **message}, "finish_reason": finish}
        return json.dumps(self._base("chat.completion") | {"choices": [choice], "usage": _usage(last)})

    def chunk(self, doc: Any) -> list[str]:
        """The SSE lines for one NDJSON line of a streamed answer; after the last, `[DONE]`."""
        if not isinstance(doc, dict):
            return []
        delta = self._message(doc)
        done = doc.get("done") is True
        finish = _finish(doc, delta) if done else None
        if not delta.get("content"):
            delta.pop("content", None)
        lines = [self._event({"index": 0, "delta": delta, "finish_reason": finish}, None)]
        if done:
            if self.usage:
                lines.append(self._event(None, _usage(doc)))
            lines.append("data: [DONE]")
        return [line for pair in ((line, "") for line in lines) for line in pair]

    def _event(self, choice: dict[str, Any] | None, usage: dict[str, int] | None) -> str:
        out = self._base("chat.completion.chunk") | {"choices": [choice] if choice else []}
        if usage is not None:
            out["usage"] = usage
        return f"data: {json.dumps(out)}"

    def _base(self, kind: str) -> dict[str, Any]:
        return {"id": self.id, "object": kind, "created": self.created, "model": self.model}

    def _message(self, doc: dict[str, Any]) -> dict[str, Any]:
        message = _dict(doc.get("message"))
        content = message.get("content") if isinstance(message.get("content"), str) else ""
        out: dict[str, Any] = {"content": content}
        calls = [c for c in message.get("tool_calls") or [] if isinstance(c, dict)]
        if calls:
            out["tool_calls"] = [self._call(i, c) for i, c in enumerate(calls)]
        return out

    def _call(self, index: int, call: dict[str, Any]) -> dict[str, Any]:
        self._calls += 1
        function = _dict(call.get("function"))
        arguments = function.get("arguments", {})
        text = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
        return {
            "index": index,
            "id": f"call_{self._calls}",
            "type": "function",
            "function": {"name": str(function.get("name", "")), "arguments": text},
        }


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _finish(doc: dict[str, Any], message: dict[str, Any]) -> str:
    if message.get("tool_calls"):
        return "tool_calls"
    return "length" if doc.get("done_reason") == "length" else "stop"


def _usage(doc: dict[str, Any]) -> dict[str, int]:
    prompt, answer = doc.get("prompt_eval_count"), doc.get("eval_count")
    prompt = prompt if isinstance(prompt, int) else 0
    answer = answer if isinstance(answer, int) else 0
    return {"prompt_tokens": prompt, "completion_tokens": answer, "total_tokens": prompt + answer}
