"""Tool calls written as text: what small local models emit instead of structured `tool_calls`.

Qwen2.5-Coder 0.5B/1.5B on llama-server choose the right tool and arguments but write them in the
answer, as ```json {"name": "Read", "arguments": {...}} ``` or inside <tool_call> tags, sometimes
several in a row or as a JSON list. A JSON value counts as a call only when it has a call's shape and
names a known tool, so ordinary JSON in an answer stays text. Where calls sit in tags or fences, only
those are read; bare JSON in prose is considered only when there are none.

Model text is untrusted and can be long: every step is linear in it and nothing recurses on it. One
pass finds the balanced `{…}`/`[…]` spans (skipping JSON strings inside brackets); each is parsed only
if it nests no deeper than `JSON_DEPTH`, so `json.loads` never recurses past the limit. Fences and tags
are found with `str.find`. Whatever does not parse as a call stays text.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Collection, Iterator
from typing import Any

from aforo import safejson
from aforo.errors import LimitExceeded
from aforo.limits import JSON_DEPTH, TEXT_CALL_LITERAL_CHARS
from aforo.messages import Call

# A fence opener and its info string (json, tool_call, python...), which is skipped. Possessive: the
# info string cannot contain the closing fence, so giving characters back could never help.
_FENCE_OPEN = re.compile(r"```[ \t]*+[\w+.-]*+[ \t]*+\n?")
_TAG_OPEN, _TAG_CLOSE = "<tool_call>", "</tool_call>"
_FIRST_WORD = re.compile(r"[A-Za-z_]\w*(?=[\s(:]|$)")
_NAME_KEYS = ("name", "tool", "tool_name", "function")
_ARG_KEYS = ("arguments", "parameters", "args", "input", "tool_input")
# Keys that make an object a description of a tool (a listing in an answer), not a call of it.
_NOT_A_CALL = frozenset({"description", "returns", "required", "properties"})

# The bracket scanner's next stop: outside brackets an opener; inside, any bracket or a string.
_PROSE_STOP = re.compile(r"[\[{]")
_BRACKET_STOP = re.compile(r'[\[\]{}"]')
# The rest of a JSON string after its opening quote; None when a newline or the end comes first.
_STRING_REST = re.compile(r'[^"\\\n]*+(?:\\.[^"\\\n]*+)*+"')
_LITERAL_BRACKETS = re.compile(r"[\[\]{}()]")
_INTEGERS = safejson.integers("a tool call written as text")


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
            value = safejson.loads(value, "the arguments of a text tool call") if value.strip() else {}
        except (ValueError, LimitExceeded):
            return None
    return value if isinstance(value, dict) else None


def _as_call(obj: Any, tools: Collection[str]) -> Call | None:
    # {"type": "function", "function": {...}} written out; a loop, as the nesting is the model's choice.
    while isinstance(obj, dict) and isinstance(obj.get("function"), dict):
        obj = obj["function"]
    if not isinstance(obj, dict):
        return None
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


def _balanced_spans(text: str) -> list[tuple[int, int, int]]:
    """Every balanced `[…]`/`{…}` in `text`, nested ones included, ordered by start: (start, end, depth).

    Outside brackets, quotes are prose. Inside, a JSON string is skipped whole, so its brackets do not
    count. A string broken by a newline, a closer that does not match, or the end of the text ends the
    brackets still open: none of them can be JSON. After a broken string the scan goes on from its
    quote as prose, so a call after a stray quote is still found.
    """
    starts: list[int] = []
    ends: list[int] = []
    depths: list[int] = []
    stack: list[int] = []  # indexes (into starts) of the brackets open here
    pos = 0
    while (m := (_BRACKET_STOP if stack else _PROSE_STOP).search(text, pos)) is not None:
        i, c = m.start(), m.group()
        pos = i + 1
        if c in "[{":
            stack.append(len(starts))
            starts.append(i)
            ends.append(-1)
            depths.append(1)
        elif c == '"':
            string = _STRING_REST.match(text, pos)
            if string is None:
                stack.clear()
            else:
                pos = string.end()
        else:
            k = stack.pop()
            if text[starts[k]] != ("[" if c == "]" else "{"):
                stack.clear()
                continue
            ends[k] = i + 1
            if stack:
                depths[stack[-1]] = max(depths[stack[-1]], depths[k] + 1)
    return [(s, e, d) for s, e, d in zip(starts, ends, depths, strict=True) if e >= 0]


def _json_values(text: str) -> list[tuple[int, int, Any]]:
    """The outermost JSON values that start with { or [ anywhere in `text`, with their spans.

    A span that is not JSON (prose in braces, a value with a typo) gives way to the spans inside it.
    Each character lies in at most `JSON_DEPTH` spans shallow enough to be parsed, so the parsing is
    linear too.
    """
    found: list[tuple[int, int, Any]] = []
    taken = 0  # the end of the last value found: spans before it are inside it
    for start, end, depth in _balanced_spans(text):
        if start < taken or depth > JSON_DEPTH.value:
            continue
        try:
            value = json.loads(text[start:end], parse_int=_INTEGERS)
        except (ValueError, LimitExceeded):  # an integer past `json_integer` is no call's either
            continue
        found.append((start, end, value))
        taken = end
    return found


def _python_literal(body: str) -> Any:
    """`body` as a Python literal (`{'name': 'Read'}`), or None; small and shallow ones only, as
    `ast.literal_eval` builds a whole syntax tree and recurses on it."""
    if len(body) > TEXT_CALL_LITERAL_CHARS.value:
        return None
    depth = deepest = 0
    for m in _LITERAL_BRACKETS.finditer(body):  # strings not skipped: an overcount only refuses more
        depth += 1 if m.group() in "[{(" else -1
        deepest = max(deepest, depth)
    if deepest > JSON_DEPTH.value:
        return None
    try:
        return ast.literal_eval(body)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None


def _calls_in_block(body: str, tools: Collection[str]) -> list[Call]:
    """Calls in the body of a fence or tag: JSON values, else one Python literal (single quotes)."""
    calls: list[Call] = []
    for _start, _end, value in _json_values(body):
        calls += _calls_in(value, tools) or []
    if calls or not body.startswith(("{", "[")):
        return calls
    return _calls_in(_python_literal(body), tools) or []


def _tags(text: str) -> Iterator[tuple[int, int, str]]:
    """`<tool_call>` blocks: (start, end, body). An unclosed tag runs to the end (a stream cut short)."""
    pos = 0
    while (start := text.find(_TAG_OPEN, pos)) >= 0:
        body_start = start + len(_TAG_OPEN)
        close = text.find(_TAG_CLOSE, body_start)
        body_end = len(text) if close < 0 else close
        pos = len(text) if close < 0 else close + len(_TAG_CLOSE)
        yield start, pos, text[body_start:body_end]


def _fences(text: str) -> Iterator[tuple[int, int, str]]:
    """Closed ``` fences: (start, end, body)."""
    pos = 0
    while (start := text.find("```", pos)) >= 0:
        opener = _FENCE_OPEN.match(text, start)
        body_start = opener.end() if opener else start + 3
        close = text.find("```", body_start)
        if close < 0:
            return  # no later fence can close either
        pos = close + 3
        yield start, pos, text[body_start:close]


def extract_text_tool_calls(text: str, tool_names: Collection[str]) -> tuple[str, list[Call]]:
    """The calls written in `text`, in order, and the text without them. No call: `(text, [])`."""
    if not text or not tool_names:
        return text, []
    tagged: list[tuple[int, int, list[Call]]] = []
    for start, end, body in _tags(text):
        calls = _calls_in_block(body.strip(), tool_names)
        if calls:
            tagged.append((start, end, calls))
    found = list(tagged)
    t = 0  # tags and fences both come in order: one pointer finds the tag a fence could overlap
    for start, end, body in _fences(text):
        while t < len(tagged) and tagged[t][1] <= start:
            t += 1
        if t < len(tagged) and tagged[t][0] < end:
            continue  # a fence inside a tag (or a tag inside a fence) already read
        calls = _calls_in_block(body.strip(), tool_names)
        if calls:
            found.append((start, end, calls))
    if not found:
        for start, end, value in _json_values(text):
            calls = _calls_in(value, tool_names) or []
            if calls:
                found.append((start, end, calls))
    if not found:
        return text, []
    found.sort(key=lambda item: item[0])
    parts, pos = [], 0
    for start, end, _ in found:
        parts.append(text[pos:start])
        pos = end
    parts.append(text[pos:])
    rest = re.sub(r"\n{3,}", "\n\n", "".join(parts)).strip()
    return rest, [call for _, _, calls in found for call in calls]
