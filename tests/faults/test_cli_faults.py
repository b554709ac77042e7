"""The fault rows end to end: the real `aforo` against the misbehaving server ends with the documented
exit code and a message naming the limit (and how to raise it), never a traceback."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from aforo.store.sessions import SessionStore
from faults.server import (
    Behave,
    MiB,
    drip,
    layered_bomb,
    misbehaving_app,
    ok_sse,
    one_line,
    openai_chunk,
    sse,
    status,
)
from support.cli import CliRun, run_cli
from support.live_server import LiveServer

EXIT_ERROR = 1
EXIT_USAGE = 2


@pytest.fixture
def aforo(tmp_path: Path) -> Iterator[object]:
    servers: list[LiveServer] = []

    def run(behave: Behave, *flags: str, prompt: str = "hi") -> CliRun:
        server = LiveServer(misbehaving_app(behave)).__enter__()
        servers.append(server)
        args = ("-w", str(tmp_path), "--base-url", f"{server.url}/v1", "--server", "openai", "-m", "m")
        return run_cli(*args, "--context-window", "8192", *flags, prompt, timeout=60)

    yield run
    for server in servers:
        server.__exit__()


def said(run: CliRun) -> str:
    assert "Traceback" not in run.err, run.err
    return run.out + run.err


async def counting() -> AsyncIterator[bytes]:
    """Tokens that never repeat (`token1 token2 …`), as fast as the client reads, never an end: the
    same token again and again would be a loop, which the loop stop ends first."""
    n = 0
    while True:
        yield b"".join(openai_chunk(f"token{n + i} ") for i in range(256))
        n += 256
        await asyncio.sleep(0)


def test_endless_stream_ends_with_the_answer_limit(aforo: object) -> None:
    run = aforo(lambda n: sse(counting()))  # type: ignore[operator]
    assert run.code == EXIT_ERROR
    text = said(run)
    assert "answer_bytes" in text and "--max-tokens" in text


def test_a_double_gzipped_4_gib_bomb_ends_with_the_answer_limit(aforo: object) -> None:
    # Issue 29 D2: each chunk was inflated whole through both layers, a MemoryError traceback.
    wire = layered_bomb(4 * 1024 * MiB, b"\n" * MiB, 2)
    run = aforo(lambda n: sse([wire], **{"content-encoding": "gzip, gzip"}))  # type: ignore[operator]
    assert run.code == EXIT_ERROR
    text = said(run)
    assert "answer_bytes" in text and "--max-tokens" in text


def test_unterminated_50_mb_line_then_close_is_the_line_limit(aforo: object) -> None:
    # A reserve of 8192 tokens gives the answer 8 MiB, more than a line may take.
    big = ("--context-window", "65536", "--max-tokens", "8192")
    run = aforo(lambda n: sse(one_line(b"data: ", 50 * MiB)), *big)  # type: ignore[operator]
    assert run.code == EXIT_ERROR
    text = said(run)
    assert "stream_line_bytes" in text and "empty stream" not in text


def test_slow_drip_ends_at_the_answer_timeout_flag(aforo: object) -> None:
    run = aforo(lambda n: sse(drip(openai_chunk("t"), 0.3)), "--answer-timeout", "1.5")  # type: ignore[operator]
    assert run.code == EXIT_ERROR
    text = said(run)
    assert "answer_timeout" in text and "1.5" in text


def test_the_answer_received_before_a_failure_is_kept_in_the_session(aforo: object, aforo_home: Path) -> None:
    # Issue 13: nothing the model answered is lost. The text that streamed before the deadline is the
    # conversation's last message (and the result's answer), not gone with the failed stream.
    run = aforo(lambda n: sse(drip(openai_chunk("more "), 0.3)), "--answer-timeout", "1.5", "--json")  # type: ignore[operator]
    assert run.code == EXIT_ERROR
    result = run.events()[-1]
    assert result["ending"] == "error" and "answer_timeout" in result["error"]
    assert result["answer"].startswith("more more")
    store = SessionStore(aforo_home / "sessions")
    saved = store.load(store.list()[0].id).messages
    assert [m.role for m in saved] == ["user", "assistant"] and saved[-1].text == result["answer"]


def test_answer_timeout_from_the_project_file(aforo: object, tmp_path: Path) -> None:
    (tmp_path / ".aforo.toml").write_text("answer_timeout = 1.5\n")
    run = aforo(lambda n: sse(drip(openai_chunk("t"), 0.3)))  # type: ignore[operator]
    assert run.code == EXIT_ERROR and "answer_timeout" in said(run)


def test_read_timeout_flag_cuts_a_silent_server(aforo: object) -> None:
    run = aforo(lambda n: sse(drip(b": still here\n", 30)), "--read-timeout", "0.5")  # type: ignore[operator]
    assert run.code == EXIT_ERROR
    assert "read_timeout" in said(run)


def test_redirect_says_where_and_is_not_an_empty_stream(aforo: object) -> None:
    run = aforo(lambda n: status(307, "", location="http://10.0.0.9:8000/v1/chat/completions"))  # type: ignore[operator]
    assert run.code == EXIT_ERROR
    text = said(run)
    assert "HTTP 307" in text and "10.0.0.9:8000" in text and "empty stream" not in text


def test_retry_after_too_long_says_when_to_retry(aforo: object) -> None:
    run = aforo(lambda n: status(503, "", **{"retry-after": "120"}))  # type: ignore[operator]
    assert run.code == EXIT_ERROR
    assert "try again after" in said(run)


def test_a_good_answer_still_exits_0(aforo: object) -> None:
    run = aforo(lambda n: ok_sse("fine"))  # type: ignore[operator]
    assert run.code == 0 and "fine" in said(run)


# --- usage errors ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "flags",
    [
        ["--temperature", "nan"],
        ["--temperature", "inf"],
        ["--answer-timeout", "nan"],
        ["--read-timeout", "-1"],
    ],
)
def test_non_finite_numbers_are_usage_errors(tmp_path: Path, flags: list[str]) -> None:
    run = run_cli("-w", str(tmp_path), "--base-url", "http://127.0.0.1:9/v1", "-m", "m", *flags, "q")
    assert run.code == EXIT_USAGE
    assert flags[0].removeprefix("--").replace("-", "_") in said(run)


def test_project_file_with_bytes_that_are_not_utf8_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / ".aforo.toml").write_bytes(b'model = "caf\xe9"\n')
    run = run_cli("-w", str(tmp_path), "--base-url", "http://127.0.0.1:9/v1", "-m", "m", "q")
    assert run.code == EXIT_USAGE
    text = said(run)
    assert ".aforo.toml" in text and "utf-8" in text.lower()
