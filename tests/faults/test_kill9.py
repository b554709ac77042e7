"""kill -9 at random moments of compacting runs: every state file is a whole version (the old or the
new one, never torn), the session never goes back in time, and `--resume` goes on from it."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

from aforo.store.checkpoints import load_checkpoint
from aforo.store.sessions import SessionStore
from aforo.store.telemetry import Telemetry
from faults.server import misbehaving_app, ok_sse
from support.cli import run_cli
from support.live_server import LiveServer

WORKER = Path(__file__).with_name("kill_worker.py")
KILLS = 30


def start(workspace: Path, run: int) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, str(WORKER), str(workspace), str(run)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=dict(os.environ),
    )


def check_state(home: Path, last_update: str) -> str:
    """Every session and checkpoint file loads whole; the session is not older than before."""
    store = SessionStore(home / "sessions")
    listing = store.list()
    assert all(s.error is None for s in listing), [s.error for s in listing]
    assert len(listing) == 1
    record = store.load(listing[0].id)
    assert record.messages and "read every file of this run" in record.messages[0].text
    assert record.updated_at >= last_update
    for path in (home / "checkpoints").rglob("*.json"):
        if not path.name.startswith("."):
            load_checkpoint(path)
    with Telemetry() as telemetry:
        telemetry.rows()
    return record.updated_at


def test_kill_9_during_compacting_runs_keeps_every_file_whole_and_resume_works(
    tmp_path: Path, aforo_home: Path
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    rng = random.Random(9)
    kills, run, updated = 0, 0, ""
    while kills < KILLS:
        run += 1
        worker = start(workspace, run)
        assert worker.stdout is not None
        started = worker.stdout.readline()
        assert started == b"started\n", worker.communicate()[1].decode()[-2000:]
        # A run takes a few hundred milliseconds: a kill lands in a turn, a save or a compaction.
        try:
            worker.wait(timeout=rng.uniform(0.0, 0.35))
        except subprocess.TimeoutExpired:
            worker.kill()
            kills += 1
        worker.wait()
        updated = check_state(aforo_home, updated)
    assert len(list((aforo_home / "checkpoints").rglob("*.json"))) >= 10  # the runs did compact

    finished = start(workspace, run + 1)
    out, err = finished.communicate(timeout=60)
    assert finished.returncode == 0 and out.endswith(b"end_turn\n"), (out + err).decode()[-2000:]
    check_state(aforo_home, updated)

    with LiveServer(misbehaving_app(lambda n: ok_sse("resumed after the kills"))) as server:
        flags = ("-w", str(workspace), "--base-url", f"{server.url}/v1", "--server", "openai", "-m", "m")
        resumed = run_cli(*flags, "--context-window", "4096", "--resume", "and now?")
    assert resumed.code == 0, resumed.err
    assert "resumed" in resumed.out and "resumed after the kills" in resumed.out
