r"""The JSON bytes of a request body, whatever its strings hold.

A prompt typed with a byte that is not UTF-8 (argv and stdin keep it as a lone surrogate, Python's
surrogateescape) cannot be encoded as UTF-8, and a JSON `\udcNN` escape is refused by strict servers.
Such a character is sent as visible text, the way tools show file names (`caf\xe9`): the model sees
which byte it was, and can pass the name back to a tool, which reads `\xe9` as that byte.
"""

from __future__ import annotations

import json
import re
from typing import Any

JSON_HEADERS = {"Content-Type": "application/json"}
_SURROGATE = re.compile("[\ud800-\udfff]")
# os.fsdecode maps an undecodable byte 0xNN (0x80-0xFF) to the lone surrogate U+DCNN.
_BYTE_BASE = 0xDC00


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    # Written as text: a backslash the JSON encoder then escapes, so the server reads `\xe9` literally.
    return f"\\x{code - _BYTE_BASE:02x}" if 0xDC80 <= code <= 0xDCFF else f"\\u{code:04x}"


def _clean(value: Any) -> Any:
    if isinstance(value, str):
        return _SURROGATE.sub(_visible, value) if _SURROGATE.search(value) else value
    if isinstance(value, dict):
        return {_clean(k): _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    return value


def encode_body(body: Any) -> bytes:
    """`body` as compact UTF-8 JSON (as httpx's `json=` writes it), surrogates made visible."""
    text = json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    if _SURROGATE.search(text):
        text = json.dumps(_clean(body), ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return text.encode("utf-8")
