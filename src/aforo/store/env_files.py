"""Values of `.env`-style files, whatever their key names: `MY_PLAIN_VALUE=hunter2hunter2` is a secret
when it comes from `.env`.

Where a text comes from is known in two ways: a Grep line names its file (`config/.env.local:3:KEY=v`,
or `…-3-…` for a context line), and a tool result answers a tool call whose input names the file (a
Read of `.env`), which the caller knows from the conversation. Text that comes from nowhere in
particular (a prompt, piped input, `cat .env`'s output, an answer quoting it) is judged by its shape: a
block of lines that all have the shape of a `.env` file's (`block_spans`) has its values redacted like
a `.env` file's. A value that cannot be a secret (empty, `true`, a short number, a `${VAR}` reference)
is kept: see `value_is_secret`.
"""

from __future__ import annotations

import bisect
import itertools
import re
from collections.abc import Iterator

from aforo.store.secret_keys import value_is_secret

ENV_KIND = "env-value"

# `.env`, `.env.local`, `.env.production`, `prod.env`, `.envrc`: a file name, never a directory's.
_ENV_NAME = r"(?:\.env(?:\.[^\n:/]*)?|\.envrc|[^\n:/]*\.env)"
_ENV_FILE_NAME = re.compile(_ENV_NAME)
# A Grep line of such a file. The directories are consumed possessively, one segment at a time, so a
# long line of slashes is scanned once rather than re-tried at every slash.
_GREP_ENV_LINE = re.compile(rf"^(?:[^\n:/]*+/)*+{_ENV_NAME}[:-]\d+[:-]", re.MULTILINE)
# Read's line number (`     3\t`, or a plain `3\t`).
_LINE_NUMBER = re.compile(r"[ \t]*\d+\t")
_ASSIGN = re.compile(r"[ \t]*(?:export[ \t]+)?(?P<key>[A-Za-z_][A-Za-z0-9_.-]*)[ \t]*=[ \t]*")

Span = tuple[int, int]


def is_env_file(path: str) -> bool:
    """Does `path` name a `.env`-style file?"""
    return bool(_ENV_FILE_NAME.fullmatch(path.rsplit("/", 1)[-1]))


def _value(text: str, pos: int, line_end: int, key: str) -> tuple[Span | None, int]:
    """The span of the value that starts at `pos` (or None), and where the next line starts.

    A quoted value that does not close on its line runs to its closing quote on a later line, as in
    dotenv's multi-line values (a key's PEM body, a certificate).
    """
    next_line = line_end + 1
    quote = text[pos : pos + 1]
    if quote in ('"', "'"):
        close = text.find(quote, pos + 1, line_end)
        if close < 0:
            close = text.find(quote, line_end)
            close = len(text) if close < 0 else close
            nl = text.find("\n", close)
            next_line = len(text) + 1 if nl < 0 else nl + 1
        start, end, bare = pos + 1, close, False
    else:
        start, end, bare = pos, line_end, True
        while end > start and text[end - 1] in " \t\r":
            end -= 1
    value = text[start:end]
    if value_is_secret(value, bare=bare, config_line=True, key=key, next_char=""):
        return (start, end), next_line
    return None, next_line


def _assignment_at(text: str, pos: int, line_end: int) -> tuple[Span | None, int]:
    m = _ASSIGN.match(text, pos, line_end)
    if m is None:
        return None, line_end + 1
    return _value(text, m.end(), line_end, m.group("key"))


def _line_end(text: str, pos: int) -> int:
    end = text.find("\n", pos)
    return len(text) if end < 0 else end


def grep_line_spans(text: str) -> Iterator[Span]:
    """Values on the Grep lines of `text` that come from a `.env`-style file."""
    for m in _GREP_ENV_LINE.finditer(text):
        span, _ = _assignment_at(text, m.end(), _line_end(text, m.end()))
        if span is not None:
            yield span


def file_spans(text: str) -> Iterator[Span]:
    """Every value in `text`, a `.env`-style file as a tool shows it (line numbers or not)."""
    pos = 0
    while pos < len(text):
        line_end = _line_end(text, pos)
        number = _LINE_NUMBER.match(text, pos, line_end)
        span, pos = _assignment_at(text, number.end() if number else pos, line_end)
        if span is not None:
            yield span


# The shape of a `.env` line wherever it appears: an UPPER_SNAKE key (optionally after `export`, or
# after Read's line number) and `=` right after it, as a shell or docker's env files write it. Python's
# `MAX_SIZE = 100` (spaces around `=`), `x=1` (lower case) and `A==B` are not of that shape; an empty
# value (`EMPTY=`) is.
_LEAD = r"[ \t]*(?:\d+\t)?"
_KEY = r"(?:export[ \t]+)?(?P<key>[A-Z][A-Z0-9_]*)=(?![= \t])"
_SHAPED = re.compile(_LEAD + _KEY)
# A block of `.env` shape: lines that are such assignments or `#` comments, and nothing else.
_LINE = _LEAD + r"(?:(?:export[ \t]+)?[A-Z][A-Z0-9_]*=(?![= \t])|[ \t]*#)[^\n]*+"
_ENV_BLOCK = re.compile(rf"(?:{_LINE}\n)*+{_LINE}")
# What ends a block: a blank line (Read numbers none) or a Markdown fence.
_SEPARATOR = re.compile("^" + _LEAD.replace("*", "*+", 1) + r"(?:[ \t\r]*+$|(?:```|~~~).*$)", re.MULTILINE)
# Where a block may start: a line starting like a `.env` assignment.
_CANDIDATE = re.compile("^" + _LEAD + r"(?:export[ \t]+)?[A-Z][A-Z0-9_]*=", re.MULTILINE)


def block_spans(text: str) -> Iterator[Span]:
    """The values of the `.env`-shaped blocks of `text`: runs of lines between blank lines, fences or
    the text's ends in which every line is a `KEY=value` line of `.env` shape or a `#` comment (at least
    one of them an assignment). A line of another shape, code or prose, makes its block ordinary text.

    Linear: the separators are found in one pass, each block holding a candidate line is matched once
    (possessively, so a block that fails is not re-tried line by line), and only the lines of blocks of
    `.env` shape are looked at one by one.
    """
    candidates = _CANDIDATE.finditer(text)
    first = next(candidates, None)
    if first is None:
        return
    separators = [(m.start(), m.end()) for m in _SEPARATOR.finditer(text)]
    starts = [start for start, _ in separators]
    done = 0  # candidates before this offset lie in a block already judged
    for m in itertools.chain((first,), candidates):
        if m.start() < done:
            continue
        i = bisect.bisect_right(starts, m.start())
        block_start = separators[i - 1][1] + 1 if i > 0 else 0
        block_end = separators[i][0] - 1 if i < len(separators) else len(text)
        done = block_end + 1
        if _ENV_BLOCK.fullmatch(text, block_start, max(block_start, block_end)) is None:
            continue
        pos = block_start
        while pos < block_end:
            line_end = _line_end(text, pos)
            shaped = _SHAPED.match(text, pos, line_end)
            if shaped is not None:
                span, _ = _value(text, shaped.end(), line_end, shaped.group("key"))
                if span is not None:
                    yield span
            pos = line_end + 1
