"""A server answer's Content-Encoding undone layer by layer, every layer's output counted as it comes.

httpx inflates each network chunk whole, through every layer in turn: with `gzip, gzip` a chunk of a
few KB becomes a megabyte of gzip, then a gigabyte, before anything counts it. Here the raw bytes
(`iter_raw`) go through one zlib decompressor per layer, each asked for at most `STEP` bytes at a time
(`decompress(data, max_length)`, the rest kept as its `unconsumed_tail`), and `spend` counts every
piece a layer makes before the next layer inflates it further. Memory stays at a few steps per layer
however the layers are stacked, and a bomb ends at the first layer whose output passes the budget.
Codings are those httpx decodes here (gzip, deflate, identity); another is passed through, as httpx does.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterable, Iterator

import httpx

from aforo.errors import ProtocolError, ServerLimitExceeded
from aforo.limits import CONTENT_ENCODINGS, KiB

# The most one decompress call may make: what a layer holds at once, whatever one chunk inflates to.
STEP = 64 * KiB

# zlib's window bits: a gzip header, or a zlib one (deflate as RFC 9110 means it).
_WBITS = {"gzip": zlib.MAX_WBITS | 16, "deflate": zlib.MAX_WBITS}


def decoded(response: httpx.Response, url: str, spend: Callable[[int], None]) -> Iterator[bytes]:
    """The body of `response` with its Content-Encoding undone, in pieces of at most `STEP` bytes
    (or as they came, without one); `spend` is called with the size of each piece of every layer,
    the last one included, before anything reads it, and raises to stop."""
    codings = layers(response, url)
    chunks: Iterable[bytes] = response.iter_raw()
    if not codings:
        return _counted(chunks, spend)
    # Encodings are listed in the order they were applied: undo the last first.
    for coding in reversed(codings):
        chunks = _counted(_Inflater(coding, url).inflate(chunks), spend)
    return iter(chunks)


def layers(response: httpx.Response, url: str) -> list[str]:
    """The codings of the answer's Content-Encoding that aforo undoes, within the limit."""
    values = (value.strip().lower() for value in response.headers.get_list("content-encoding", True))
    codings = [value for value in values if value in _WBITS]
    most = int(CONTENT_ENCODINGS.value)
    if len(codings) > most:
        raise ServerLimitExceeded(
            CONTENT_ENCODINGS, f"{url} encoded its answer {len(codings)} times ({', '.join(codings)[:200]})"
        )
    return codings


def _counted(chunks: Iterable[bytes], spend: Callable[[int], None]) -> Iterator[bytes]:
    for chunk in chunks:
        spend(len(chunk))
        yield chunk


class _Inflater:
    """One layer: its decompressor, and for deflate the raw form some servers send instead (as httpx
    tries it when the first bytes are not a zlib header)."""

    def __init__(self, coding: str, url: str) -> None:
        self._coding = coding
        self._url = url
        self._zlib = zlib.decompressobj(_WBITS[coding])
        self._may_be_raw = coding == "deflate"

    def inflate(self, chunks: Iterable[bytes]) -> Iterator[bytes]:
        for chunk in chunks:
            yield from self._pieces(chunk)
        # What zlib still holds once the input has ended.
        yield from self._pieces(b"")

    def _pieces(self, data: bytes) -> Iterator[bytes]:
        while True:
            piece = self._decompress(data)
            data = self._zlib.unconsumed_tail
            if piece:
                yield piece
            # Less than a full step with nothing left over: this input is spent. An empty piece
            # means zlib makes no progress (the stream has ended; httpx ignores what follows too).
            if not piece or (len(piece) < STEP and not data):
                return

    def _decompress(self, data: bytes) -> bytes:
        try:
            piece = self._zlib.decompress(data, STEP)
        except zlib.error as exc:
            if not self._may_be_raw:
                raise ProtocolError(
                    f"{self._url} sent an answer that is not valid {self._coding} ({exc}), "
                    "as its Content-Encoding says"
                ) from exc
            self._may_be_raw = False
            self._zlib = zlib.decompressobj(-zlib.MAX_WBITS)
            return self._decompress(data)
        self._may_be_raw = False
        return piece
