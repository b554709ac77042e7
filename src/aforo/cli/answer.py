"""How the answer's streamed text reaches the screen: Markdown by blocks, word-wrapped, or as it comes.

- On a terminal the answer is Markdown (rich): code blocks highlighted, paragraphs and lists wrapped to
  the width at word boundaries. It is printed a block at a time, as soon as the block is complete (a
  paragraph at its blank line, a code block at its closing fence). Rich needs a whole block to wrap and
  highlight it, and a printed block is never redrawn: re-rendering the whole answer live (rich's `Live`)
  is limited to the screen's height and repaints what the scrollback already holds. The price is one
  block of latency; meanwhile the status line shows the answer coming (tokens, tokens per second).
- With `--plain` on a terminal the text streams as it comes, wrapped at word boundaries to the width.
- Into a pipe or a file it streams unchanged (only sanitized): the reader decides how to wrap it.

Every writer sanitizes what it writes (`cli.sanitize`): the text is the model's.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Protocol, TextIO

from rich.cells import cell_len
from rich.console import Console
from rich.markdown import Markdown

from aforo.cli.sanitize import StreamSanitizer, sanitize

_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")
_HEADING = re.compile(r" {0,3}#{1,6}(\s|$)")
_LIST_ITEM = re.compile(r" {0,3}([-+*]|\d{1,9}[.)])(\s|$)")
CODE_THEME = "monokai"
TAB = 8


class AnswerWriter(Protocol):
    at_line_start: bool  # nothing of the answer is left mid-line on the screen

    def feed(self, text: str) -> None: ...

    def end(self) -> None:
        """The answer (or this part of it) is over: write what is pending and end its line."""
        ...


class RawAnswer:
    """The text as it comes, sanitized: for pipes and files."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self._clean = StreamSanitizer()
        self.at_line_start = True

    def feed(self, text: str) -> None:
        written = self._clean.feed(text)
        if written:
            self.out.write(written)
            self.out.flush()
            self.at_line_start = written.endswith("\n")

    def end(self) -> None:
        rest = self._clean.flush()
        if not self.at_line_start or rest:
            self.out.write(rest + "\n")
            self.out.flush()
        self.at_line_start = True


class WrappedAnswer:
    """The text as it comes, sanitized, with line breaks at word boundaries so no word is cut by the
    terminal's edge. The word being typed waits until it ends (a space or a newline): only then is it
    known whether it fits. A word wider than the line is cut, as nothing else can be done with it."""

    def __init__(self, out: TextIO, width: Callable[[], int]) -> None:
        self.out = out
        self.width = width
        self._clean = StreamSanitizer()
        self._col = 0
        self._spaces = ""  # blanks after the last word, written only if the next word fits after them
        self._word = ""
        self.at_line_start = True

    def feed(self, text: str) -> None:
        self._write(self._wrap(self._clean.feed(text)))

    def end(self) -> None:
        out = self._wrap(self._clean.flush()) + self._place()
        if self._col:
            out += "\n"
        self._col, self._spaces = 0, ""
        self._write(out)
        self.at_line_start = True

    def _write(self, text: str) -> None:
        if text:
            self.out.write(text)
            self.out.flush()
            self.at_line_start = self._col == 0 and not self._word

    def _wrap(self, text: str) -> str:
        out: list[str] = []
        for c in text:
            if c == "\n":
                out.append(self._place() + "\n")
                self._col, self._spaces = 0, ""
            elif c in " \t":
                out.append(self._place())
                self._spaces += c
            else:
                self._word += c
        return "".join(out)

    def _place(self) -> str:
        """Write the pending word: after its spaces if it fits on this line, else on the next one."""
        if not self._word:
            return ""
        width = max(10, self.width())
        word, self._word = self._word, ""
        spaces = _expand(self._spaces, self._col)
        out = ""
        if self._col and self._col + len(spaces) + cell_len(word) > width:
            out, self._col = "\n", 0
        elif spaces:
            out, self._col = spaces, self._col + len(spaces)
        self._spaces = ""
        while self._col + cell_len(word) > width:
            room = max(1, width - self._col)
            out += word[:room] + "\n"
            word, self._col = word[room:], 0
        self._col += cell_len(word)
        return out + word


def _expand(spaces: str, col: int) -> str:
    out = ""
    for c in spaces:
        out += " " * (TAB - (col + len(out)) % TAB) if c == "\t" else c
    return out


class Blocks:
    """Cuts streamed Markdown into complete top-level blocks: paragraphs at their blank line, code
    fences at their closing fence, headings at their end. A list waits for the next line after a blank
    one: if it is indented, the list goes on (a loose item's second paragraph)."""

    def __init__(self) -> None:
        self._lines: list[str] = []
        self._partial = ""
        self._fence: str | None = None
        self._blank = False  # a blank line ended the list being held

    def feed(self, text: str) -> list[str]:
        self._partial += text
        *complete, self._partial = self._partial.split("\n")
        out: list[str] = []
        for line in complete:
            out += self._line(line)
        return out

    def rest(self) -> list[str]:
        """The blocks left (the last one maybe unfinished); the splitter starts afresh."""
        out = self._line(self._partial) if self._partial else []
        out += self._cut()
        self._partial, self._fence = "", None
        return out

    def _cut(self) -> list[str]:
        block, self._lines, self._blank = "\n".join(self._lines), [], False
        return [block] if block.strip() else []

    def _line(self, line: str) -> list[str]:
        if self._fence is not None:
            self._lines.append(line)
            stripped = line.strip()
            if stripped.startswith(self._fence) and not stripped.strip(self._fence[0]):
                self._fence = None
                return self._cut()
            return []
        if not line.strip():
            if self._lines and _LIST_ITEM.match(self._lines[0]):
                self._blank = True  # the list may go on
                return []
            return self._cut()
        out: list[str] = []
        if self._blank:
            if line[:1] in (" ", "\t") or _LIST_ITEM.match(line):
                self._lines.append("")
                self._blank = False
            else:
                out = self._cut()
        fence = _FENCE.match(line)
        if fence is not None:
            out += self._cut()
            self._fence = fence.group(1)
            self._lines.append(line)
            return out
        if _HEADING.match(line):
            out += self._cut()
            self._lines.append(line)
            return out + self._cut()
        self._lines.append(line)
        return out


class MarkdownAnswer:
    """The answer as Markdown, printed a block at a time on `console` (a SafeConsole)."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self._blocks = Blocks()
        self._printed = False  # a block of this answer is on the screen: the next one gets a blank line
        self.at_line_start = True

    def feed(self, text: str) -> None:
        for block in self._blocks.feed(text):
            self._print(block)

    def end(self) -> None:
        for block in self._blocks.rest():
            self._print(block)
        self._printed = False

    def _print(self, block: str) -> None:
        if self._printed:
            self.console.print()
        self.console.print(Markdown(sanitize(block), code_theme=CODE_THEME, hyperlinks=False))
        self._printed = True
