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
from collections.abc import Iterable, Iterator
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
from aforo.wire.inflate import decoded


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

    def __init__(self, url: str, max_tokens: int, timeout: float) -> None:
        self.url = url
        self.max_tokens = max_tokens
        self.max_bytes = answer_bytes(max_tokens)
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


def lines(chunks: Iterable[bytes], url: str, limit: Limit = STREAM_LINE_BYTES) -> Iterator[str]:
    """The lines of a byte stream (`\\n` or `\\r\\n`), decoded as UTF-8, each at most `limit` bytes.

    A run of blank lines comes out as one: it means no more than one, in SSE (an event ends) as in
    NDJSON (nothing), and a stream of newlines then costs no more than its bytes. A last line without
    a newline is yielded too: a caller that needs the newline (SSE) knows it."""
    most = int(limit.value)
    pending = bytearray()  # the start of a line whose newline has not come yet
    blank = False
    for chunk in chunks:
        parts = chunk.split(b"\n")
        pending += parts[0]
        _check_line(len(pending), most, url, limit)
        if len(parts) == 1:
            continue
        # Complete lines: what was pending, then every part but the last, which starts the next line.
        for line in (bytes(pending), *parts[1:-1]):
            line = line.removesuffix(b"\r")
            if not line:
                if not blank:
                    blank = True
                    yield ""
                continue
            _check_line(len(line), most, url, limit)
            blank = False
            yield line.decode("utf-8", "replace")
        pending = bytearray(parts[-1])
        _check_line(len(pending), most, url, limit)
    last = pending.removesuffix(b"\r")
    if last or (pending and not blank):
        yield last.decode("utf-8", "replace")


def _check_line(size: int, most: int, url: str, limit: Limit) -> None:
    if size > most:
        raise ServerLimitExceeded(limit, f"{url} sent a line of more than {most:,} bytes without a newline")


def sse_data(lines: Iterable[str]) -> Iterator[str]:
    """The `data` of each event of a server-sent event stream, its lines joined by `\\n`.

    The field rules of the SSE spec (html.spec.whatwg.org, "event stream interpretation"), written here
    because httpx-sse parses only from a response it reads itself, line by unbounded line. Other fields
    (event, id, retry) say nothing a chat stream needs; an event without the blank line that ends it is
    dropped, as the spec says.
    """
    data: list[str] = []
    for line in lines:
        if not line:
            if data:
                yield "\n".join(data)
                data = []
            continue
        name, _, value = line.partition(":")
        if name == "data":
            data.append(value.removeprefix(" "))


def read_body(
    response: httpx.Response, url: str, *, budget: AnswerBudget | None = None, limit: Limit = RESPONSE_BYTES
) -> str:
    """The whole (decoded) body of a streamed `response`, within `budget` or else `limit` bytes."""
    most = int(limit.value)
    size = 0

    def spend(n: int) -> None:
        nonlocal size
        size += n
        if size > most:
            raise ServerLimitExceeded(limit, f"the answer from {url} went past {most:,} bytes")

    # Each decoding layer counts against the limit, so the body kept is within it too.
    chunks = decoded(response, url, spend) if budget is None else budget.metered(response)
    return b"".join(chunks).decode(response.encoding or "utf-8", "replace")


def server_json(text: str, what: str) -> Any:
    """JSON a server sent, parsed within the `json_depth` limit; ValueError when it is not JSON. An
    integer past `json_integer` is read as its digits (a str), which no count takes (`usage_count`)."""
    return safejson.loads(text, what, JSON_DEPTH, ServerLimitExceeded, large_as_text=True)
