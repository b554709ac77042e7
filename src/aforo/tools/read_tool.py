"""Read: a text file with line numbers, a window of it at a time.

The file is streamed line by line and each line is read with a byte limit, so a 1 GB file (or one
1 GB line) costs only what is shown. Only regular files are opened: a FIFO or a device would block
or never end. The total line count, needed to tell the model how to read on, is counted in chunks
up to a scan limit; past it the answer says "at least".
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

from aforo.errors import ToolError
from aforo.protocols import ToolContext, ToolOutput
from aforo.tools.workspace import relative, resolve, root_of

DEFAULT_LIMIT = 2000
MAX_LINE_CHARS = 2000
_MAX_LINE_BYTES = MAX_LINE_CHARS * 4  # enough bytes for MAX_LINE_CHARS characters of UTF-8
_SNIFF_BYTES = 8192
_CHUNK = 1 << 20
_COUNT_SCAN_LIMIT = 128 << 20

READ_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "file_path": {
            "type": "string",
            "minLength": 1,
            "description": "Path relative to the workspace.",
        },
        "offset": {
            "type": "integer",
            "minimum": 1,
            "description": "First line (1-based).",
        },
        "limit": {
            "type": "integer",
            "minimum": 1,
            "description": "Number of lines.",
        },
    },
    "required": ["file_path"],
    "additionalProperties": False,
}


class Read:
    name = "Read"
    description = "Read a text file with line numbers. For long files pass offset (first line) and limit."

    def __init__(self, default_limit: int = DEFAULT_LIMIT):
        self.default_limit = default_limit
        self.input_schema = READ_SCHEMA

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        root = root_of(ctx.workspace)
        path = resolve(ctx.workspace, str(args["file_path"]))
        shown_path = relative(root, path)
        offset = int(args.get("offset") or 1)
        limit = int(args.get("limit") or self.default_limit)
        with _open_regular(path, shown_path) as f:
            head = f.read(_SNIFF_BYTES)
            if b"\0" in head:
                size = os.fstat(f.fileno()).st_size
                raise ToolError(f"{shown_path} is a binary file ({size} bytes); Read only shows text files")
            f.seek(0)
            return _render(f, shown_path, offset, limit, ctx.max_chars)


def _open_regular(path: Path, shown: str) -> BinaryIO:
    """Open `path` for reading only if it is a regular file, never blocking."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise ToolError(f"{shown} does not exist; use Glob or LS to find the right path") from None
    except OSError as exc:
        raise ToolError(f"cannot access {shown}: {exc.strerror}") from exc
    if stat.S_ISDIR(mode):
        raise ToolError(f"{shown} is a directory, not a file; use LS to list it or Glob to find files in it")
    if not stat.S_ISREG(mode):
        raise ToolError(f"{shown} is not a regular file ({_kind(mode)}); Read only reads regular files")
    # O_NONBLOCK and the fstat below close the race of the file being swapped for a FIFO after
    # the stat; O_NOFOLLOW refuses a symlink planted after resolve() checked the path.
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise ToolError(f"cannot open {shown}: {exc.strerror}") from exc
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise ToolError(f"{shown} is not a regular file; Read only reads regular files")
    return os.fdopen(fd, "rb")


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a file"


def _render(f: BinaryIO, shown_path: str, offset: int, limit: int, max_chars: int | None) -> ToolOutput:
    budget = 2 * max_chars if max_chars else None
    out: list[str] = []
    size = 0
    invalid_utf8 = False
    last = offset - 1  # the last line shown
    seen = 0
    lines = _lines(f)
    for seen, (raw, dropped) in enumerate(lines, start=1):
        if seen < offset:
            continue
        text, bad = _decode(raw, cut=dropped > 0)
        invalid_utf8 |= bad
        if dropped or len(text) > MAX_LINE_CHARS:
            text = text[:MAX_LINE_CHARS] + " … [line cut: too long]"
        entry = f"{seen:>6}\t{text}"
        out.append(entry)
        size += len(entry) + 1
        last = seen
        if seen - offset + 1 >= limit or (budget is not None and size >= budget):
            break
    # Whatever is left after the last shown line is counted, not decoded.
    total, exact = _count_rest(f, seen)

    if total == 0:
        return ToolOutput(f"{shown_path} is empty (0 lines).")
    if offset > total:
        return ToolOutput(f"{shown_path} has {total} lines; offset {offset} is past the end.")
    notes = []
    if invalid_utf8:
        notes.append("(note: the file is not valid UTF-8; undecodable bytes are shown as \ufffd)")
    if offset > 1 or last < total:
        of = f"{total}" if exact else f"at least {total}"
        hint = f" Use offset={last + 1} to read more." if last < total else ""
        notes.append(f"(showing lines {offset}-{last} of {of}.{hint})")
    return ToolOutput("\n".join([*out, *notes]))


def _lines(f: BinaryIO) -> Iterator[tuple[bytes, int]]:
    """Each line without its end-of-line, read at most _MAX_LINE_BYTES at a time, with the bytes dropped."""
    while head := f.readline(_MAX_LINE_BYTES):
        dropped = 0
        if head.endswith(b"\n"):
            head = head[:-1]
        else:
            # A line longer than the limit (or the last line without a newline): skip its rest.
            while rest := f.readline(_CHUNK):
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


def _count_rest(f: BinaryIO, counted: int) -> tuple[int, bool]:
    """Total line count given `counted` lines already read; (total, exact). Stops at the scan limit."""
    scanned = 0
    partial = False  # the data after the last newline seen forms an unterminated line
    total = counted
    while chunk := f.read(_CHUNK):
        total += chunk.count(b"\n")
        partial = not chunk.endswith(b"\n")
        scanned += len(chunk)
        if scanned >= _COUNT_SCAN_LIMIT:
            return total + 1, False
    return total + (1 if partial else 0), True
