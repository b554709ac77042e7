"""HTTP statuses: each its own message, Retry-After honoured within a cap, redirects never followed."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
import tenacity

from aforo.errors import HTTPStatusError, ProviderError
from aforo.limits import RETRY_AFTER
from aforo.messages import Message, Request, StreamText
from aforo.providers import retry
from aforo.providers.openai_compat import OpenAICompatProvider
from aforo.wire import statuses
from aforo.wire.http import status_error
from faults.server import Behave, misbehaving_app, ok_sse, status
from support.live_server import LiveServer

URL = "http://127.0.0.1:9/v1/chat/completions"


def request() -> Request:
    return Request("m", (), (), (Message.user("hi"),), 64)


@pytest.fixture
def serve() -> Iterator[object]:
    servers: list[LiveServer] = []

    def make(behave: Behave, retries: int = 2) -> tuple[OpenAICompatProvider, list[object]]:
        app = misbehaving_app(behave)
        server = LiveServer(app).__enter__()
        servers.append(server)
        return OpenAICompatProvider(f"{server.url}/v1", "m", retries=retries), app.state.bodies

    yield make
    for server in servers:
        server.__exit__()


# --- one message per status ------------------------------------------------------------------------


def test_every_status_reads_differently() -> None:
    codes = sorted({*range(300, 309), *range(400, 452), *range(500, 512), 499, 599})
    messages = {code: str(status_error(code, "", url=URL, model="m")) for code in codes}
    assert len(set(messages.values())) == len(codes)
    for code, message in messages.items():
        assert f"HTTP {code} " in message


def test_the_table_gives_common_statuses_their_own_advice() -> None:
    hints = [statuses.hint(code) for code in statuses.STATUS_HINTS]
    assert len(set(hints)) == len(hints)
    # The advice, not only the number, differs for the statuses a model server really sends.
    common = (400, 401, 403, 404, 413, 422, 429, 500, 502, 503, 504)
    assert len({statuses.hint(c, model="m", models="u") for c in common}) == len(common)


# --- Retry-After ---------------------------------------------------------------------------------


def test_retry_after_seconds_and_dates() -> None:
    now = 1_700_000_000.0
    assert statuses.retry_after_seconds("7", now) == 7
    assert statuses.retry_after_seconds("Tue, 14 Nov 2023 22:15:20 GMT", now) == pytest.approx(120)
    assert statuses.retry_after_seconds("Tue, 14 Nov 2023 22:00:00 GMT", now) == 0  # in the past
    assert statuses.retry_after_seconds("soon", now) is None
    assert statuses.retry_after_seconds(None, now) is None


def test_a_429_retry_after_7_is_waited_7_seconds() -> None:
    error = status_error(429, "", url=URL, model="m", headers={"retry-after": "7"})
    assert isinstance(error, HTTPStatusError) and error.retry_after == 7
    assert retry.is_retryable(error)
    state = tenacity.RetryCallState(retry_object=retry.retrying(2), fn=None, args=(), kwargs={})
    state.set_exception((HTTPStatusError, error, None))
    assert retry.wait_before_retry(state) == 7


def test_a_503_retry_after_120_is_not_waited_and_says_when_to_retry() -> None:
    error = status_error(503, "", url=URL, model="m", headers={"retry-after": "120"})
    assert not retry.is_retryable(error)
    message = str(error)
    assert "120 s" in message and "retry_after" in message and "try again after" in message
    assert RETRY_AFTER.value < 120


def test_the_server_s_retry_after_is_honoured_over_real_http(serve: object) -> None:
    answers = [status(429, '{"error": "slow down"}', **{"retry-after": "1"}), ok_sse("fine")]
    provider, bodies = serve(lambda n: answers[n - 1])  # type: ignore[operator]
    started = time.monotonic()
    text = [e.text for e in provider.stream(request()) if isinstance(e, StreamText)]
    assert text == ["fine"] and len(bodies) == 2
    assert time.monotonic() - started >= 1.0


def test_a_long_retry_after_is_one_attempt_and_a_clear_message(serve: object) -> None:
    provider, bodies = serve(lambda n: status(503, "", **{"retry-after": "120"}))  # type: ignore[operator]
    started = time.monotonic()
    with pytest.raises(HTTPStatusError) as caught:
        list(provider.stream(request()))
    assert len(bodies) == 1 and time.monotonic() - started < 5
    assert "try again after" in str(caught.value)


# --- redirects -----------------------------------------------------------------------------------


@pytest.mark.parametrize("code", [301, 302, 307, 308])
def test_a_redirect_is_not_followed_and_says_where_it_points(serve: object, code: int) -> None:
    provider, bodies = serve(  # type: ignore[operator]
        lambda n: status(code, "", location="http://elsewhere.example:8080/v1/chat/completions")
    )
    with pytest.raises(ProviderError) as caught:
        list(provider.stream(request()))
    message = str(caught.value)
    assert f"HTTP {code}" in message and "elsewhere.example:8080" in message and "--base-url" in message
    assert "empty stream" not in message
    assert len(bodies) == 1  # not retried either
