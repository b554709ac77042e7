"""Canonical request -> OpenAI chat-completions body. Shared by the adapter and the exact counters.

One translation, so what we count (`/tokenize`, `/input_tokens`) is exactly what we send.
"""

from __future__ import annotations

import json
from typing import Any

from aforo import steps
from aforo.messages import Message, Request, TextBlock, ToolResult, ToolSpec, ToolUse


def tools_to_openai(tools: tuple[ToolSpec, ...]) -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "function": {"name": t.name, "description": t.description, "parameters": t.input_schema},
        }
        for t in tools
    ]


def message_to_openai(message: Message) -> list[dict[str, Any]]:
    """One canonical message may become several wire messages: tool results are role "tool"."""
    if message.role == "assistant":
        out: dict[str, Any] = {"role": "assistant", "content": message.text or None}
        calls = [
            {
                "id": b.id,
                "type": "function",
                "function": {"name": b.name, "arguments": json.dumps(b.input, ensure_ascii=False)},
            }
            for b in message.content
            if isinstance(b, ToolUse)
        ]
        if calls:
            out["tool_calls"] = calls
        elif out["content"] is None:
            out["content"] = ""
        return [out]
    wire: list[dict[str, Any]] = []
    text_parts: list[str] = []
    for block in message.content:
        if isinstance(block, ToolResult):
            content = f"Error: {block.content}" if block.is_error else block.content
            wire.append({"role": "tool", "tool_call_id": block.tool_use_id, "content": content})
        elif isinstance(block, TextBlock):
            text_parts.append(block.text)
    if text_parts:
        wire.append({"role": "user", "content": "\n\n".join(text_parts)})
    return wire


def messages_to_openai(request: Request) -> list[dict[str, Any]]:
    wire: list[dict[str, Any]] = []
    if request.system_text:
        wire.append({"role": "system", "content": request.system_text})
    for message in request.messages:
        wire.extend(message_to_openai(message))
    return wire


def step_format(request: Request) -> dict[str, Any]:
    """`response_format` forcing one constrained step (llama-server, vLLM, LM Studio read it)."""
    schema = steps.schema(request.tools, answer_only=request.answer_only)
    return {"type": "json_schema", "json_schema": {"name": "step", "strict": True, "schema": schema}}


def chat_body(request: Request, *, stream: bool = True) -> dict[str, Any]:
    constrained = request.constrained
    body: dict[str, Any] = {
        "model": request.model,
        "messages": steps.wire_messages(request) if constrained else messages_to_openai(request),
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
