"""Tool calls written as text: what small local models emit instead of structured `tool_calls`.

Qwen2.5-Coder 0.5B/1.5B on llama-server choose the right tool and arguments but write them in the
answer, as ```json {"name": "Read", "arguments": {...}} ``` or inside <tool_call> tags, sometimes
several in a row or as a JSON list. A JSON value counts as a call only when it has a call's shape and
names a known tool, so ordinary JSON in an answer stays text. Where calls sit in tags or fences, only
those are read; bare JSON in prose is considered only when there are none.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Collection
from typing import Any

Call = tuple[str, dict[str, Any]]

# Any info string (json, tool_call, python...) is skipped; the body is searched for JSON values.
_FENCE = re.compile(r"```[ \t]*[\w+.-]*[ \t]*\n?(.*?)```", re.DOTALL)
_TAG = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.DOTALL)
_FIRST_WORD = re.compile(r"[A-Za-z_]\w*(?=[\s(:]|$)")
_NAME_KEYS = ("name", "tool", "tool_name", "function")
_ARG_KEYS = ("arguments", "parameters", "args", "input", "tool_input")
# Keys that make an object a description of a tool (a listing in an answer), not a call of it.
_NOT_A_CALL = frozenset({"description", "returns", "required", "properties"})


def _canonical(name: Any, tools: Collection[str]) -> str | None:
    """The known tool `name` refers to: exact match first, then case-insensitive, then its first word
    (Qwen2.5-Coder 0.5B writes `"name": "Read wordfreq/counter.py"`)."""
    if not isinstance(name, str):
        return None
    name = name.strip().removeprefix("functions.")
    lowered = {t.lower(): t for t in tools}
    first = _FIRST_WORD.match(name)
    for candidate in (name, first.group(0) if first else ""):
        if candidate in tools:
            return candidate
        if candidate.lower() in lowered:
            return lowered[candidate.lower()]
    return None


def _arguments(value: Any) -> dict[str, Any] | None:
    if value is None:
        return {}
    if isinstance(value, str):  # OpenAI's wire form: the arguments as a JSON string
        try:
            value = json.loads(value) if value.strip() else {}
        except json.JSONDecodeError:
            return None
    return value if isinstance(value, dict) else None


def _as_call(obj: Any, tools: Collection[str]) -> Call | None:
    if not isinstance(obj, dict):
        return None
    if isinstance(obj.get("function"), dict):  # {"type": "function", "function": {...}} written out
        return _as_call(obj["function"], tools)
    name_key = next((k for k in _NAME_KEYS if k in obj), None)
    if name_key is None:
        return None
    name = _canonical(obj[name_key], tools)
    if name is None:
        return None
    arg_key = next((k for k in _ARG_KEYS if k in obj), None)
    if arg_key is not None:
        args = _arguments(obj[arg_key])
    elif _NOT_A_CALL & obj.keys():
        return None
    else:  # {"name": "Read", "file_path": "x"}: the arguments flattened beside the name
        args = {k: v for k, v in obj.items() if k not in ("id", "type", name_key)}
    return None if args is None else (name, args)


def _calls_in(value: Any, tools: Collection[str]) -> list[Call] | None:
    """All calls in a decoded value (an object, a list of them, or {"tool_calls": [...]}); else None."""
    if isinstance(value, dict) and isinstance(value.get("tool_calls"), list):
        value = value["tool_calls"]
    items = value if isinstance(value, list) else [value]
    calls = [_as_call(item, tools) for item in items]
    if not calls or any(c is None for c in calls):
        return None
    return [c for c in calls if c is not None]


def _json_values(text: str) -> list[tuple[int, int, Any]]:
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


def _calls_in_block(body: str, tools: Collection[str]) -> list[Call]:
    """Calls in the body of a fence or tag: JSON values, else one Python literal (single quotes)."""
    calls: list[Call] = []
    for _start, _end, value in _json_values(body):
        calls += _calls_in(value, tools) or []
    if calls or not body.startswith(("{", "[")):
        return calls
    try:
        value = ast.literal_eval(body)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return []
    return _calls_in(value, tools) or []


def extract_text_tool_calls(text: str, tool_names: Collection[str]) -> tuple[str, list[Call]]:
    """The calls written in `text`, in order, and the text without them. No call: `(text, [])`."""
    if not text or not tool_names:
        return text, []
    found: list[tuple[int, int, list[Call]]] = []
    for pattern in (_TAG, _FENCE):
        for match in pattern.finditer(text):
            if any(start < match.end() and match.start() < end for start, end, _ in found):
                continue  # a fence inside a tag (or a tag inside a fence) already read
            calls = _calls_in_block(match.group(1).strip(), tool_names)
            if calls:
                found.append((match.start(), match.end(), calls))
    if not found:
        for start, end, value in _json_values(text):
            calls = _calls_in(value, tool_names) or []
            if calls:
                found.append((start, end, calls))
    if not found:
        return text, []
    found.sort(key=lambda item: item[0])
    rest = text
    for start, end, _ in reversed(found):
        rest = rest[:start] + rest[end:]
    rest = re.sub(r"\n{3,}", "\n\n", rest).strip()
    return rest, [call for _, _, calls in found for call in calls]
