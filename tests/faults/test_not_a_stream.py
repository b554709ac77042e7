"""Issue 29, D7: a 200 whose body is no event stream, and not empty, is reported as what it is.

200 KB of bytes in an encoding this install cannot decode (`Content-Encoding: zstd` without the
zstandard package: httpx passes them on as they are) were reported as "an empty stream … when the prompt
does not fit the context window — try a smaller --context-window": the wrong cause, the wrong advice.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from aforo.store.sessions import SessionStore
from faults.server import Behave, misbehaving_app, sse
from support.cli import CliRun, run_cli
from support.live_server import LiveServer

EXIT_ERROR = 1


@pytest.fixture
def aforo(tmp_path: Path) -> Iterator[object]:
    servers: list[LiveServer] = []

    def run(behave: Behave, *flags: str) -> CliRun:
        server = LiveServer(misbehaving_app(behave)).__enter__()
        servers.append(server)
        args = ("-w", str(tmp_path), "--base-url", f"{server.url}/v1", "--server", "openai", "-m", "m")
        return run_cli(*args, "--context-window", "8192", *flags, "what does it do?")

    yield run
    for server in servers:
        server.__exit__()


def undecodable(size: int) -> bytes:
    # No newline-free run is longer than a line may be, and no line starts an SSE field by chance.
    rnd = random.Random(29)
    return bytes(rnd.choice(b"\x00\x01\x80\xb5\xfd/(\xff\n") for _ in range(size))


@pytest.mark.parametrize(
    ("body", "headers", "said"),
    [
        (undecodable(200_000), {"content-encoding": "zstd"}, "200,000 bytes, Content-Encoding 'zstd'"),
        (b"<html><body>Gateway says hello</body></html>\n", {}, "<html><body>Gateway"),
    ],
    ids=["undecodable-200KB", "html"],
)
def test_a_200_that_is_no_event_stream_says_so_not_empty_stream(
    aforo: object, aforo_home: Path, body: bytes, headers: dict[str, str], said: str
) -> None:
    run = aforo(lambda n: sse([body], **headers), "--json")  # type: ignore[operator]
    assert run.code == EXIT_ERROR and "Traceback" not in run.err, run.err
    error = run.events()[-1]["error"]
    assert "the server answered 200 with a body that is not an event stream" in error
    assert said in error
    assert "empty stream" not in error and "--context-window" not in error
    store = SessionStore(aforo_home / "sessions")
    (summary,) = store.list()
    assert store.load(summary.id).messages[0].text == "what does it do?"


def test_a_stream_of_comments_only_is_still_the_empty_stream(aforo: object) -> None:
    run = aforo(lambda n: sse([b": keep-alive\n\n", b"data: [DONE]\n\n"]))  # type: ignore[operator]
    assert run.code == EXIT_ERROR and "empty stream" in run.out + run.err
