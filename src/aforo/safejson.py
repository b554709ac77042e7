"""JSON from untrusted sources (server bodies, state files, text tool calls), parsed with a depth limit.

`json.loads` recurses once per nested `[`/`{`, so a document nested ten thousand deep ends in a
`RecursionError` traceback (and one such session file broke `aforo sessions` for all). `loads` first
measures the nesting with a linear, non-recursive scan and refuses a document deeper than
`JSON_DEPTH` with `LimitExceeded`, so the parser never recurses past the limit.

The scan counts brackets outside strings. Up to the first syntax error it sees exactly the strings the
parser sees (a `"` the parser would reject ends the parse there), so the parser never goes deeper than
the scan measured; a malformed document still gets `json.JSONDecodeError` from the parser itself.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from aforo.errors import LimitExceeded, ServerLimitExceeded
from aforo.limits import JSON_DEPTH, JSON_INTEGER, Limit

# A whole string (escapes included; an unterminated one runs to the end), or one bracket. Possessive
# quantifiers: a string is consumed once, never re-tried shorter, so the scan stays linear.
_TOKEN = re.compile(r'"[^"\\]*+(?:\\.[^"\\]*+)*+"?|[\[{]|[\]}]', re.DOTALL)


def _deeper_than(text: str, limit: int) -> bool:
    if text.count("[") + text.count("{") <= limit:
        return False  # too few brackets to nest that deep: the common case, no scan needed
    depth = 0
    for m in _TOKEN.finditer(text):
        c = text[m.start()]
        if c in "[{":
            depth += 1
            if depth > limit:
                return True
        elif c in "]}":
            depth = max(0, depth - 1)
    return False


def check_depth(
    text: str, what: str, limit: Limit = JSON_DEPTH, raising: type[LimitExceeded] = LimitExceeded
) -> None:
    """Raise `raising` naming `what` when `text` nests deeper than `limit` (`JSON_DEPTH`)."""
    levels = int(limit.value)
    if _deeper_than(text, levels):
        raise raising(limit, f"{what} is nested more than {levels} levels deep")


def loads(
    data: str | bytes | bytearray,
    what: str = "JSON",
    limit: Limit = JSON_DEPTH,
    raising: type[LimitExceeded] = LimitExceeded,
    *,
    large_as_text: bool = False,
) -> Any:
    """`json.loads` for untrusted input: `raising` (a `LimitExceeded`) when nested deeper than `limit`.

    `what` names the source in the message ("the server's response", "session file …"). Bytes are
    decoded as `json.loads` decodes them (UTF-8, -16 or -32, detected). aforo's own state files use
    `STATE_JSON_DEPTH`, which leaves room for a tool input `JSON_DEPTH` deep inside a session; the
    boundaries pass the LimitExceeded subclass their callers handle (a server's, a state file's).

    An integer past `json_integer` is refused with `raising`, or with `large_as_text` kept as its digits
    (a str): a server's document stays readable, and nothing can add, store or use that number as one.
    """
    text = data.decode(json.detect_encoding(data), "surrogatepass") if not isinstance(data, str) else data
    check_depth(text, what, limit, raising)
    return json.loads(text, parse_int=integers(what, raising, large_as_text=large_as_text))


def server_json(text: str, what: str) -> Any:
    """JSON a server sent, parsed within the `json_depth` limit; ValueError when it is not JSON. An
    integer past `json_integer` is read as its digits (a str), which no count takes (`usage_count`)."""
    return loads(text, what, JSON_DEPTH, ServerLimitExceeded, large_as_text=True)


_INT64_DIGITS = len(str(JSON_INTEGER.value))


def integers(
    what: str, raising: type[LimitExceeded] = LimitExceeded, *, large_as_text: bool = False
) -> Callable[[str], int | str]:
    """`int` for the parser, within `json_integer`: checked here, once, so nothing that stores or adds
    them (the telemetry's SQLite, a count) meets one it cannot hold, and the digits are counted before
    `int` reads them (past 4 300 it raises ValueError, which would pass for a syntax error)."""

    def parse(literal: str) -> int | str:
        digits = len(literal) - literal.startswith("-")
        if digits <= _INT64_DIGITS and abs(value := int(literal)) <= JSON_INTEGER.value:
            return value
        if large_as_text:
            return literal
        raise raising(JSON_INTEGER, f"{what} holds an integer of {digits:,} digits")

    return parse
