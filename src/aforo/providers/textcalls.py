"""Tool calls written as text: what small local models emit instead of structured `tool_calls`.

Qwen2.5-Coder 0.5B/1.5B on llama-server choose the right tool and arguments but write them in the
answer, as ```json {"name": "Read", "arguments": {...}} ``` or inside <tool_call> tags. A JSON object
counts as a call only when it has a call's shape and names a known tool, so ordinary JSON in an answer
stays text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection
from typing import Any

_FENCE = re.compile(r"```[ \t]*(?:json|tool_call|tool|javascript)?[ \t]*\n?(.*?)```", re.DOTALL | re.I)
_TAG = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.DOTALL)
_NAME_KEYS = ("name", "tool", "tool_name", "function")
_ARG_KEYS = ("arguments", "parameters", "args", "input", "tool_input")


def _canonical(name: Any, tools: Collection[str]) -> str | None:
    if not isinstance(name, str):
        return None
    if name in tools:
        return name
    lowered = {t.lower(): t for t in tools}
    return lowered.get(name.strip().lower())


def _as_call(obj: Any, tools: Collection[str]) -> tuple[str, dict[str, Any]] | None:
    if not isinstance(obj, dict):
        return None
    if isinstance(obj.get("function"), dict):  # OpenAI's own shape written out as text
        return _as_call(obj["function"], tools)
    name_key = next((k for k in _NAME_KEYS if k in obj), None)
    if name_key is None:
        return None
    name = _canonical(obj[name_key], tools)
    if name is None:
        return None
    arg_key = next((k for k in _ARG_KEYS if k in obj), None)
    args: Any = obj[arg_key] if arg_key else {k: v for k, v in obj.items() if k != name_key}
    if isinstance(args, str):
        try:
            args = json.loads(args) if args.strip() else {}
        except json.JSONDecodeError:
            return None
    if not isinstance(args, dict):
        return None
    return name, args


def _calls_in(value: Any, tools: Collection[str]) -> list[tuple[str, dict[str, Any]]] | None:
    """All calls in a decoded JSON value (an object or a list of them); None if any item is not one."""
    items = value if isinstance(value, list) else [value]
    calls = [_as_call(item, tools) for item in items]
    if not calls or any(c is None for c in calls):
        return None
    return [c for c in calls if c is not None]


def _bare_objects(text: str) -> list[tuple[int, int, Any]]:
    """Top-level JSON values that start with { or [ anywhere in `text`, with their spans."""
    decoder = json.JSONDecoder()
    found: list[tuple[int, int, Any]] = []
    i = 0
    while i < len(text):
        if text[i] in "{[":
            try:
                value, end = decoder.raw_decode(text, i)
            except json.JSONDecodeError:
                i += 1
                continue
            found.append((i, end, value))
            i = end
        else:
            i += 1
    return found


def extract_text_tool_calls(
    text: str, tool_names: Collection[str]
) -> tuple[str, list[tuple[str, dict[str, Any]]]]:
    """The calls written in `text` and the text without them. No call found: `(text, [])`."""
    if not text or not tool_names:
        return text, []
    calls: list[tuple[str, dict[str, Any]]] = []
    spans: list[tuple[int, int]] = []
    for pattern in (_TAG, _FENCE):
        for match in pattern.finditer(text):
            if any(s <= match.start() < e for s, e in spans):
                continue
            body = match.group(1).strip()
            found: list[tuple[str, dict[str, Any]]] = []
            for _s, _e, value in _bare_objects(body):
                got = _calls_in(value, tool_names)
                if got:
                    found += got
            if found:
                calls += found
                spans.append(match.span())
    if not calls:
        for start, end, value in _bare_objects(text):
            got = _calls_in(value, tool_names)
            if got:
                calls += got
                spans.append((start, end))
    if not calls:
        return text, []
    rest = text
    for start, end in sorted(spans, reverse=True):
        rest = rest[:start] + rest[end:]
    return rest.strip(), calls
