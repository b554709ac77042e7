"""Canonical request -> OpenAI chat-completions body. Shared by the adapter and the exact counters.

One translation, so what we count (`/tokenize`, `/input_tokens`) is exactly what we send.
"""

from __future__ import annotations

import json
from typing import Any

from aforo import reply_format
from aforo.messages import Request, ToolSpec, ToolUse
from aforo.wire.chat import Dialect, chat_messages


def tools_to_openai(tools: tuple[ToolSpec, ...]) -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "function": {"name": t.name, "description": t.description, "parameters": t.input_schema},
        }
        for t in tools
    ]


def _call(use: ToolUse) -> dict[str, Any]:
    arguments = json.dumps(use.input, ensure_ascii=False)
    return {"id": use.id, "type": "function", "function": {"name": use.name, "arguments": arguments}}


def _result(tool_use_id: str, content: str, _name: str | None) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": tool_use_id, "content": content}


# A call is named by its id, with its arguments as a JSON string; an assistant message that only calls
# tools has no content (null).
OPENAI = Dialect(_call, _result, calls_only=None)


def messages_to_openai(request: Request) -> list[dict[str, Any]]:
    return chat_messages(request, OPENAI)


def step_format(request: Request) -> dict[str, Any]:
    """`response_format` forcing one constrained step (llama-server, vLLM, LM Studio read it)."""
    schema = reply_format.request_schema(request)
    return {"type": "json_schema", "json_schema": {"name": "step", "strict": True, "schema": schema}}


def chat_body(request: Request, *, stream: bool = True) -> dict[str, Any]:
    constrained = request.constrained
    body: dict[str, Any] = {
        "model": request.model,
        "messages": reply_format.wire_messages(request) if constrained else messages_to_openai(request),
        "max_tokens": request.max_tokens,
        "stream": stream,
    }
    if constrained:
        body["response_format"] = step_format(request)
    elif request.tools:
        body["tools"] = tools_to_openai(request.tools)
        if request.answer_only:
            body["tool_choice"] = "none"
    if request.temperature is not None:
        body["temperature"] = request.temperature
    if stream:
        body["stream_options"] = {"include_usage": True}
    return body
