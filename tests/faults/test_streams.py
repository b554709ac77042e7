"""What a server streams cannot exhaust memory or time: every stream limit, on both dialects.

Each test points a real provider at the misbehaving server and checks that the answer ends with the
error of the right limit (named in its message, with how to raise it where one can), soon.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import httpx
import pytest
from starlette.responses import StreamingResponse

from aforo.errors import ProtocolError, ProviderError, ProviderTimeout, ServerLimitExceeded
from aforo.limits import answer_bytes
from aforo.messages import Message, Request, StreamEvent, StreamText
from aforo.providers.ollama import OllamaProvider
from aforo.providers.openai_compat import OpenAICompatProvider
from aforo.wire.bounded import Deadlines
from aforo.wire.http import get_json_quiet
from faults.server import (
    Behave,
    MiB,
    bomb_body,
    deep_json,
    drip,
    endless,
    misbehaving_app,
    ndjson,
    ok_sse,
    ollama_line,
    one_line,
    openai_chunk,
    sse,
    status,
)
from support.live_server import LiveServer

Make = Callable[..., OpenAICompatProvider | OllamaProvider]


# aforo's default: an answer may take 8 MiB, more than the 4 MiB a line may.
MAX_TOKENS = 8192


def request(max_tokens: int = MAX_TOKENS) -> Request:
    return Request("m", (), (), (Message.user("hi"),), max_tokens)


def events(
    provider: OpenAICompatProvider | OllamaProvider, max_tokens: int = MAX_TOKENS
) -> list[StreamEvent]:
    return list(provider.stream(request(max_tokens)))


@pytest.fixture
def openai() -> Iterator[Callable[..., OpenAICompatProvider]]:
    servers: list[LiveServer] = []

    def make(behave: Behave, **kwargs: float) -> OpenAICompatProvider:
        server = LiveServer(misbehaving_app(behave)).__enter__()
        servers.append(server)
        return OpenAICompatProvider(f"{server.url}/v1", "m", retries=0, **kwargs)  # type: ignore[arg-type]

    yield make
    for server in servers:
        server.__exit__()


@pytest.fixture
def ollama() -> Iterator[Callable[..., OllamaProvider]]:
    servers: list[LiveServer] = []

    def make(behave: Behave, **kwargs: float) -> OllamaProvider:
        server = LiveServer(misbehaving_app(behave)).__enter__()
        servers.append(server)
        return OllamaProvider(server.url, "m", num_ctx=4096, version="0.12.6", **kwargs)  # type: ignore[arg-type]

    yield make
    for server in servers:
        server.__exit__()


def limit_hit(call: Callable[[], object]) -> ServerLimitExceeded:
    with pytest.raises(ServerLimitExceeded) as caught:
        call()
    return caught.value


# --- a line with no newline ---------------------------------------------------------------------


def test_sse_data_line_without_newline_stops_at_the_line_limit(
    openai: Callable[..., OpenAICompatProvider],
) -> None:
    provider = openai(lambda n: sse(one_line(b"data: ", 50 * MiB)))
    error = limit_hit(lambda: events(provider))
    assert error.limit.name == "stream_line_bytes"
    assert "stream_line_bytes" in str(error)


def test_ndjson_line_without_newline_stops_at_the_line_limit(ollama: Callable[..., OllamaProvider]) -> None:
    provider = ollama(lambda n: ndjson(one_line(b'{"message": {"content": "', 50 * MiB)))
    assert limit_hit(lambda: events(provider)).limit.name == "stream_line_bytes"


def test_50_mb_unterminated_data_line_then_close_is_the_limit_not_an_empty_stream(
    openai: Callable[..., OpenAICompatProvider],
) -> None:
    provider = openai(lambda n: sse(one_line(b"data: ", 50 * MiB)))
    error = limit_hit(lambda: events(provider))
    assert "empty stream" not in str(error) and "does not fit" not in str(error)


def test_50_mb_answer_in_one_delta_is_refused(openai: Callable[..., OpenAICompatProvider]) -> None:
    # A chunk that starts well-formed and carries 50 MB of text in its one delta (streamed by the
    # server as it goes, so the test itself does not hold 50 MB).
    head = openai_chunk("x").partition(b'"x"')[0] + b'"'
    provider = openai(lambda n: sse(one_line(head, 50 * MiB)))
    assert limit_hit(lambda: events(provider)).limit.name == "stream_line_bytes"


# --- the answer's bytes: endless streams and gzip bombs -----------------------------------------


def test_endless_fast_stream_stops_at_the_answer_budget(openai: Callable[..., OpenAICompatProvider]) -> None:
    provider = openai(lambda n: sse(endless(openai_chunk("token "))))
    started = time.monotonic()
    error = limit_hit(lambda: events(provider, max_tokens=2000))
    assert error.limit.name == "answer_bytes"
    assert "--max-tokens" in str(error)  # how to raise it
    assert time.monotonic() - started < 30


def test_endless_ndjson_stream_stops_at_the_answer_budget(ollama: Callable[..., OllamaProvider]) -> None:
    provider = ollama(lambda n: ndjson(endless(ollama_line("token "))))
    assert limit_hit(lambda: events(provider)).limit.name == "answer_bytes"


def test_answer_budget_grows_with_max_tokens(openai: Callable[..., OpenAICompatProvider]) -> None:
    # What fails under a small max_tokens passes under a larger one: the limit is tied to it.
    body = [openai_chunk("y" * 1000) for _ in range(3000)] + [
        openai_chunk(finish="stop"),
        b"data: [DONE]\n\n",
    ]
    size = sum(len(b) for b in body)
    small, large = 1024, 8192
    assert answer_bytes(small) < size < answer_bytes(large)
    provider = openai(lambda n: sse(body))
    assert limit_hit(lambda: events(provider, max_tokens=small)).limit.name == "answer_bytes"
    text = "".join(e.text for e in events(provider, max_tokens=large) if isinstance(e, StreamText))
    assert len(text) == 3000 * 1000


@pytest.mark.parametrize("dialect", ["openai", "ollama"])
def test_gzip_body_that_inflates_to_3_gib_is_cut_at_the_answer_budget(
    dialect: str, openai: Callable[..., OpenAICompatProvider], ollama: Callable[..., OllamaProvider]
) -> None:
    # 3 MB on the wire, 3 GiB inflated: blank SSE comment lines / blank NDJSON lines, so only the
    # count of inflated bytes can stop it.
    block = b": keep-alive\n" * (MiB // 13) if dialect == "openai" else b"\n" * MiB
    media = sse if dialect == "openai" else ndjson
    make = openai if dialect == "openai" else ollama
    provider = make(lambda n: media(bomb_body(3 * 1024 * MiB, block), **{"content-encoding": "gzip"}))
    started = time.monotonic()
    assert limit_hit(lambda: events(provider)).limit.name == "answer_bytes"
    assert time.monotonic() - started < 30


def test_gzip_bomb_as_an_error_body_is_cut_at_the_response_limit(
    openai: Callable[..., OpenAICompatProvider],
) -> None:
    def bomb(n: int) -> object:
        response = sse(bomb_body(3 * 1024 * MiB, b" " * MiB), **{"content-encoding": "gzip"})
        response.status_code = 500
        return response

    provider = openai(bomb)
    assert limit_hit(lambda: events(provider)).limit.name == "response_bytes"


# --- the answer's time ----------------------------------------------------------------------------


def test_slow_drip_ends_at_the_answer_deadline(openai: Callable[..., OpenAICompatProvider]) -> None:
    # One token every 0.3 s: every read is quick, so only a deadline for the whole answer ends it.
    provider = openai(lambda n: sse(drip(openai_chunk("t"), 0.3)), deadlines=Deadlines(answer=1.5))
    started = time.monotonic()
    error = limit_hit(lambda: events(provider))
    took = time.monotonic() - started
    assert error.limit.name == "answer_timeout"
    assert "--answer-timeout" in str(error) and "1.5" in str(error)
    assert 1.5 <= took < 5


def test_slow_ndjson_drip_ends_at_the_answer_deadline(ollama: Callable[..., OllamaProvider]) -> None:
    provider = ollama(lambda n: ndjson(drip(ollama_line("t"), 0.3)), deadlines=Deadlines(answer=1.5))
    assert limit_hit(lambda: events(provider)).limit.name == "answer_timeout"


def test_a_silent_server_is_cut_by_the_answer_deadline_when_it_is_shorter(
    openai: Callable[..., OpenAICompatProvider],
) -> None:
    # Silent after the headers: the read timeout (600 s) would wait; the 1 s deadline does not.
    provider = openai(lambda n: sse(drip(b": hello\n", 60)), deadlines=Deadlines(answer=1.0))
    started = time.monotonic()
    assert limit_hit(lambda: events(provider)).limit.name == "answer_timeout"
    assert time.monotonic() - started < 5


def test_read_timeout_is_configurable_and_named(openai: Callable[..., OpenAICompatProvider]) -> None:
    provider = openai(lambda n: sse(drip(b": hello\n", 60)), deadlines=Deadlines(read=0.5))
    started = time.monotonic()
    with pytest.raises(ProviderTimeout) as caught:
        events(provider)
    assert time.monotonic() - started < 5
    assert "read_timeout" in str(caught.value) and "--read-timeout" in str(caught.value)


# --- JSON nested without end ----------------------------------------------------------------------


def test_deep_json_in_a_stream_chunk_is_the_depth_limit(openai: Callable[..., OpenAICompatProvider]) -> None:
    provider = openai(lambda n: sse([b"data: " + deep_json(100_000).encode() + b"\n\n"]))
    assert limit_hit(lambda: events(provider)).limit.name == "json_depth"


def test_deep_json_in_an_ndjson_line_is_the_depth_limit(ollama: Callable[..., OllamaProvider]) -> None:
    provider = ollama(lambda n: ndjson([deep_json(100_000).encode() + b"\n"]))
    assert limit_hit(lambda: events(provider)).limit.name == "json_depth"


def test_deep_json_error_body_is_still_a_status_error(openai: Callable[..., OpenAICompatProvider]) -> None:
    provider = openai(lambda n: status(400, deep_json(100_000)))
    with pytest.raises(ProviderError) as caught:
        events(provider)
    assert "HTTP 400" in str(caught.value)


# --- what still works ----------------------------------------------------------------------------


def test_a_normal_answer_passes_every_limit(openai: Callable[..., OpenAICompatProvider]) -> None:
    provider = openai(lambda n: ok_sse("hello"))
    assert [e.text for e in events(provider, max_tokens=1) if isinstance(e, StreamText)] == ["hello"]


def test_non_sse_content_type_is_a_protocol_error(openai: Callable[..., OpenAICompatProvider]) -> None:
    from starlette.responses import Response

    provider = openai(lambda n: Response("<html>login</html>", media_type="text/html"))
    with pytest.raises(ProtocolError, match="event stream"):
        events(provider)


def test_gzip_bomb_in_a_discovery_answer_is_no_answer(client: httpx.Client) -> None:
    def bomb(n: int) -> StreamingResponse:
        return sse(bomb_body(3 * 1024 * MiB, b" " * MiB), **{"content-encoding": "gzip"})

    with LiveServer(misbehaving_app(ok_sse_for_chat, discovery=bomb)) as server:
        started = time.monotonic()
        assert get_json_quiet(client, f"{server.url}/v1/models", timeout=30) is None
        assert time.monotonic() - started < 30


def ok_sse_for_chat(n: int) -> StreamingResponse:
    return ok_sse()
