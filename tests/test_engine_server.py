"""One llama-server process and the engine all aforo processes share: ports, PID safety, users, pinning.

The llama-server here is the fake of tests/support/fake_engine.py: a real HTTP server on 127.0.0.1.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from aforo.engine.errors import EngineError, EngineUnavailable
from aforo.engine.home import EngineHome
from aforo.engine.server import Server, healthy, is_llama_server, launch, terminate
from aforo.engine.shared import SharedEngine
from support.fake_engine import write_fake_llama_server


@pytest.fixture
def binary(tmp_path: Path) -> Path:
    return write_fake_llama_server(tmp_path / "bin")


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    """A live process that is not a llama-server: what a recycled PID looks like."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    yield proc
    proc.kill()
    proc.wait()


@pytest.fixture
def dead_pid() -> int:
    """The PID of a process that has exited (and been reaped)."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_launch_serves_the_window_on_loopback_and_terminate_ends_it(tmp_path: Path, binary: Path) -> None:
    server = launch(binary, tmp_path / "m.gguf", "m", 3072, tmp_path / "logs")
    try:
        assert server.url == f"http://127.0.0.1:{server.port}/v1"
        props = httpx.get(f"{server.root_url}/props", timeout=5).json()
        assert props["default_generation_settings"]["n_ctx"] == 3072
        assert is_llama_server(server.pid)
    finally:
        assert terminate(server.pid)
    assert not healthy(server.root_url)


def test_a_server_that_dies_at_start_is_reported_with_its_log(
    tmp_path: Path, binary: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_LLAMA_MODE", "crash")
    with pytest.raises(EngineError, match="failed to load model") as crashed:
        launch(binary, tmp_path / "m.gguf", "m", 2048, tmp_path / "logs")
    assert not isinstance(crashed.value, EngineUnavailable)
    monkeypatch.setenv("FAKE_LLAMA_MODE", "sigill")
    with pytest.raises(EngineUnavailable, match="AVX2"):
        launch(binary, tmp_path / "m.gguf", "m", 2048, tmp_path / "logs")


def test_a_recycled_pid_is_never_signalled(tmp_path: Path, sleeper: subprocess.Popen[bytes]) -> None:
    assert not is_llama_server(sleeper.pid)
    assert not terminate(sleeper.pid)
    home = EngineHome(tmp_path / "cache")
    home.ensure_writable()
    recorded = Server(pid=sleeper.pid, port=1, model="m", model_path="/m.gguf", ctx=4096, log="/log")
    (home.run / "server.json").write_text(json.dumps({**recorded.to_json(), "pinned": False}))
    shared = SharedEngine(home)
    assert shared.current() is None
    assert shared.stop() == (None, [])
    assert sleeper.poll() is None  # still alive


def test_users_share_one_engine_and_the_last_one_out_stops_it(
    tmp_path: Path, binary: Path, sleeper: subprocess.Popen[bytes], dead_pid: int
) -> None:
    shared = SharedEngine(EngineHome(tmp_path / "cache"))
    starts: list[Server] = []

    def start() -> Server:
        starts.append(launch(binary, tmp_path / "m.gguf", "m", 2048, tmp_path / "logs"))
        return starts[-1]

    first = shared.acquire(dead_pid, start)
    # The second user is a live process (the sleeper); the first is a PID that does not exist.
    second = shared.acquire(sleeper.pid, start)
    assert len(starts) == 1 and first.started_here and not second.started_here
    assert second.server == first.server
    assert shared.users() == [sleeper.pid]  # a dead user does not count
    assert not shared.release(dead_pid)
    assert healthy(first.server.root_url)  # still used by the sleeper
    assert shared.release(sleeper.pid)
    assert not healthy(first.server.root_url)
    assert shared.current() is None


def test_a_pinned_engine_outlives_its_users_until_stop(tmp_path: Path, binary: Path, dead_pid: int) -> None:
    shared = SharedEngine(EngineHome(tmp_path / "cache"))

    def start() -> Server:
        return launch(binary, tmp_path / "m.gguf", "m", 2048, tmp_path / "logs")

    used = shared.acquire(dead_pid, start)  # an `aforo --local` starts it
    pinned = shared.acquire(0, start, pinned=True)  # `aforo engine start` keeps it
    assert pinned.pinned and pinned.server == used.server
    assert not shared.release(dead_pid)
    running = shared.current()
    assert running is not None and running.pinned
    stopped, _users = shared.stop()
    assert stopped == used.server
    assert not healthy(used.server.root_url)
