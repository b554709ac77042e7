"""The held-back text's rule as it was first written, kept as the tests' oracle: each question rescans
the held text from its start (quadratic on a long answer, so only small inputs are given to it).

`aforo.loop.text_hold.TextHold` answers the same on any text shorter than its limits, cut anywhere.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from typing import Any, Literal

from aforo.loop.text_hold import BARE_HOLD_CHARS, BLOCK_HOLD_CHARS, Held
from aforo.loop.textcalls import extract_text_tool_calls

Kind = Literal["fence", "tag", "bare"]
_FENCE, _TAG_OPEN, _TAG_CLOSE = "```", "<tool_call>", "</tool_call>"

_OPENER = re.compile(r"[`<{\[]")


class ReferenceHold:
    """Feed it the answer's pieces; show what `feed` returns; at the end, `settle` with the calls run."""

    def __init__(self, tool_names: Collection[str]) -> None:
        self.tools = tool_names
        # The undecided text: everything decided before it was shown or kept as a call, and dropped.
        self._text = ""
        self._holding: Kind | None = None  # the held piece starts at 0 of `_text`
        self._in_code = False  # inside a fence released as too long: its closing ``` is no opener
        self._held: list[Held] = []

    # --- streaming ---------------------------------------------------------------------------------

    def feed(self, piece: str) -> str:
        """Take the next piece of the answer; return the text that can be shown now."""
        self._text += piece
        return self._run(final=False)

    def _run(self, *, final: bool) -> str:
        out: list[str] = []
        while self._text:
            if self._holding is None:
                if not self._scan(out):
                    break
            elif not self._decide(out, final=final):
                break
        return "".join(out)

    def _scan(self, out: list[str]) -> bool:
        """Show the text up to the next place a call could begin; True when holding starts there."""
        text = self._text
        if self._in_code:
            close = text.find(_FENCE)
            if close < 0:
                keep = len(text) - len(text.rstrip("`"))  # a closing fence may be split across pieces
                out.append(text[: len(text) - keep])
                self._text = text[len(text) - keep :]
                return False
            out.append(text[: close + len(_FENCE)])
            self._text, self._in_code = text[close + len(_FENCE) :], False
            return True
        for m in _OPENER.finditer(text):
            i, c = m.start(), m.group()
            kind: Kind | None = "bare"
            if c == "`":
                kind = "fence" if _opens(text, i, _FENCE) else None
            elif c == "<":
                kind = "tag" if _opens(text, i, _TAG_OPEN) else None
            if kind is not None:
                out.append(text[:i])
                self._text, self._holding = text[i:], kind
                return True
        out.append(text)
        self._text = ""
        return False

    def _decide(self, out: list[str], *, final: bool) -> bool:
        """Try to decide the held piece; True when decided (scanning goes on after it)."""
        end = self._end_of_piece(final)
        if end is None:
            return False
        if end < 0:  # it cannot be a call
            if self._holding == "fence" and self._text.startswith(_FENCE):
                # A code block too long to be a call: shown as it comes, up to its closing fence.
                out.append(_FENCE)
                self._text, self._in_code = self._text[len(_FENCE) :], True
            else:  # release the opening character and scan on from the next one
                out.append(self._text[0])
                self._text = self._text[1:]
            self._holding = None
            return True
        piece, self._text = self._text[:end], self._text[end:]
        _rest, calls = extract_text_tool_calls(piece, self.tools)
        if calls:
            self._held.append(Held(piece, self._holding or "bare", tuple(calls)))
        else:
            out.append(piece)
        self._holding = None
        return True

    def _end_of_piece(self, final: bool) -> int | None:
        """Where the held piece ends; None: not known yet; -1: it cannot be a call."""
        text, kind = self._text, self._holding
        if kind == "bare":
            end = _balanced_end(text)
            if end is None and len(text) > BARE_HOLD_CHARS:
                return -1
        else:
            opener, closer = (_FENCE, _FENCE) if kind == "fence" else (_TAG_OPEN, _TAG_CLOSE)
            if not text.startswith(opener):
                end = -1 if not opener.startswith(text) else None
            else:
                close = text.find(closer, len(opener))
                end = close + len(closer) if close >= 0 else None
                if end is None and len(text) > BLOCK_HOLD_CHARS:
                    return -1
        return len(text) if end is None and final else end

    # --- the end of the answer ---------------------------------------------------------------------

    def settle(self, run: Sequence[tuple[str, dict[str, Any]]]) -> tuple[str, list[Held]]:
        """The stream has ended and the agent will run the text calls `run`: the text still to show (what
        was held and is no call, in order) and the pieces that are calls, for their own event."""
        shown = self._run(final=True)
        calls: list[Held] = []
        late: list[str] = []
        remaining = list(run)
        for held in self._held:
            left = list(remaining)  # as fixed in TextHold: a piece that repeats a call needs it run twice
            if all(call in left and left.remove(call) is None for call in held.calls):
                remaining = left
                calls.append(held)
            else:
                late.append(held.text)
        self._held = []
        return shown + "".join(late), calls


def _opens(text: str, i: int, opener: str) -> bool:
    """`opener` starts at `i`, or the text ends with a beginning of it (the rest may come next)."""
    return text.startswith(opener, i) or (len(text) - i < len(opener) and opener.startswith(text[i:]))


def _balanced_end(text: str) -> int | None:
    """The end of the JSON-like brackets `text` opens with; None: still open; -1: they cannot be JSON.

    Strings are skipped whole (their brackets do not count), as the parser's scanner does; a newline
    inside a string or a closer that does not match ends any chance of JSON. After the opener the next
    non-blank character must begin a key (`{"`) or an element that could be a call (`[{`, `[[`).
    """
    stack: list[str] = []
    in_string = escaped = False
    first = True
    for i, c in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif c == "\\":
                escaped = True
            elif c == '"':
                in_string = False
            elif c == "\n":
                return -1
            continue
        if first and i > 0 and not c.isspace():
            first = False
            allowed = '"}' if text[0] == "{" else "{[]"
            if c not in allowed:
                return -1
        if c == '"':
            in_string = True
        elif c in "{[":
            stack.append("}" if c == "{" else "]")
        elif c in "}]":
            if not stack or stack.pop() != c:
                return -1
            if not stack:
                return i + 1
    return None
