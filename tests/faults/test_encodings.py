"""A body encoded more than once (`Content-Encoding: gzip, gzip`) is inflated within the same budget.

httpx inflated each network chunk whole through every layer: a double-gzipped bomb of a few KB became
a megabyte of gzip, then a gigabyte, before the answer's budget counted a byte of it. Each test points
a real provider at a real server on 127.0.0.1 and checks the limit that ends the answer; the bombs'
memory is checked by tracemalloc (the bytes zlib makes are Python objects), never by timing.
"""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable, Iterator

import httpx
import pytest
from starlette.responses import Response

from aforo.cli.first_contact import unreachable
from aforo.cli.subcommands import _unreachable
from aforo.errors import ProtocolError, ServerLimitExceeded
from aforo.messages import Message, Request, StreamText
from aforo.providers.ollama import OllamaProvider
from aforo.providers.openai_compat import OpenAICompatProvider
from aforo.wire.http import get_json_quiet
from faults.server import (
    Behave,
    MiB,
    encoded,
    layered_bomb,
    misbehaving_app,
    ndjson,
    ok_sse,
    ollama_line,
    openai_chunk,
    sse,
)
from support.live_server import LiveServer

Provider = OpenAICompatProvider | OllamaProvider
# An answer of 8192 tokens may take 8 MiB; every bomb below inflates to far more.
MAX_TOKENS = 8192
# What one answer may hold in memory while it is cut: its pieces, never the bomb. The old decode
# held a whole inflated chunk (hundreds of MiB here).
BOUNDED = 32 * MiB


@pytest.fixture
def serve() -> Iterator[Callable[[str, Behave], Provider]]:
    servers: list[LiveServer] = []

    def make(dialect: str, behave: Behave) -> Provider:
        server = LiveServer(misbehaving_app(behave)).__enter__()
        servers.append(server)
        if dialect == "openai":
            return OpenAICompatProvider(f"{server.url}/v1", "m", retries=0)
        return OllamaProvider(server.url, "m", num_ctx=4096, version="0.12.6")

    yield make
    for server in servers:
        server.__exit__()


def answer(provider: Provider) -> str:
    request = Request("m", (), (), (Message.user("hi"),), MAX_TOKENS)
    return "".join(e.text for e in provider.stream(request) if isinstance(e, StreamText))


def cut_within_memory(call: Callable[[], object]) -> tuple[ServerLimitExceeded, int]:
    """The limit `call` ends with, and the most memory Python held meanwhile."""
    tracemalloc.start()
    try:
        with pytest.raises(ServerLimitExceeded) as caught:
            call()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return caught.value, peak


def streamed(dialect: str, body: bytes, coding: str, status: int = 200) -> Response:
    media = sse if dialect == "openai" else ndjson
    response = media([body], **{"content-encoding": coding})
    response.status_code = status
    return response


@pytest.mark.parametrize("dialect", ["openai", "ollama"])
@pytest.mark.parametrize("layers", [2, 3])
def test_a_bomb_gzipped_twice_or_thrice_ends_at_the_answer_budget_in_bounded_memory(
    dialect: str, layers: int, serve: Callable[[str, Behave], Provider]
) -> None:
    # 512 MiB of blank lines (they carry nothing: only the inflated bytes' count can stop them)
    # inside, a few KB on the wire (asserted, so the bomb is the one the issue describes).
    wire = layered_bomb(512 * MiB, b"\n" * MiB, layers)
    assert len(wire) < 64 * 1024
    coding = ", ".join(["gzip"] * layers)
    provider = serve(dialect, lambda n: streamed(dialect, wire, coding))
    error, peak = cut_within_memory(lambda: answer(provider))
    assert error.limit.name == "answer_bytes"
    assert "answer_bytes" in str(error) and "--max-tokens" in str(error)
    assert peak < BOUNDED, f"{peak / MiB:.0f} MiB held while cutting a {layers}-layer bomb"


def test_a_double_gzip_bomb_as_an_error_body_ends_at_the_response_limit_in_bounded_memory(
    serve: Callable[[str, Behave], Provider],
) -> None:
    wire = layered_bomb(512 * MiB, b" " * MiB, 2)
    provider = serve("openai", lambda n: streamed("openai", wire, "gzip, gzip", status=500))
    error, peak = cut_within_memory(lambda: answer(provider))
    assert error.limit.name == "response_bytes"
    # The body kept for the message is within the limit (16 MiB), the bomb never whole.
    assert peak < BOUNDED + 16 * MiB


def test_a_double_gzip_bomb_in_a_discovery_answer_is_no_answer(client: httpx.Client) -> None:
    wire = layered_bomb(512 * MiB, b" " * MiB, 2)
    with LiveServer(
        misbehaving_app(lambda n: ok_sse(), discovery=lambda n: streamed("openai", wire, "gzip, gzip"))
    ) as server:
        tracemalloc.start()
        try:
            assert get_json_quiet(client, f"{server.url}/v1/models", timeout=30) is None
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert peak < BOUNDED + 16 * MiB


@pytest.mark.parametrize("asker", ["first contact", "aforo models"])
def test_whether_a_bomb_server_answers_is_known_without_its_body(client: httpx.Client, asker: str) -> None:
    # Is a server there at all? (first contact; `aforo models` when it lists no model.) httpx's get
    # read the whole body to say so: the bomb held whole.
    wire = layered_bomb(512 * MiB, b" " * MiB, 2)
    with LiveServer(
        misbehaving_app(lambda n: ok_sse(), discovery=lambda n: streamed("openai", wire, "gzip, gzip"))
    ) as server:
        tracemalloc.start()
        try:
            if asker == "first contact":
                assert unreachable(server.url) is None
            else:
                assert _unreachable(client, f"{server.url}/v1/models") is None
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert peak < BOUNDED


def test_the_inner_layer_is_counted_before_the_outer_one_is_inflated_further(
    serve: Callable[[str, Behave], Provider],
) -> None:
    # The middle layer alone (gzip of 64 GiB of newlines: about 64 MB) passes the 8 MiB budget: the
    # answer ends there, before the last layer made 64 GiB, whatever its chunks weigh.
    wire = layered_bomb(64 * 1024 * MiB, b"\n" * MiB, 2)
    provider = serve("ollama", lambda n: streamed("ollama", wire, "gzip, gzip"))
    error, peak = cut_within_memory(lambda: answer(provider))
    assert error.limit.name == "answer_bytes"
    assert peak < BOUNDED


@pytest.mark.parametrize("dialect", ["openai", "ollama"])
@pytest.mark.parametrize(
    "codings", [("gzip", "gzip"), ("gzip", "deflate"), ("raw-deflate", "gzip"), ("gzip", "gzip", "gzip")]
)
def test_an_answer_encoded_in_layers_reads_as_it_was_sent(
    dialect: str, codings: tuple[str, ...], serve: Callable[[str, Behave], Provider]
) -> None:
    words = [f"word{i} " for i in range(3000)]
    if dialect == "openai":
        body = b"".join(openai_chunk(w) for w in words) + openai_chunk(finish="stop") + b"data: [DONE]\n\n"
    else:
        body = b"".join(ollama_line(w) for w in words) + ollama_line(done=True)
    header = ", ".join(c.removeprefix("raw-") for c in codings)
    provider = serve(dialect, lambda n: streamed(dialect, encoded(body, *codings), header))
    assert answer(provider) == "".join(words)


def test_more_layers_than_the_limit_is_the_content_encodings_limit(
    serve: Callable[[str, Behave], Provider],
) -> None:
    body = openai_chunk("hi") + openai_chunk(finish="stop") + b"data: [DONE]\n\n"
    wire = encoded(body, "gzip", "gzip", "gzip", "gzip")
    provider = serve("openai", lambda n: streamed("openai", wire, "gzip, gzip, gzip, gzip"))
    with pytest.raises(ServerLimitExceeded) as caught:
        answer(provider)
    assert caught.value.limit.name == "content_encodings"
    assert "4 times" in str(caught.value) and "content_encodings (3 layers" in str(caught.value)


def test_a_body_that_is_not_the_gzip_it_claims_is_a_protocol_error(
    serve: Callable[[str, Behave], Provider],
) -> None:
    provider = serve("openai", lambda n: streamed("openai", b"data: not gzip at all\n\n", "gzip"))
    with pytest.raises(ProtocolError, match="not valid gzip"):
        answer(provider)
