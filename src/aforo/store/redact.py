"""Redaction of secrets before anything reaches disk: `[REDACTED:<kind>]` replaces each one.

The detectors (`aforo.store.detectors`) run over the *original* text, each yielding spans; overlapping
spans are merged and the most specific kind names the result, so the order of detectors never matters
and a marker is never re-scanned. Structured values (sessions, checkpoints) are walked whole, so a
tool result is judged with the call it answers (a Read of `.env` has every value redacted), and a
`.env` value found anywhere in them is redacted wherever else it appears in them (an answer quoting
it in a sentence: `the password is hunter2hunter2`).

Not covered (documented): high-entropy strings without a recognizable name or prefix, since hashes and
ids look the same and redacting them would mangle ordinary tool output.
"""

from __future__ import annotations

import bisect
import re
import threading
from collections import OrderedDict
from collections.abc import Iterable
from typing import Any

from aforo.store import env_files
from aforo.store.detectors import P_ASSIGN, SECRETISH, Span, spans
from aforo.store.env_files import ENV_KIND
from aforo.store.secret_keys import MARKER, MARKER_PREFIX, secret_key_kind, value_is_secret

# A redacted text, and the `.env` values redacted in it that are worth looking for elsewhere.
Redacted = tuple[str, frozenset[str]]


class _Memo:
    """Recently redacted strings, bounded by their total size rather than their number.

    Sessions are saved after every turn with the whole history: the memo makes each save pay only for
    the strings that are new since the last one (a str caches its own hash, and an unchanged text is
    stored as the same object, so the memo holds references, not copies).
    """

    def __init__(self, max_chars: int) -> None:
        self.max_chars = max_chars
        self.chars = 0
        self.items: OrderedDict[str, Redacted] = OrderedDict()
        self.lock = threading.Lock()

    def get(self, text: str) -> str:
        return self.entry(text)[0]

    def entry(self, text: str) -> Redacted:
        with self.lock:
            hit = self.items.get(text)
            if hit is not None:
                self.items.move_to_end(text)
                return hit
        out = _redact(text)
        with self.lock:
            if text not in self.items:
                self.items[text] = out
                self.chars += len(text)
            while self.chars > self.max_chars and self.items:
                old, _ = self.items.popitem(last=False)
                self.chars -= len(old)
        return out


_MEMO = _Memo(max_chars=16 * 1024 * 1024)


def redact(text: str) -> str:
    """`text` with every detected secret replaced by `[REDACTED:<kind>]`."""
    return _redacted(text)[0]


def _redacted(text: str) -> Redacted:
    return _MEMO.entry(text) if len(text) >= 32 else _redact(text)


def redact_env_file(text: str) -> str:
    """`text` from a `.env`-style file, as a tool showed it: every value redacted, whatever its key."""
    return _redact_env_file(text)[0]


def _redact_env_file(text: str) -> Redacted:
    found = [*spans(text), *((start, end, P_ASSIGN, ENV_KIND) for start, end in env_files.file_spans(text))]
    out, values = _redacted(_apply(text, found))
    return out, values | _quotable(text, found)


# A redaction can give text around it a new context: a token cut out of the middle of a word leaves
# `…]password=x`, where `password` now starts a word. So the result is redacted again until nothing
# changes, which makes redacting a stored file twice a no-op. One more pass is the rule, two are rare.
_MAX_PASSES = 4


def _redact(text: str) -> Redacted:
    found = list(spans(text))
    values = _quotable(text, found)
    out = _apply(text, found)
    passes = 1
    while out != text and passes < _MAX_PASSES:
        text, out = out, _apply(out, spans(out))
        passes += 1
    return out, values


# A `.env` value is looked for elsewhere in the same session or checkpoint when it cannot be an ordinary
# word: at least this long, with a letter and a digit and no space (`hunter2hunter2`, not `production`).
_QUOTABLE_CHARS = 8
_MAX_QUOTABLE = 256  # values looked for in one structured value; a .env has a few dozen


def _quotable(text: str, found: Iterable[Span]) -> frozenset[str]:
    """The `.env` values among the spans `found` in `text` that are worth looking for elsewhere."""
    values = set()
    for start, end, _prio, kind in found:
        value = text[start:end]
        if (
            kind == ENV_KIND
            and len(value) >= _QUOTABLE_CHARS
            and any(c.isdigit() for c in value)
            and any(c.isalpha() for c in value)
            and not any(c.isspace() for c in value)
            and MARKER_PREFIX not in value
        ):
            values.add(value)
    return frozenset(values)


def _apply(text: str, found: Iterable[Span]) -> str:
    """Replace the spans found, merged where they overlap; existing markers are kept as they are."""
    spans = sorted(found)
    if not spans:
        return text
    markers = [m.span() for m in MARKER.finditer(text)]
    # A span inside an existing marker is dropped: redacting twice gives the same text.
    marker_starts = [start for start, _ in markers]
    merged: list[list[Any]] = []
    for start, end, prio, kind in spans:
        i = bisect.bisect_right(marker_starts, start) - 1
        if i >= 0 and end <= markers[i][1]:
            continue  # inside an existing marker
        if merged and start < merged[-1][1]:
            last = merged[-1]
            last[1] = max(last[1], end)
            if prio > last[2]:
                last[2], last[3] = prio, kind
        else:
            merged.append([start, end, prio, kind])
    parts: list[str] = []
    pos = 0
    for start, end, _prio, kind in merged:
        parts.append(text[pos:start])
        parts.append(f"{MARKER_PREFIX}{kind}]")
        pos = end
    parts.append(text[pos:])
    return "".join(parts)


def redact_obj(obj: Any) -> Any:
    """A copy of a JSON-like value with every string redacted.

    A string stored under a secret-looking key (`{"password": "hunter"}`) is redacted whole, since a
    structured value has no surrounding text to judge its shape by. A tool result that answers a call
    naming a `.env`-style file (in the same value: a session's or a checkpoint's messages) has every
    value redacted, whatever its key. Walked with an explicit stack: nesting depth is not ours to pick.
    """
    env_results = _env_tool_use_ids(obj)
    root: list[Any] = [None]
    stack: list[tuple[Any, Any, Any]] = [(obj, root, 0)]  # (value, where its copy goes, under which key)
    texts: list[tuple[Any, Any]] = []  # where each redacted string went
    values: set[str] = set()  # the .env values redacted in them
    while stack:
        value, parent, slot = stack.pop()
        if isinstance(value, str):
            parent[slot], found = _redacted(value)
            values |= found
            texts.append((parent, slot))
        elif isinstance(value, dict):
            parent[slot] = out = dict.fromkeys(value)  # keys in their order, values filled in below
            env_file = value.get("type") == "tool_result" and value.get("tool_use_id") in env_results
            for key, item in value.items():
                if env_file and key == "content" and isinstance(item, str):
                    out[key], found = _redact_env_file(item)
                    values |= found
                    texts.append((out, key))
                elif (marker := _secret_field(key, item)) is not None:
                    out[key] = marker
                else:
                    stack.append((item, out, key))
        elif isinstance(value, list | tuple):
            parent[slot] = out_list = [None] * len(value)
            stack.extend((item, out_list, i) for i, item in enumerate(value))
        else:
            parent[slot] = value
    if values:
        _redact_quoted(texts, values)
    return root[0]


def _redact_quoted(texts: list[tuple[Any, Any]], values: set[str]) -> None:
    """Redact, in each of `texts` (a container and a key), the `.env` values found elsewhere in the same
    structured value: an answer that quotes one in a sentence, a later message that repeats it."""
    needles = sorted(values, key=lambda v: (-len(v), v))[:_MAX_QUOTABLE]
    pattern = re.compile("|".join(map(re.escape, needles)))  # longest first: a value inside another
    for parent, slot in texts:
        text = parent[slot]
        if any(needle in text for needle in needles):
            found = ((m.start(), m.end(), P_ASSIGN, ENV_KIND) for m in pattern.finditer(text))
            parent[slot] = _apply(text, found)


def _secret_field(key: Any, value: Any) -> str | None:
    """The marker for `value` when it sits under a secret-looking `key`, else None."""
    if not isinstance(key, str) or not isinstance(value, str) or not SECRETISH.search(key):
        return None
    kind = secret_key_kind(key, env_style=False)
    if kind and value_is_secret(value, bare=False, config_line=True, key=key, next_char=""):
        return f"{MARKER_PREFIX}{kind}]"
    return None


def _env_tool_use_ids(obj: Any) -> set[str]:
    """Ids of the tool calls in `obj` whose `file_path` or `path` names a `.env`-style file."""
    ids: set[str] = set()
    stack = [obj]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            if value.get("type") == "tool_use" and isinstance(value.get("id"), str):
                args = value.get("input")
                paths = [args.get(k) for k in ("file_path", "path")] if isinstance(args, dict) else []
                if any(isinstance(p, str) and env_files.is_env_file(p) for p in paths):
                    ids.add(value["id"])
            stack.extend(value.values())
        elif isinstance(value, list | tuple):
            stack.extend(value)
    return ids


def redacted_line(text: str, chars: int) -> str:
    """The first line of `text` redacted, then cut to `chars` (with "…"): a title that is safe to store.

    Redacting after the cut would miss a secret the cut shortens (`ghp_…` no longer matches), and the
    whole text is redacted, not only its first line, so a secret that spans lines is found too. The cut
    never splits a marker.
    """
    stripped = redact(text).strip()
    line = stripped.splitlines()[0] if stripped else ""
    if len(line) <= chars:
        return line
    cut = chars - 1
    for m in MARKER.finditer(line, max(0, cut - 80), cut + 80):
        if m.start() < cut < m.end():
            cut = m.start()
    return line[:cut] + "…"
