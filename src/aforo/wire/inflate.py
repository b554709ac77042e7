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
from collections.abc import AsyncIterator, Callable, Iterator

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
    decoder = Decoder(layers(response, url), url, spend)
    for raw in response.iter_raw():
        yield from decoder.feed(raw)
    yield from decoder.flush()


async def decoded_async(
    response: httpx.Response, url: str, spend: Callable[[int], None]
) -> AsyncIterator[bytes]:
    """`decoded` for a body an async client reads."""
    decoder = Decoder(layers(response, url), url, spend)
    async for raw in response.aiter_raw():
        for piece in decoder.feed(raw):
            yield piece
    for piece in decoder.flush():
        yield piece


class Decoder:
    """The layers of one answer's encoding, fed raw bytes as they arrive (a sync or an async body
    alike) and giving back decoded pieces, each counted by `spend` at every layer."""

    def __init__(self, codings: list[str], url: str, spend: Callable[[int], None]) -> None:
        # Encodings are listed in the order they were applied: undo the last first.
        self._layers = [_Inflater(coding, url) for coding in reversed(codings)]
        self._spend = spend

    def feed(self, raw: bytes) -> Iterator[bytes]:
        return self._through(0, raw)

    def flush(self) -> Iterator[bytes]:
        """What the layers still hold once the body has ended, outer layer first."""
        for i, layer in enumerate(self._layers):
            for piece in layer.pieces(b""):
                self._spend(len(piece))
                yield from self._through(i + 1, piece)

    def _through(self, i: int, data: bytes) -> Iterator[bytes]:
        if i == len(self._layers):
            if not self._layers:
                self._spend(len(data))  # as it came: counted once, here
            yield data
            return
        for piece in self._layers[i].pieces(data):
            self._spend(len(piece))
            yield from self._through(i + 1, piece)


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


class _Inflater:
    """One layer: its decompressor, and for deflate the raw form some servers send instead (as httpx
    tries it when the first bytes are not a zlib header)."""

    def __init__(self, coding: str, url: str) -> None:
        self._coding = coding
        self._url = url
        self._zlib = zlib.decompressobj(_WBITS[coding])
        self._may_be_raw = coding == "deflate"

    def pieces(self, data: bytes) -> Iterator[bytes]:
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
