"""The key of `aforo serve` off the command line (issue 39, D13): from `AFORO_SERVE_KEY` or `--key-file`,
so that no other user reads it in /proc/PID/cmdline; `--key` still works, with a warning."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from dialects.openai_app import Reply, Script, make_openai_app
from serve.serve_process import Serving, serving
from support.cli import run_cli
from support.live_server import LiveServer

KEY = "k3y-0f-the-gateway-5e1d"
ASK = {"model": "test-model", "messages": [{"role": "user", "content": "hi"}]}
VISIBLE = "--key is on the command line, which every user of this machine can read"


@pytest.fixture
def upstream() -> Iterator[str]:
    script = Script(*[Reply(text="hello", prompt_tokens=9)] * 2)
    with LiveServer(make_openai_app(script, models={"test-model": None})) as server:
        yield server.url


def asked(running: Serving) -> tuple[httpx.Response, httpx.Response]:
    """A request without the key, and one with it."""
    chat = f"{running.url}/v1/chat/completions"
    without = httpx.post(chat, json=ASK, timeout=30)
    with_key = httpx.post(chat, json=ASK, headers={"Authorization": f"Bearer {KEY}"}, timeout=30)
    return without, with_key


def cmdline(running: Serving) -> bytes:
    return Path(f"/proc/{running.proc.pid}/cmdline").read_bytes()


def test_the_key_from_the_environment_is_required_and_on_no_command_line(upstream: str) -> None:
    with serving("--upstream", upstream, "--context-window", "4096", env={"AFORO_SERVE_KEY": KEY}) as running:
        without, with_key = asked(running)
        shown = cmdline(running)
    assert without.status_code == 401
    assert with_key.status_code == 200, with_key.text
    assert KEY.encode() not in shown
    assert VISIBLE not in running.err


def test_the_key_from_a_file(upstream: str, tmp_path: Path) -> None:
    path = tmp_path / "serve.key"
    path.write_text(f"  {KEY}  \n")
    path.chmod(0o600)
    with serving("--upstream", upstream, "--context-window", "4096", "--key-file", str(path)) as running:
        without, with_key = asked(running)
        shown = cmdline(running)
    assert (without.status_code, with_key.status_code) == (401, 200)
    assert KEY.encode() not in shown


def test_a_key_on_the_command_line_still_works_with_a_warning(upstream: str) -> None:
    with serving("--upstream", upstream, "--context-window", "4096", "--key", KEY) as running:
        without, with_key = asked(running)
    assert (without.status_code, with_key.status_code) == (401, 200)
    assert f"aforo serve: ! {VISIBLE} (ps, /proc/PID/cmdline): prefer AFORO_SERVE_KEY=KEY" in running.err


def test_another_address_takes_the_key_from_the_environment(upstream: str) -> None:
    env = {"AFORO_SERVE_KEY": KEY}
    with serving(
        "--upstream", upstream, "--context-window", "4096", "--host", "127.0.0.2", env=env
    ) as running:
        without, with_key = asked(running)
    assert running.url.startswith("http://127.0.0.2:")
    assert (without.status_code, with_key.status_code) == (401, 200)


@pytest.mark.parametrize(
    ("content", "extra", "expected"),
    [
        ("", [], "is empty: write the key on its first line"),
        (None, [], "cannot be read (No such file or directory)"),
        ("x" * 5000, [], "serve_key_bytes (4,096 bytes"),
        (KEY, ["--key", KEY], "--key and --key-file both give the key: pass one of them"),
    ],
    ids=["empty", "missing", "too-large", "both"],
)
def test_a_key_file_that_gives_no_key_is_refused(
    tmp_path: Path, content: str | None, extra: list[str], expected: str
) -> None:
    path = tmp_path / "serve.key"
    if content is not None:
        path.write_text(content)
    run = run_cli("serve", "--upstream", "http://127.0.0.1:9", "--key-file", str(path), *extra)
    assert run.code == 2
    assert expected in run.err
