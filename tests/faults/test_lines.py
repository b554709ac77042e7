"""The bounded line reader: the same lines however the bytes are chunked, and never a longer one."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aforo.errors import ServerLimitExceeded
from aforo.limits import Limit
from aforo.wire.lines import lines, sse_data

TINY = Limit("stream_line_bytes", 8, "bytes", "a test line")


def reference(data: bytes) -> list[str]:
    """Split on \\n, drop a \\r before it, keep a last unterminated line, fold runs of blank lines."""
    pieces = data.split(b"\n")
    if pieces[-1] == b"":
        pieces.pop()
    out: list[str] = []
    for piece in pieces:
        text = piece.removesuffix(b"\r").decode("utf-8", "replace")
        if not (text == "" and out and out[-1] == ""):
            out.append(text)
    return out


def chunked(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts} | {0, len(data)})
    return [data[a:b] for a, b in itertools.pairwise(points)]


@given(
    st.lists(st.sampled_from([b"a", b"bc", b"\n", b"\r\n", b"\r", b"\xe9", b"data: x"]), max_size=40),
    st.lists(st.integers(min_value=0, max_value=400), max_size=10),
)
def test_lines_do_not_depend_on_how_the_bytes_are_chunked(parts: list[bytes], cuts: list[int]) -> None:
    data = b"".join(parts)
    assert list(lines(chunked(data, cuts), "http://x")) == reference(data)


def test_a_line_longer_than_the_limit_is_refused_even_across_chunks() -> None:
    with pytest.raises(ServerLimitExceeded) as caught:
        list(lines([b"ok\n12345", b"6789\n"], "http://x", TINY))
    assert caught.value.limit is TINY


def test_a_line_at_the_limit_passes() -> None:
    assert list(lines([b"1234", b"5678\n"], "http://x", TINY)) == ["12345678"]


def test_sse_events_join_their_data_lines_and_ignore_other_fields() -> None:
    stream = ["event: x", "data: a", "data:b", ": comment", "id: 3", "", "data: c", ""]
    assert list(sse_data(stream)) == ["a\nb", "c"]


def test_an_sse_event_without_its_blank_line_is_dropped() -> None:
    assert list(sse_data(["data: a", "", "data: never ended"])) == ["a"]
