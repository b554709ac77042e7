"""A server's byte stream cut into lines, and an event stream's events: each line within the
`stream_line_bytes` limit however the bytes are chunked (`Lines`), the same rules for a sync body and
an async one; an SSE stream's `data` by the spec's field rules (`SseEvents`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from aforo.errors import ServerLimitExceeded
from aforo.limits import STREAM_LINE_BYTES, Limit


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
