"""Streamed answer text, held back where a tool call written as text could begin until the parser decides.

Small models write their calls in the answer (```json {"name": "Read", …}```, `<tool_call>…`, bare JSON,
see `loop.textcalls`). Streamed as they come, such a call would be shown as text and then again as
the call. `TextHold` sits between the stream and the screen: text streams through untouched until a
fence, a `<tool_call>` tag, a `{` or a `[` begins; from there it is held until the piece is complete
(the fence or tag closes, the brackets balance) and `extract_text_tool_calls` reads it: a call is kept
back, anything else is released at once. A `{` that is not followed by a JSON key, or a `<` that does not
spell `<tool_call>`, is released as soon as that is known, so prose flows on.

Whole fences are held: the parser reads JSON anywhere in a fence's body, so only the closed fence can
say. The agent's own parse of the whole answer stays the authority: `settle` gets the calls it will
run, and a piece held as a call that the agent does not run (a bare one next to fenced ones, an answer
cut by the output limit, an answer with structured calls) is released after the rest.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Literal

from aforo.loop.bracket_scan import FAILED, BracketScan
from aforo.loop.textcalls import extract_text_tool_calls
from aforo.messages import Call

Kind = Literal["fence", "tag", "bare"]
_FENCE, _TAG_OPEN, _TAG_CLOSE = "```", "<tool_call>", "</tool_call>"
# A piece longer than this is released: calls are short (a path, a pattern). For a bare `{"` in prose
# this keeps the rest of the answer flowing; for a long code fence it bounds the wait. The work does not
# depend on them: each character is scanned once (`BracketScan`, `_NextFind`), however the answer comes.
BARE_HOLD_CHARS = 2_000
BLOCK_HOLD_CHARS = 32_000
_OPENER = re.compile(r"[`<{\[]")


@dataclass(frozen=True)
class Held:
    """A piece of the answer kept back as a call: its text and the calls the parser read in it."""

    text: str
    kind: Kind
    calls: tuple[Call, ...]


class TextHold:
    """Feed it the answer's pieces; show what `feed` returns; at the end, `settle` with the calls run."""

    def __init__(self, tool_names: Collection[str]) -> None:
        self.tools = tool_names
        # The answer's text from position `_base` on; `_pos` is where the undecided text starts: what
        # came before it was shown or kept as a call. Positions count from the answer's start.
        self._buf = ""
        self._base = 0
        self._pos = 0
        self._holding: Kind | None = None  # the held piece starts at `_pos`
        self._in_code = False  # inside a fence released as too long: its closing ``` is no opener
        self._held: list[Held] = []
        self._brackets = BracketScan()
        self._closers = {_FENCE: _NextFind(_FENCE), _TAG_CLOSE: _NextFind(_TAG_CLOSE)}

    @property
    def scanned(self) -> int:
        """Characters looked at one by one or searched so far (the linear-time checks count them)."""
        return self._brackets.scanned + sum(f.searched for f in self._closers.values())

    # --- streaming ---------------------------------------------------------------------------------

    def feed(self, piece: str) -> str:
        """Take the next piece of the answer; return the text that can be shown now."""
        buf, self._buf = self._buf, ""  # the one reference: CPython appends in place, not a copy
        if self._pos - self._base > len(buf) // 2:  # drop the decided text now and then: linear
            buf, self._base = buf[self._pos - self._base :], self._pos
        buf += piece
        self._buf = buf
        return self._run(final=False)

    @property
    def _end(self) -> int:
        return self._base + len(self._buf)

    def _text(self, start: int, stop: int | None = None) -> str:
        return self._buf[start - self._base : (self._end if stop is None else stop) - self._base]

    def _run(self, *, final: bool) -> str:
        out: list[str] = []
        while self._pos < self._end:
            if self._holding is None:
                if not self._scan(out):
                    break
            elif not self._decide(out, final=final):
                break
        self._brackets.forget(self._pos)
        return "".join(out)

    def _show(self, out: list[str], stop: int) -> None:
        out.append(self._text(self._pos, stop))
        self._pos = stop

    def _scan(self, out: list[str]) -> bool:
        """Show the text up to the next place a call could begin; True when holding starts there."""
        buf, base = self._buf, self._base
        if self._in_code:
            close = buf.find(_FENCE, self._pos - base)
            if close < 0:
                keep = len(buf) - len(buf.rstrip("`"))  # a closing fence may be split across pieces
                self._show(out, max(self._pos, self._end - keep))
                return False
            self._show(out, base + close + len(_FENCE))
            self._in_code = False
            return True
        for m in _OPENER.finditer(buf, self._pos - base):
            i, c = m.start(), m.group()
            kind: Kind | None = "bare"
            if c == "`":
                kind = "fence" if _opens(buf, i, _FENCE) else None
            elif c == "<":
                kind = "tag" if _opens(buf, i, _TAG_OPEN) else None
            if kind is not None:
                self._show(out, base + i)
                self._holding = kind
                return True
        self._show(out, self._end)
        return False

    def _decide(self, out: list[str], *, final: bool) -> bool:
        """Try to decide the held piece; True when decided (scanning goes on after it)."""
        end = self._end_of_piece(final)
        if end is None:
            return False
        if end < 0:  # it cannot be a call
            if self._holding == "fence" and self._buf.startswith(_FENCE, self._pos - self._base):
                # A code block too long to be a call: shown as it comes, up to its closing fence.
                self._show(out, self._pos + len(_FENCE))
                self._in_code = True
            else:  # release the opening character and scan on from the next one
                self._show(out, self._pos + 1)
            self._holding = None
            return True
        piece = self._text(self._pos, end)
        _rest, calls = extract_text_tool_calls(piece, self.tools)
        if calls:
            self._held.append(Held(piece, self._holding or "bare", tuple(calls)))
            self._pos = end
        else:
            self._show(out, end)
        self._holding = None
        return True

    def _end_of_piece(self, final: bool) -> int | None:
        """Where the held piece ends (a position); None: not known yet; -1: it cannot be a call.

        A piece longer than its limit cannot be a call, wherever its end would come: the same answer
        whatever the stream's pieces, and each opener looks no further than its limit."""
        pos, end_of_text, kind = self._pos, self._end, self._holding
        end: int | None
        if kind == "bare":
            self._brackets.forget(pos)
            self._brackets.scan(self._buf, self._base, min(end_of_text, pos + BARE_HOLD_CHARS))
            end = self._brackets.end(pos)
            if end == FAILED or (end is None and end_of_text - pos > BARE_HOLD_CHARS):
                return -1
        else:
            opener, closer = (_FENCE, _FENCE) if kind == "fence" else (_TAG_OPEN, _TAG_CLOSE)
            if not self._buf.startswith(opener, pos - self._base):
                end = -1 if not opener.startswith(self._text(pos)) else None
            else:
                stop = min(end_of_text, pos + BLOCK_HOLD_CHARS)
                close = self._closers[closer].find(self._buf, self._base, pos + len(opener), stop)
                end = close + len(closer) if close >= 0 else None
                if end is None and end_of_text - pos > BLOCK_HOLD_CHARS:
                    return -1
        return end_of_text if end is None and final else end

    # --- the end of the answer ---------------------------------------------------------------------

    def settle(self, run: Sequence[Call]) -> tuple[str, list[Held]]:
        """The stream has ended and the agent will run the text calls `run`: the text still to show (what
        was held and is no call, in order) and the pieces that are calls, for their own event."""
        shown = self._run(final=True)
        calls: list[Held] = []
        late: list[str] = []
        remaining = list(run)
        for held in self._held:
            left = _without(remaining, held.calls)
            if left is None:
                late.append(held.text)
            else:
                remaining = left
                calls.append(held)
        self._held = []
        return shown + "".join(late), calls


class _NextFind:
    """The first `needle` at or after a position, for positions asked in increasing order: what was
    searched once is not searched again (a cache of `str.find`)."""

    def __init__(self, needle: str) -> None:
        self.needle = needle
        self.searched = 0  # characters searched (the linear-time checks count them)
        # The first needle at or after `_lo` that ends by `_hi` is at `_found` (-1: none).
        self._lo = self._hi = 0
        self._found = -1

    def find(self, buf: str, base: int, at: int, stop: int) -> int:
        """The position of the first `needle` at or after `at` that ends by `stop`; -1: none."""
        n = len(self.needle)
        if self._found >= at >= self._lo:
            return self._found if self._found + n <= stop else -1
        start = max(at, self._hi - n + 1) if self._found < 0 and self._lo <= at else at
        i = buf.find(self.needle, start - base, stop - base)
        self._lo, self._hi, self._found = at, stop, (-1 if i < 0 else i + base)
        self.searched += max(0, (stop if i < 0 else self._found + n) - start)
        return self._found


def _without(calls: list[Call], taken: Sequence[Call]) -> list[Call] | None:
    """`calls` without one of each of `taken` (a piece that repeats a call needs it run twice), or None
    when one of them is not there."""
    left = list(calls)
    for call in taken:
        if call not in left:
            return None
        left.remove(call)
    return left


def _opens(text: str, i: int, opener: str) -> bool:
    """`opener` starts at `i`, or the text ends with a beginning of it (the rest may come next)."""
    return text.startswith(opener, i) or (len(text) - i < len(opener) and opener.startswith(text[i:]))
