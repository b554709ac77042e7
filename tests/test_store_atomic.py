"""The state directory and atomic writes: owner-only permissions, old-or-new after a failure."""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from aforo.errors import StoreError
from aforo.store import atomic, paths
from aforo.store.atomic import atomic_write, is_temp_name, remove_stale_temps


@pytest.fixture(autouse=True)
def permissive_umask() -> Iterator[None]:
    """A typical umask, so 0700/0600 can only come from aforo, not from the environment."""
    old = os.umask(0o022)
    yield
    os.umask(old)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_state_dir_follows_aforo_home_and_is_owner_only(
    aforo_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = aforo_home / "nested" / "state"
    monkeypatch.setenv("AFORO_HOME", str(home))
    assert paths.state_dir() == home
    assert mode(home) == 0o700
    assert mode(home.parent) == 0o700  # created by us, so ours to lock down
    assert paths.checkpoints_dir() == home / "checkpoints"
    assert mode(paths.sessions_dir()) == 0o700
    assert paths.telemetry_path() == home / "telemetry.db"


def test_state_dir_without_aforo_home_uses_platform_dir(
    aforo_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AFORO_HOME")
    monkeypatch.setattr(paths.platformdirs, "user_state_dir", lambda app: str(aforo_home / "platform" / app))
    assert paths.state_dir() == aforo_home / "platform" / "aforo"


def test_existing_state_dir_is_used_as_it_is(aforo_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Not aforo's to chmod (issue 12); readable by others is safe, aforo's files in it are 0600.
    # tests/security/test_state_dir.py holds the rest of the rule.
    readable = aforo_home / "readable"
    readable.mkdir(mode=0o755)
    os.chmod(readable, 0o755)
    monkeypatch.setenv("AFORO_HOME", str(readable))
    assert paths.state_dir() == readable
    assert mode(readable) == 0o755


def test_state_dir_that_is_a_file_is_a_clear_error(aforo_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = aforo_home / "file"
    blocker.write_text("x")
    monkeypatch.setenv("AFORO_HOME", str(blocker))
    with pytest.raises(StoreError, match="not a directory"):
        paths.state_dir()


def test_atomic_write_creates_0600_file_in_0700_dirs(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b" / "state.json"
    atomic_write(target, b"one")
    assert target.read_bytes() == b"one"
    assert mode(target) == 0o600
    assert mode(target.parent) == 0o700
    assert mode(target.parent.parent) == 0o700
    atomic_write(target, b"two")
    assert target.read_bytes() == b"two"
    assert [p.name for p in target.parent.iterdir()] == ["state.json"]  # no temp file left behind


def test_replacing_a_world_readable_file_makes_it_private(tmp_path: Path) -> None:
    target = tmp_path / "f"
    target.write_bytes(b"old")
    os.chmod(target, 0o644)
    atomic_write(target, b"new")
    assert mode(target) == 0o600


def test_failed_write_keeps_old_file_and_leaves_no_temp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "f.json"
    atomic_write(target, b"old")

    def broken_replace(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(atomic.os, "replace", broken_replace)
    with pytest.raises(StoreError, match="No space left"):
        atomic_write(target, b"new")
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["f.json"]


def test_interrupted_write_keeps_old_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "f.json"
    atomic_write(target, b"old")

    def interrupted(fd: int) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(atomic.os, "fsync", interrupted)
    with pytest.raises(KeyboardInterrupt):
        atomic_write(target, b"new")
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["f.json"]


def test_stale_temps_are_swept_young_ones_kept(tmp_path: Path) -> None:
    old = tmp_path / ".x.json.abc.tmp"
    young = tmp_path / ".x.json.def.tmp"
    keep = tmp_path / "x.json"
    for p in (old, young, keep):
        p.write_bytes(b"")
    past = time.time() - 3600
    os.utime(old, (past, past))
    assert is_temp_name(old.name) and not is_temp_name(keep.name)
    assert remove_stale_temps(tmp_path, max_age_s=60) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([young.name, keep.name])
