"""Read: a text file with line numbers, a window of it at a time.

Not every line carries its number: a number before every line costs 25-45 % more tokens than the file
itself (measured on this repository's code with Qwen2.5-Coder's tokenizer: `{n:>6}\t` +45 %, `{n}\t`
+25 %), and the tool result is the largest thing in a small window. The window's first line is numbered,
then each line where a block starts (the first after a blank one: a `def`, a `class`, a paragraph) and
at least every `NUMBER_EVERY` lines, which costs +4 %; a line between two numbers is counted from the
one above it.

A whole Python file starts with its top-level functions and classes, named and counted
(`tools/outline.py`): a small model can neither count them nor pick them out, and the tool can. A file
too long for one result is shown as its outline and the lines the question names (`tools/long_file.py`);
`file_path` may name lines or a definition, and a name that is no file is looked up
(`tools/read_target.py`).

Only what is shown is decoded. The lines before `offset` are skipped by counting newlines in large
chunks, and the lines after the window are counted the same way, to tell the model how to read on.
Each shown line is read with a byte limit, so one 1 GB line costs only what is shown. Everything one
call reads is bounded by `read_bytes` (an offset past it is an error; a count that reaches it says "at
least") and every chunk looks at the call's deadline and cancel event. Only regular files are opened:
a FIFO or a device would block or never end.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Callable, Iterator
from pathlib import PurePosixPath
from typing import Any, BinaryIO

from aforo.errors import LimitExceeded, ToolError
from aforo.headings import FILE_LINES, FILE_RANGE, Heading, line_count
from aforo.limits import READ_BYTES, SYMBOL_FILE_BYTES
from aforo.messages import ToolSpec, object_schema
from aforo.protocols import ToolContext, ToolOutput
from aforo.tools import long_file
from aforo.tools.deadline import check
from aforo.tools.outline import PART, outline
from aforo.tools.read_target import Locator, Target, definition, named, not_found
from aforo.tools.symbol_cache import SymbolCache
from aforo.tools.symbols import cache_for
from aforo.tools.syntax import is_python
from aforo.tools.workspace import open_regular, relative, resolve, root_of

DEFAULT_LIMIT = 2000
# A whole Python file past this many caps is shown as its outline; one not much longer than the cap
# loses less to the cut (its head and tail kept, a third of it gone at most) than to an outline.
OUTLINE_PAST = 1.5
NUMBER_EVERY = 10
_LOOKS_NUMBERED = re.compile(r"\d+\t")
MAX_LINE_CHARS = 2000
_MAX_LINE_BYTES = MAX_LINE_CHARS * 4  # enough bytes for MAX_LINE_CHARS characters of UTF-8
_SNIFF_BYTES = 8192
_PYTHON = {".py", ".pyi"}
_CHUNK = 1 << 20
# The line a whole Python file starts with: `(3 functions: a, b, c; 1 class: C)`.
OUTLINE = Heading("({defines})", defines=PART.pattern())  # its names take the parts after the first


class Read:
    spec = ToolSpec(
        "Read",
        "Read files with line numbers. For part of a file: path:N-M (lines N to M), path:N, path#Name "
        "(one definition), or offset and limit.",
        object_schema(
            {
                "file_path": {
                    "type": "string",
                    "minLength": 1,
                    "description": "Path relative to the workspace, e.g. a.py, a.py:10-30 or a.py#parse.",
                },
                # 0 is taken as the first line too: small models count from 0 (Qwen2.5-Coder 0.5B sent
                # offset 0 for the start of a file, and an error there left it asking again).
                "offset": {"type": "integer", "minimum": 0, "description": "First line (1-based)."},
                "limit": {"type": "integer", "minimum": 1, "description": "Number of lines."},
            },
            required=["file_path"],
        ),
        batch=True,
    )

    def __init__(
        self,
        default_limit: int = DEFAULT_LIMIT,
        max_bytes: int = int(READ_BYTES.value),
        symbols: SymbolCache | None = None,
    ):
        """`symbols`: the workspace's symbol cache (`path#Name`, and where a name that is no file is)."""
        self.default_limit = default_limit
        self.max_bytes = max_bytes
        self.symbols = symbols

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        root = root_of(ctx.workspace)
        symbols = cache_for(self.symbols, root)
        spelled = str(args["file_path"])
        target = named(Locator(ctx), spelled)
        if target is None:
            raise ToolError(not_found(symbols, relative(root, resolve(ctx.workspace, spelled)), ctx))
        path = target.path
        shown_path = relative(root, path)
        if target.symbol is not None:
            target = definition(symbols, target, shown_path, ctx)
        output = self._read(args, ctx, target, shown_path)
        if "/" not in target.spelled and "/" in shown_path:
            # Found by its name alone: say where, so the model cites the right path.
            return dataclasses.replace(
                output, content=f"({target.spelled} is {shown_path})\n{output.content}"
            )
        return output

    def _read(self, args: dict[str, Any], ctx: ToolContext, target: Target, shown_path: str) -> ToolOutput:
        path = target.path
        given_offset, given_limit = args.get("offset") or target.first, args.get("limit") or target.count
        offset = int(given_offset or 1)
        limit = int(given_limit or self.default_limit)
        with open_regular(path, shown_path) as f:
            head = f.read(_SNIFF_BYTES)
            size = os.fstat(f.fileno()).st_size
            if b"\0" in head:
                raise ToolError(f"{shown_path} is a binary file ({size} bytes); Read only shows text files")
            f.seek(0)
            if not given_offset and not given_limit and (long := _long(f, size, shown_path, ctx)):
                return long
            source = _Source(f, self.max_bytes, ctx)
            passed, tail = _skip(source, offset - 1)
            if passed < offset - 1:
                if source.exhausted:
                    cap = dataclasses.replace(READ_BYTES, value=self.max_bytes)
                    raise LimitExceeded(
                        cap,
                        f"line {offset:,} of {shown_path} is out of reach (Grep with `context` shows lines "
                        "anywhere in a file)",
                    )
                return _past_end(shown_path, passed + int(tail), offset)
            return _render(source, shown_path, offset, limit, ctx.max_chars)


def _long(f: BinaryIO, size: int, shown_path: str, ctx: ToolContext) -> ToolOutput | None:
    """A file too long for one result, as what it defines (Python) and the lines the question names; None
    when there is nothing to show but its head (then read from the start, `f` rewound)."""
    cap = ctx.max_chars
    if not cap or not cap * OUTLINE_PAST < size <= SYMBOL_FILE_BYTES.value:
        return None
    view = long_file.view if is_python(shown_path) else long_file.text_view
    shown = view(shown_path, f.read().decode("utf-8", errors="replace"), ctx.question, cap)
    f.seek(0)
    if shown is None:
        return None
    text, facts = shown
    return ToolOutput(text, facts=facts)


class _Source:
    """The file, read through one budget of bytes and one look at the deadline per read."""

    def __init__(self, f: BinaryIO, max_bytes: int, ctx: ToolContext) -> None:
        self._f = f
        self._left = max_bytes
        self._ctx = ctx
        self.exhausted = False  # the budget ran out before the end of the file

    def read(self, size: int) -> bytes:
        return self._take(self._f.read, size)

    def readline(self, size: int) -> bytes:
        return self._take(self._f.readline, size)

    def seek_back(self, count: int) -> None:
        """Give back the last `count` bytes read, to be read again."""
        self._f.seek(-count, os.SEEK_CUR)
        self._left += count

    def _take(self, read: Callable[[int], bytes], size: int) -> bytes:
        check(self._ctx)
        if self._left <= 0:
            self.exhausted = self.exhausted or self._f.read(1) != b""
            return b""
        data = read(min(size, self._left))
        self._left -= len(data)
        return data


def _skip(source: _Source, lines: int) -> tuple[int, bool]:
    """Move past the first `lines` newlines: (newlines passed, whether a line without one follows them).

    Fewer are passed when the file (or the budget) ends first."""
    passed, tail = 0, False
    while passed < lines and (chunk := source.read(_CHUNK)):
        found = chunk.count(b"\n")
        if passed + found < lines:
            passed += found
            tail = not chunk.endswith(b"\n")
            continue
        source.seek_back(len(chunk) - _after_newline(chunk, lines - passed))
        return lines, False
    return passed, tail


def _after_newline(chunk: bytes, n: int) -> int:
    """The position just after the n-th newline of `chunk` (which has at least n)."""
    # Bisect on counts, not a find() per newline: a chunk of a million empty lines takes ~20 counts.
    low, high = n, len(chunk)
    while low < high:
        mid = (low + high) // 2
        if chunk.count(b"\n", 0, mid) >= n:
            high = mid
        else:
            low = mid + 1
    return low


def _past_end(shown_path: str, total: int, offset: int) -> ToolOutput:
    if total == 0:
        return ToolOutput(f"{shown_path} is empty (0 lines).")
    return ToolOutput(f"{shown_path} has {total} lines; offset {offset} is past the end.")


def _render(source: _Source, shown_path: str, offset: int, limit: int, max_chars: int | None) -> ToolOutput:
    budget = 2 * max_chars if max_chars else None
    out: list[str] = []
    # A Python file's lines as they are, to say what it defines when the whole of it is shown.
    code: list[str] | None = [] if PurePosixPath(shown_path).suffix in _PYTHON else None
    size = 0
    invalid_utf8 = False
    last = offset - 1  # the last line read
    numbered, after_blank = offset - NUMBER_EVERY, True  # the last line shown with its number
    for last, (raw, dropped) in enumerate(_lines(source), start=offset):
        text, bad = _decode(raw, cut=dropped > 0)
        invalid_utf8 |= bad
        if dropped or len(text) > MAX_LINE_CHARS:
            text = text[:MAX_LINE_CHARS] + " … [line cut: too long]"
            code = None
        if code is not None:
            code.append(text)
        blank = not text.strip()
        entry = text
        block = not blank and (after_blank or last - numbered >= NUMBER_EVERY)
        if last == offset or block or _LOOKS_NUMBERED.match(text):
            entry, numbered = f"{last}\t{text}", last
        after_blank = blank
        out.append(entry)
        size += len(entry) + 1
        if last - offset + 1 >= limit or (budget is not None and size >= budget):
            break
    # Whatever is left after the last shown line is counted, not decoded.
    total, exact = _count_rest(source, last)
    if offset > total:
        return _past_end(shown_path, total, offset)
    notes = []
    facts = FILE_LINES(path=shown_path, count=line_count(total, exact))
    if invalid_utf8:
        notes.append("(note: the file is not valid UTF-8; undecodable bytes are shown as \ufffd)")
    if offset > 1 or last < total:
        of = f"{total}" if exact else f"at least {total}"
        hint = f" Use offset={last + 1} to read more." if last < total else ""
        notes.append(f"(showing lines {offset}-{last} of {of}.{hint})")
        facts = FILE_RANGE(path=shown_path, first=offset, last=last, total=of)
    elif code is not None and not invalid_utf8 and (defines := outline("\n".join(code))):
        # Before the lines, not after them: a small model answers with what it read last, and a count
        # there became the answer to other questions (asked how often the client retries, 0.5B
        # answered the `1` of "(defines 1 function)" instead of MAX_RETRIES = 4).
        out.insert(0, OUTLINE(defines=defines))
        facts += f"; {defines}"
    return ToolOutput("\n".join([*out, *notes]), facts=facts)


def _lines(source: _Source) -> Iterator[tuple[bytes, int]]:
    """Each line without its end-of-line, read at most _MAX_LINE_BYTES at a time, with the bytes dropped."""
    while head := source.readline(_MAX_LINE_BYTES):
        dropped = 0
        if head.endswith(b"\n"):
            head = head[:-1]
        else:
            # A line longer than the limit (or the last line without a newline): skip its rest.
            while rest := source.readline(_CHUNK):
                if rest.endswith(b"\n"):
                    dropped += len(rest) - 1
                    break
                dropped += len(rest)
        if head.endswith(b"\r") and not dropped:
            head = head[:-1]
        yield head, dropped


def _decode(raw: bytes, *, cut: bool) -> tuple[str, bool]:
    """The line as text, and whether it had invalid UTF-8 (a character split by our cut does not count)."""
    try:
        return raw.decode("utf-8"), False
    except UnicodeDecodeError as exc:
        if cut and exc.reason == "unexpected end of data":
            return _decode(raw[: exc.start], cut=False)
        return raw.decode("utf-8", errors="replace"), True


def _count_rest(source: _Source, counted: int) -> tuple[int, bool]:
    """Total line count given `counted` lines already read; (total, exact: the budget did not run out)."""
    partial = False  # the data after the last newline seen forms an unterminated line
    total = counted
    while chunk := source.read(_CHUNK):
        total += chunk.count(b"\n")
        partial = not chunk.endswith(b"\n")
    if source.exhausted:
        return total + 1, False
    return total + (1 if partial else 0), True
