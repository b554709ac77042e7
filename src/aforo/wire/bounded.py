"""Reading what a server sends within the named limits of `aforo.limits`, never more.

httpx reads a streamed line, or a body, whole before handing it over, however long it is: a line with no
newline, or a small gzip body that inflates to gigabytes, fills memory. Here bytes come from our own
streaming decode (`inflate.decoded`: every Content-Encoding layer counted as it inflates, in small
steps) and are counted as they arrive: one answer has a byte budget and a deadline (`AnswerBudget`),
a body read whole a byte limit (`read_body`); one line has its own (`wire.lines`). Going past one raises
`ServerLimitExceeded` naming it, which the agent reports like any failed request: a clear message,
never a traceback.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator

import httpx

from aforo.errors import ServerLimitExceeded
from aforo.limits import (
    ANSWER_BYTES,
    ANSWER_TIMEOUT,
    READ_TIMEOUT,
    RESPONSE_BYTES,
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
