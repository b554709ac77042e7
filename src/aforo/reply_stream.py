"""A constrained step read as it streams (`reply_format` says what a step is): once the step is seen to
be `{"answer": "...`, the answer's characters are given out as they arrive, so the user reads the answer
while it is generated; a call step is held whole and parsed at its end.
"""

from __future__ import annotations

from collections.abc import Sequence

from aforo.messages import Call, ToolSpec
from aforo.reply_format import ANSWER, parse


class AnswerStream:
    """Decodes a streamed step: once it is seen to be `{"answer": "...`, the answer's characters are
    given out as they arrive (escapes decoded, even split across pieces); a call step is held whole.

    The scan is linear: each character is looked at once, whatever the pieces' sizes."""

    def __init__(self) -> None:
        self.raw: list[str] = []
        self._head = ""  # the part of the opening `{"answer": "` begun but not complete yet
        self._part = 0  # how many parts of that opening came whole (blanks between them are dropped)
        self._state = "head"  # head | answer | escape | unicode | done | other
        self._unicode = ""
        self._high = ""  # a high surrogate's \\uXXXX, waiting for its low half

    def feed(self, piece: str) -> str:
        self.raw.append(piece)
        if self._state == "head":
            opened = self._opening(piece)
            if opened is None:
                return ""
            piece = opened
        out: list[str] = []
        for ch in piece:
            if self._state == "answer":
                if ch == "\\":
                    self._state = "escape"
                elif ch == '"':
                    self._state = "done"
                else:
                    out.append(self._flush_high() + ch)
            elif self._state == "escape":
                if ch == "u":
                    self._state, self._unicode = "unicode", ""
                else:
                    out.append(self._flush_high() + _ESCAPES.get(ch, ch))
                    self._state = "answer"
            elif self._state == "unicode":
                self._unicode += ch
                if len(self._unicode) == 4:
                    out.append(self._code_unit(self._unicode))
                    self._state = "answer"
            else:
                break
        return "".join(out)

    def _opening(self, piece: str) -> str | None:
        """The answer's characters in `piece` once `{"answer": "` is complete; None while undecided or
        when the step is no answer. Blanks already passed are not looked at again."""
        head, self._head = self._head + piece, ""
        i = 0
        while self._part < len(_OPENING):
            expected = _OPENING[self._part]
            while i < len(head) and head[i] in _WS:
                i += 1
            got = head[i : i + len(expected)]
            if got != expected[: len(got)]:
                self._state = "other"
                return None
            if len(got) < len(expected):
                self._head = head[i:]
                return None
            i += len(expected)
            self._part += 1
        self._state = "answer"
        return head[i:]

    def _code_unit(self, digits: str) -> str:
        try:
            unit = int(digits, 16)
        except ValueError:
            return self._flush_high() + "\\u" + digits
        if 0xD800 <= unit < 0xDC00:
            held, self._high = self._flush_high(), chr(unit)
            return held
        if 0xDC00 <= unit < 0xE000 and self._high:
            high, self._high = self._high, ""
            return chr(((ord(high) - 0xD800) << 10) + (unit - 0xDC00) + 0x10000)
        return self._flush_high() + chr(unit)

    def _flush_high(self) -> str:
        held, self._high = self._high, ""
        return held

    @property
    def streaming_answer(self) -> bool:
        return self._state not in ("head", "other")

    @property
    def text(self) -> str:
        return "".join(self.raw)

    def finish(self, tools: Sequence[ToolSpec]) -> tuple[str, list[Call]]:
        """Once the answer is complete: the text not given out yet, and the calls of a call step. A
        text that is no step (a server that ignored the schema) is given out whole, as plain text."""
        if self.streaming_answer:
            return self._flush_high(), []
        step = parse(self.text, tools)
        if step is None:
            return self.text, []
        return step.answer, list(step.calls)


_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_WS = " \t\r\n"
_OPENING = ("{", f'"{ANSWER}"', ":", '"')
