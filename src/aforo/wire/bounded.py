"""Reading what a server sends within the named limits of `aforo.limits`, never more.

httpx reads a streamed line, or a body, whole before handing it over, however long it is: a line with no
newline, or a small gzip body that inflates to gigabytes, fills memory. Here bytes come from our own
streaming decode (`inflate.decoded`: every Content-Encoding layer counted as it inflates, in small
steps) and are counted as they arrive: one answer has a byte budget and a deadline (`AnswerBudget`),
one line a byte limit (`lines`), a body read whole a byte limit (`read_body`). Going past one raises
`ServerLimitExceeded` naming it, which the agent reports like any failed request: a clear message,
never a traceback.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import AsyncIterator, Iterable, Iterator
from typing import Any

import httpx

from aforo import safejson
from aforo.errors import ServerLimitExceeded
from aforo.limits import (
    ANSWER_BYTES,
    ANSWER_TIMEOUT,
    JSON_DEPTH,
    READ_TIMEOUT,
    RESPONSE_BYTES,
    STREAM_LINE_BYTES,
    Limit,
    answer_bytes,
)
from aforo.wire.inflate import decoded, decoded_async


@dataclasses.dataclass(frozen=True)
class Deadlines:
    """How long a server may stay silent while it answers (`read`), take for one answer in all
    (`answer`), and take to accept a connection: the user's settings, one value per provider."""

    read: float = READ_TIMEOUT.value
    answer: float = ANSWER_TIMEOUT.value
    connect: float = 10

    def client(
        self, headers: dict[str, str] | None = None, auth: httpx.BasicAuth | None = None
    ) -> httpx.Client:
        # The server may be silent for the read timeout, but not past the answer's deadline.
        return httpx.Client(
            timeout=httpx.Timeout(min(self.read, self.answer), connect=self.connect),
            headers=headers,
            auth=auth,
        )

    def budget(self, url: str, max_tokens: int) -> AnswerBudget:
        return AnswerBudget(url, max_tokens, self.answer)


# Frozen, so one value serves every provider built without settings of its own.
DEFAULT_DEADLINES = Deadlines()


class AnswerBudget:
    """The bytes and the seconds one answer may take, counted from the request on."""

    def __init__(self, url: str, max_tokens: int, timeout: float, cap: Limit | None = None) -> None:
        self.url = url
        self.max_tokens = max_tokens
        self.max_bytes = answer_bytes(max_tokens)
        # A cap of bytes whatever max_tokens asks (one the caller does not choose): the smaller holds.
        self.cap = cap if cap is not None and int(cap.value) < self.max_bytes else None
        if self.cap is not None:
            self.max_bytes = int(self.cap.value)
        self.timeout = timeout
        self.deadline = time.monotonic() + timeout
        self.spent = 0

    def remaining(self) -> float:
        return max(0.0, self.deadline - time.monotonic())

    def expired(self) -> bool:
        return time.monotonic() >= self.deadline

    def spend(self, n: int) -> None:
        """Count `n` more bytes; raise when the answer went past its bytes or its time."""
        self.spent += n
        if self.spent > self.max_bytes and self.cap is not None:
            raise ServerLimitExceeded(
                self.cap,
                f"the answer from {self.url} went past {self.max_bytes:,} bytes, the most one answer may "
                f"hold whatever max_tokens asks ({self.max_tokens:,})",
            )
        if self.spent > self.max_bytes:
            raise ServerLimitExceeded(
                ANSWER_BYTES,
                f"the answer from {self.url} went past {self.max_bytes:,} bytes (max_tokens "
                f"{self.max_tokens}): a stream that does not stop, or far more than the tokens it may hold",
            )
        if self.expired():
            raise self.timeout_error()

    def timeout_error(self) -> ServerLimitExceeded:
        limit = dataclasses.replace(ANSWER_TIMEOUT, value=self.timeout)
        return ServerLimitExceeded(
            limit,
            f"the answer from {self.url} did not end within {self.timeout:g} s",
        )

    def metered(self, response: httpx.Response) -> Iterator[bytes]:
        """The decoded body of `response`, every byte any decoding layer makes counted before it is
        passed on (or inflated further)."""
        return decoded(response, self.url, self.spend)


def lines(chunks: Iterable[bytes], url: str, limit: Limit | None = None) -> Iterator[str]:
    """The lines of a byte stream (`Lines`), for a body read in order."""
    split = Lines(url, limit)
    for chunk in chunks:
        yield from split.feed(chunk)
    yield from split.close()


class Lines:
    """A byte stream cut into lines (`\\n` or `\\r\\n`), decoded as UTF-8, each at most `limit` bytes;
    fed as the bytes arrive, so a sync body and an async one are read by the same rules.

    A run of blank lines comes out as one: it means no more than one, in SSE (an event ends) as in
    NDJSON (nothing), and a stream of newlines then costs no more than its bytes. A last line without
    a newline comes out at `close` too: a caller that needs the newline (SSE) knows it."""

    def __init__(self, url: str, limit: Limit | None = None) -> None:
        self._limit = limit or STREAM_LINE_BYTES  # `stream_line_bytes` unless told
        self._url, self._most = url, int(self._limit.value)
        self._pending = bytearray()  # the start of a line whose newline has not come yet
        self._blank = False

    def feed(self, chunk: bytes) -> list[str]:
        parts = chunk.split(b"\n")
        self._pending += parts[0]
        self._check(len(self._pending))
        if len(parts) == 1:
            return []
        out: list[str] = []
        # Complete lines: what was pending, then every part but the last, which starts the next line.
        for line in (bytes(self._pending), *parts[1:-1]):
            line = line.removesuffix(b"\r")
            if not line:
                if not self._blank:
                    self._blank = True
                    out.append("")
                continue
            self._check(len(line))
            self._blank = False
            out.append(line.decode("utf-8", "replace"))
        self._pending = bytearray(parts[-1])
        self._check(len(self._pending))
        return out

    def close(self) -> list[str]:
        last = self._pending.removesuffix(b"\r")
        return [last.decode("utf-8", "replace")] if last or (self._pending and not self._blank) else []

    def _check(self, size: int) -> None:
        if size > self._most:
            raise ServerLimitExceeded(
                self._limit, f"{self._url} sent a line of more than {self._most:,} bytes without a newline"
            )


async def async_lines(response: httpx.Response, budget: AnswerBudget) -> AsyncIterator[str]:
    """The lines of a streamed `response` read by an async client, by `lines`' rules: every decoding
    layer counted against `budget`, each line within `stream_line_bytes`."""
    split = Lines(budget.url)
    async for piece in decoded_async(response, budget.url, budget.spend):
        for line in split.feed(piece):
            yield line
    for line in split.close():
        yield line


def sse_data(lines: Iterable[str]) -> Iterator[str]:
    """The `data` of each event of a server-sent event stream (`SseEvents`), for lines read in order."""
    events = SseEvents()
    for line in lines:
        data = events.feed(line)
        if data is not None:
            yield data


class SseEvents:
    """The `data` of each event of a server-sent event stream, its lines joined by `\\n`, fed a line at
    a time.

    The field rules of the SSE spec (html.spec.whatwg.org, "event stream interpretation"), written here
    because httpx-sse parses only from a response it reads itself, line by unbounded line. Other fields
    (event, id, retry) say nothing a chat stream needs; an event without the blank line that ends it is
    dropped, as the spec says.
    """

    def __init__(self) -> None:
        self._data: list[str] = []

    def feed(self, line: str) -> str | None:
        """The event's data when `line` ends one, else None."""
        if not line:
            data, self._data = self._data, []
            return "\n".join(data) if data else None
        name, _, value = line.partition(":")
        if name == "data":
            self._data.append(value.removeprefix(" "))
        return None


def read_body(
    response: httpx.Response, url: str, *, budget: AnswerBudget | None = None, limit: Limit = RESPONSE_BYTES
) -> str:
    """The whole (decoded) body of a streamed `response`, within `budget` or else `limit` bytes."""
    # Each decoding layer counts against the limit, so the body kept is within it too.
    chunks = decoded(response, url, _Spent(url, limit).spend) if budget is None else budget.metered(response)
    return b"".join(chunks).decode(response.encoding or "utf-8", "replace")


async def async_read_body(response: httpx.Response, url: str, limit: Limit = RESPONSE_BYTES) -> str:
    """`read_body` for an async client."""
    chunks = [piece async for piece in decoded_async(response, url, _Spent(url, limit).spend)]
    return b"".join(chunks).decode(response.encoding or "utf-8", "replace")


class _Spent:
    """The bytes of a body read whole, counted against its limit."""

    def __init__(self, url: str, limit: Limit) -> None:
        self._url, self._limit, self._size = url, limit, 0

    def spend(self, n: int) -> None:
        self._size += n
        most = int(self._limit.value)
        if self._size > most:
            raise ServerLimitExceeded(self._limit, f"the answer from {self._url} went past {most:,} bytes")


def server_json(text: str, what: str) -> Any:
    """JSON a server sent, parsed within the `json_depth` limit; ValueError when it is not JSON. An
    integer past `json_integer` is read as its digits (a str), which no count takes (`usage_count`)."""
    return safejson.loads(text, what, JSON_DEPTH, ServerLimitExceeded, large_as_text=True)
