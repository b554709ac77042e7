r"""Text from the model, the tools and the servers is shown, never obeyed, by the terminal.

Such text may carry escape sequences (ESC[2J clears the screen, OSC 52 writes the clipboard, OSC 8 makes
links), C1 controls (U+009B is a one-character CSI for some terminals), BEL, backspace, a carriage
return that overwrites the line, or bidi overrides that make code read differently than it runs. Each
such character is written out visibly, as Python would spell it: ESC as `\x1b` (so ESC[2J shows as
`\x1b[2J`), BEL as `\x07`, a lone CR as `\r`, U+009B as `\u009b`, U+202E as `\u202e`, a lone surrogate
as `\udcxx`. The sequence that follows an escaped ESC is ordinary printable text. Newlines and tabs
stay (answers are multi-line), and CR LF is a newline.

- `sanitize(text)` for a whole string, `sanitize(text, one_line=True)` where a newline would break a
  one-line field (a tool name);
- `StreamSanitizer` for text that arrives in pieces (a CR LF split across two deltas stays a newline);
- `SafeConsole` / `safe_console()`: a rich Console that sanitizes everything it prints, whatever the
  renderable; rich's own styling is added afterwards, so colours still work;
- `SafeWriter`: a text stream wrapper for code that prints to a file object itself (text or JSON lines);
- `json_safe(line)`: a JSON text with the characters JSON leaves raw (DEL, C1, bidi controls, lone
  surrogates) escaped as `\uXXXX`, so `--json` on a terminal is inert and still decodes exactly.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from typing import IO, Any

from rich.console import Console, ConsoleOptions, RenderableType
from rich.segment import Segment
from rich.text import Text

# C0 controls but LF and TAB, DEL, C1 controls, the bidi embeddings/overrides/isolates and marks, and
# surrogates (a model's JSON can hold a lone one; it cannot even be encoded for the terminal).
_BIDI = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
_UNSAFE = re.compile(f"\r\n|[\x00-\x08\x0b-\x1f\x7f-\x9f{_BIDI}\ud800-\udfff]")
_UNSAFE_ONE_LINE = re.compile(f"[\x00-\x1f\x7f-\x9f{_BIDI}\ud800-\udfff]")
# What json.dumps(ensure_ascii=False) writes raw although a terminal may act on it.
_JSON_RAW = re.compile(f"[\x7f-\x9f{_BIDI}\ud800-\udfff]")
_NAMED = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}


def _escape(char: str) -> str:
    if char == "\r\n":
        return "\n"
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x80 else f"\\u{code:04x}"


def sanitize(text: str, *, one_line: bool = False) -> str:
    """`text` with every control character and escape sequence shown visibly instead of interpreted."""
    pattern = _UNSAFE_ONE_LINE if one_line else _UNSAFE
    return pattern.sub(lambda m: _escape(m.group()), text)


def json_safe(line: str) -> str:
    """A JSON text whose raw DEL, C1, bidi and surrogate characters are written as `\\uXXXX` escapes.

    Those characters can only stand inside JSON strings, where the escape decodes to the same character:
    a script reading the line gets exactly what the model sent.
    """
    return _JSON_RAW.sub(lambda m: f"\\u{ord(m.group()):04x}", line)


class StreamSanitizer:
    """`sanitize` for a text that arrives in pieces: a CR at the end of a piece waits for the next one,
    since CR LF is a newline and a lone CR is not."""

    def __init__(self) -> None:
        self._cr = False

    def feed(self, piece: str) -> str:
        if self._cr:
            piece = "\r" + piece
            self._cr = False
        if piece.endswith("\r"):
            piece = piece[:-1]
            self._cr = True
        return sanitize(piece)

    def flush(self) -> str:
        """What is held back; call it when the text ends (or something else is printed)."""
        if not self._cr:
            return ""
        self._cr = False
        return sanitize("\r")


class SafeConsole(Console):
    """A rich Console whose output holds no escape sequence but rich's own styling.

    Strings are sanitized before rich measures them (so wrapping and tables stay aligned), and every
    rendered segment again, which covers Text, Table and any renderable built from untrusted strings.
    """

    def render_str(self, text: str, **kwargs: Any) -> Text:
        return super().render_str(sanitize(text), **kwargs)

    def render(self, renderable: RenderableType, options: ConsoleOptions | None = None) -> Iterable[Segment]:
        for segment in super().render(renderable, options):
            # Control segments are rich's own cursor moves (status lines), not text.
            text = segment.text if segment.control else sanitize(segment.text)
            yield segment if text == segment.text else Segment(text, segment.style)


def safe_console(file: IO[str] | None = None, **kwargs: Any) -> SafeConsole:
    """aforo's console: sanitizing, no highlighting of numbers, soft wrap, NO_COLOR respected."""
    kwargs.setdefault("no_color", bool(os.environ.get("NO_COLOR")))
    kwargs.setdefault("highlight", False)
    kwargs.setdefault("soft_wrap", True)
    return SafeConsole(file=file, **kwargs)


class SafeWriter:
    """A text stream that sanitizes what is written to it, for code that prints to a file object itself.

    With `json=True` the stream carries JSON lines: they are made inert with `json_safe` instead.
    """

    def __init__(self, stream: IO[str], *, json: bool = False) -> None:
        self.stream = stream
        self.json = json
        self._pending = StreamSanitizer()

    def write(self, text: str) -> int:
        self.stream.write(json_safe(text) if self.json else self._pending.feed(text))
        return len(text)

    def flush(self) -> None:
        self.stream.write(self._pending.flush())
        self.stream.flush()

    def isatty(self) -> bool:
        return self.stream.isatty()
