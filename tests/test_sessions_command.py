"""`aforo sessions`: this workspace's answered sessions with relative times, lines that fit the terminal,
and `aforo sessions prune`, which removes sessions with their checkpoints and asks first."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pexpect

from aforo.cli.sessions_command import ago
from aforo.messages import Message
from aforo.store.checkpoints import Checkpoint, CheckpointStore
from aforo.store.sessions import SessionRecord, SessionStore
from support.cli import AFORO, run_cli

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def session(
    home: Path,
    workspace: Path,
    title: str,
    *,
    answered: bool = True,
    days_old: float = 0,
    checkpoints: int = 0,
) -> str:
    """A saved session of `workspace`, last used `days_old` days ago, with `checkpoints` checkpoints."""
    store = SessionStore(home / "sessions")
    rec = SessionRecord(
        id=store.new_id(), workspace=str(workspace.resolve()), model="qwen2.5-coder:7b-instruct"
    )
    rec.messages = [Message.user(title)] + ([Message.assistant("an answer")] if answered else [])
    path = store.save(rec)
    for _ in range(checkpoints):
        CheckpointStore(home / "checkpoints").write(Checkpoint(session_id=rec.id, reason="compact"))
    if days_old:
        data = json.loads(path.read_text())
        data["updated_at"] = (datetime.now(UTC) - timedelta(days=days_old)).isoformat()
        path.write_text(json.dumps(data))
    return rec.id


def test_relative_times() -> None:
    def at(**delta: float) -> str:
        return ago((NOW - timedelta(**delta)).isoformat(), NOW)

    assert at(seconds=20) == "just now"
    assert at(minutes=3, seconds=10) == "3 min ago"
    assert at(hours=5) == "5 h ago"
    assert at(hours=30) == "yesterday"
    assert at(days=12) == "12 days ago"
    assert at(days=45) == "2026-10-16"


def test_the_listing_is_this_workspaces_answered_sessions(tmp_path: Path, aforo_home: Path) -> None:
    here, there = tmp_path / "here", tmp_path / "there"
    here.mkdir(), there.mkdir()
    mine = session(aforo_home, here, "How does the parser work?", days_old=0.002)
    theirs = session(aforo_home, there, "Another project's question")
    never = session(aforo_home, here, "asked while the server was down", answered=False)

    run = run_cli("sessions", "-w", str(here))
    assert run.code == 0, run.err
    assert mine in run.out and "How does the parser work?" in run.out and "2 min ago" in run.out
    assert theirs not in run.out and never not in run.out
    assert "1 more in other workspaces (--all)" in run.out and "1 never answered (--unanswered)" in run.out

    every = run_cli("sessions", "-w", str(here), "--all", "--unanswered")
    assert all(sid in every.out for sid in (mine, theirs, never))
    assert str(there.resolve()) in every.out  # with --all, each line says whose it is
    listed = json.loads(run_cli("sessions", "-w", str(here), "--json").out)
    assert [s["id"] for s in listed] == [mine] and listed[0]["answered"] is True


def test_on_a_terminal_every_line_fits_its_width(tmp_path: Path, aforo_home: Path) -> None:
    long_title = "Explain every function of the module that parses the configuration " * 3
    for n in range(3):
        session(aforo_home, tmp_path, f"{n} {long_title}")
    env = {**os.environ, "NO_COLOR": "1", "TERM": "dumb"}
    child = pexpect.spawn(
        AFORO, ["sessions", "--all", "-w", str(tmp_path)], env=env, encoding="utf-8", dimensions=(40, 80)
    )
    child.expect(pexpect.EOF, timeout=30)
    lines = [line for line in str(child.before).splitlines() if line.strip()]
    assert len(lines) >= 3 and all(len(line) <= 80 for line in lines), lines
    assert all(line.endswith("…") for line in lines[:3])  # the title was cut, not the id
    piped = run_cli("sessions", "--all", "-w", str(tmp_path))
    assert all(len(line) > 80 for line in piped.out.splitlines()[:3])  # a pipe gets whole lines


def test_prune_removes_old_sessions_and_their_checkpoints(tmp_path: Path, aforo_home: Path) -> None:
    old = session(aforo_home, tmp_path, "an old question", days_old=40, checkpoints=2)
    recent = session(aforo_home, tmp_path, "a recent question", days_old=2, checkpoints=1)
    elsewhere = session(aforo_home, tmp_path / "..", "old, in another workspace", days_old=90)
    assert len(list((aforo_home / "checkpoints" / old).glob("*.json"))) == 2

    dry = run_cli("sessions", "prune", "-w", str(tmp_path), "--older-than", "30d", "--dry-run")
    assert dry.code == 0 and old in dry.out and recent not in dry.out
    assert (aforo_home / "sessions" / f"{old}.json").exists()

    refused = run_cli("sessions", "prune", "-w", str(tmp_path), "--older-than", "30d")
    assert refused.code == 2 and "--yes" in refused.err  # no terminal to ask on: nothing removed
    assert (aforo_home / "sessions" / f"{old}.json").exists()

    done = run_cli("sessions", "prune", "-w", str(tmp_path), "--older-than", "30d", "--yes")
    assert done.code == 0, done.err
    assert "removed 1 session(s) and 2 checkpoint(s)" in done.out
    assert not (aforo_home / "sessions" / f"{old}.json").exists()
    assert not (aforo_home / "checkpoints" / old).exists()
    assert (aforo_home / "sessions" / f"{recent}.json").exists()
    assert len(list((aforo_home / "checkpoints" / recent).glob("*.json"))) == 1
    assert (aforo_home / "sessions" / f"{elsewhere}.json").exists()  # another workspace: not without --all


def test_prune_asks_on_a_terminal(tmp_path: Path, aforo_home: Path) -> None:
    never = session(aforo_home, tmp_path, "asked while the server was down", answered=False)
    kept = session(aforo_home, tmp_path, "answered")
    env = {**os.environ, "NO_COLOR": "1", "TERM": "dumb"}
    args = ["sessions", "prune", "--unanswered", "-w", str(tmp_path)]

    child = pexpect.spawn(AFORO, args, env=env, encoding="utf-8", timeout=30)
    child.expect_exact("Remove 1 session(s)? [y/N] ")
    child.sendline("n")
    child.expect(pexpect.EOF)
    assert (aforo_home / "sessions" / f"{never}.json").exists()

    child = pexpect.spawn(AFORO, args, env=env, encoding="utf-8", timeout=30)
    child.expect_exact("Remove 1 session(s)? [y/N] ")
    child.sendline("y")
    child.expect(pexpect.EOF)
    assert not (aforo_home / "sessions" / f"{never}.json").exists()
    assert (aforo_home / "sessions" / f"{kept}.json").exists()


def test_prune_needs_to_be_told_which(tmp_path: Path) -> None:
    run = run_cli("sessions", "prune", "-w", str(tmp_path), "--yes")
    assert run.code == 2 and "--older-than" in run.err
    bad = run_cli("sessions", "prune", "--older-than", "soon")
    assert bad.code == 2 and "not an age" in bad.err
