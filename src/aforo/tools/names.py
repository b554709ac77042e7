r"""How file names are shown to the model: one line each, valid UTF-8, and reversible.

A POSIX name may hold any byte but NUL and '/': newlines, terminal escapes, bytes that are not UTF-8
(Python holds those as lone surrogates, which cannot be encoded into the JSON of the next request).
`show` escapes them visibly, as Python would write them: a newline as `\n`, the undecodable byte 0xE9
as `\xe9`, a C1 control as `\u0085`, and a backslash as `\\` so that nothing is ambiguous. `unshow`
reverses it, so a listed name passed back to Read, LS or Grep reaches the file.
"""

from __future__ import annotations

import re

_NAMED = {"\\": "\\\\", "\n": "\\n", "\t": "\\t", "\r": "\\r"}
_UNNAMED = {v[1]: k for k, v in _NAMED.items()}
# Backslash, C0 and C1 controls, DEL, the line/paragraph separators (str.splitlines breaks on them
# and on \x1c-\x1e and \x85) and surrogates.
_UNSAFE = re.compile("[\\\\\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")
_ESCAPE = re.compile(r"\\(\\|n|t|r|x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4})")
# os.fsdecode maps an undecodable byte 0xNN (0x80-0xFF) to the lone surrogate U+DCNN.
_BYTE_BASE = 0xDC00


def _escape(char: str) -> str:
    code = ord(char)
    if char in _NAMED:
        return _NAMED[char]
    if 0xDC80 <= code <= 0xDCFF:
        return f"\\x{code - _BYTE_BASE:02x}"
    if code < 0x20 or code == 0x7F:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}"


def show(name: str) -> str:
    """`name` (as os.fsdecode gives it) on one line, as valid UTF-8, every unsafe character escaped."""
    return _UNSAFE.sub(lambda m: _escape(m.group()), name)


def _unescape(match: re.Match[str]) -> str:
    body = match.group(1)
    if body in _UNNAMED:
        return _UNNAMED[body]
    code = int(body[1:], 16)
    if body[0] == "x" and code >= 0x80:
        return chr(_BYTE_BASE + code)
    return chr(code)


def unshow(text: str) -> str:
    """The name that `show` printed as `text`; a backslash that starts no escape is kept as it is."""
    return _ESCAPE.sub(_unescape, text) if "\\" in text else text
