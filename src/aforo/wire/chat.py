"""Canonical messages -> chat messages, one walk for every dialect that speaks in roles.

The OpenAI chat body and Ollama's /api/chat say a conversation the same way: the system message, then
for each canonical message an assistant message with its calls, or the tool results as role "tool"
messages followed by the user's text (joined to a user turn just before it). Only how a call and a
result are written differs: a `Dialect` says that, and the walk here does the rest, so the two cannot
drift apart.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from aforo.messages import Message, Request, TextBlock, ToolResult, ToolUse, add_turn


@dataclass(frozen=True)
class Dialect:
    call: Callable[[ToolUse], dict[str, Any]]  # one entry of an assistant message's `tool_calls`
    # The "tool" message of a result: its id, its content as sent, the name of its call (None: unknown).
    result: Callable[[str, str, str | None], dict[str, Any]]
    calls_only: str | None  # the content of an assistant message that calls tools and says nothing


def chat_messages(request: Request, dialect: Dialect) -> list[dict[str, Any]]:
    wire: list[dict[str, Any]] = []
    if request.system_text:
        wire.append({"role": "system", "content": request.system_text})
    names: dict[str, str] = {}  # tool_use id -> tool name, for the "tool" messages that answer them
    for message in request.messages:
        for out in _message(message, dialect, names):
            add_turn(wire, out)
    return wire


def _message(message: Message, dialect: Dialect, names: dict[str, str]) -> list[dict[str, Any]]:
    """One canonical message may become several wire messages: tool results are role "tool"."""
    if message.role == "assistant":
        uses = [b for b in message.content if isinstance(b, ToolUse)]
        names.update((use.id, use.name) for use in uses)
        out: dict[str, Any] = {
            "role": "assistant",
            "content": message.text or (dialect.calls_only if uses else ""),
        }
        if uses:
            out["tool_calls"] = [dialect.call(use) for use in uses]
        return [out]
    wire: list[dict[str, Any]] = []
    texts: list[str] = []
    for block in message.content:
        if isinstance(block, ToolResult):
            content = f"Error: {block.content}" if block.is_error else block.content
            wire.append(dialect.result(block.tool_use_id, content, names.get(block.tool_use_id)))
        elif isinstance(block, TextBlock):
            texts.append(block.text)
    if texts:
        wire.append({"role": "user", "content": "\n\n".join(texts)})
    return wire
