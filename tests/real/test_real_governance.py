"""Clearing and compaction with the real model: each leaves a 0600 checkpoint and a telemetry record
that `aforo stats --json` reports, the model carries on after a compaction, and /undo brings back what
the compaction replaced. Protocol facts only; the model's wording is its own."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pexpect
import pytest

from support.cli import AFORO, run_cli

pytestmark = pytest.mark.real
PROMPT = "aforo> "
MODEL_TIMEOUT_S = 300  # one answer of up to 1024 tokens at ~45 tok/s on 2 cores, plus the prompt


def checkpoint_files(home: Path) -> list[Path]:
    return sorted((home / "checkpoints").glob("*/*.json"))


def session_stats(session: str) -> dict[str, Any]:
    run = run_cli("stats", "--session", session, "--json")
    assert run.code == 0, run.err
    stats: dict[str, Any] = json.loads(run.out)["sessions"][session]
    return stats


def assert_private(paths: list[Path]) -> None:
    for path in paths:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
        assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700, path.parent


def test_automatic_clearing_leaves_a_checkpoint_and_a_record(
    real_base_url: str, real_model: str, tmp_path: Path, aforo_home: Path
) -> None:
    workspace = tmp_path / "shop"
    (workspace / "app").mkdir(parents=True)
    body = "".join(f"def handler_{n}(request):\n    return {{'status': {200 + n % 5}}}\n" for n in range(400))
    (workspace / "app" / "handlers.py").write_text(body)
    (workspace / "app" / "models.py").write_text(
        "class Order:\n    total = 0\n\n\nclass Customer:\n    name = ''\n"
    )
    # Policy from the workspace's config file: clear early and keep no old result, so the capped read of
    # the first question is cleared when the second is asked (a result the model has not read yet is
    # never cleared: it could only ask for it again).
    (workspace / ".aforo.toml").write_text("[policy]\nkeep_tool_results = 0\nclear_at = 0.3\n")
    flags = ("-w", str(workspace), "--base-url", real_base_url, "-m", real_model, "--max-tokens", "256")
    flags += ("--max-turns", "4", "--json")
    first = run_cli(*flags, "Read app/handlers.py and explain it.", timeout=600)
    assert first.run_end()["reason"] == "end_turn", first.out[-3000:]
    run = run_cli(
        *flags, "--resume", "Now read app/models.py and tell me which classes it defines.", timeout=600
    )
    events = run.events()
    cleared = [e for e in events if e["type"] == "context" and e["action"] == "cleared"]
    assert cleared, run.out[-3000:]
    assert all(e["after"] < e["before"] for e in cleared)
    assert (run.run_end()["reason"], run.code) == ("end_turn", 0), run.out[-3000:]
    session = next(e["session"] for e in events if e["type"] == "info" and "session" in e).split(" ")[0]
    files = checkpoint_files(aforo_home)
    assert len(files) == len(cleared) and all(f.parent.name == session for f in files)
    assert_private(files)
    stats = session_stats(session)
    assert stats["events"]["clearing"] == len(cleared)
    assert stats["tokens_saved"]["clearing"] == sum(e["before"] - e["after"] for e in cleared)


def test_compact_carry_on_and_undo_in_the_repl(
    real_base_url: str, real_model: str, demo_workspace: Path, aforo_home: Path
) -> None:
    env = {**os.environ, "NO_COLOR": "1", "TERM": "dumb"}
    args = ["-w", str(demo_workspace), "--base-url", real_base_url, "-m", real_model]
    child = pexpect.spawn(
        AFORO, args, env=env, encoding="utf-8", timeout=MODEL_TIMEOUT_S, dimensions=(50, 160)
    )
    child.expect_exact(PROMPT)
    header = str(child.before)
    session = header.split("session: ", 1)[1].split()[0]

    def say(line: str) -> str:
        child.sendline(line)
        child.expect_exact(PROMPT)
        return str(child.before)

    # Two reads and answers: a conversation a summary can beat by a clear margin. (On one short exchange
    # aforo rightly refuses a compaction whose summary would not save room.)
    assert "[end_turn]" in say("Read wordfreq/counter.py and explain it.")
    assert "[end_turn]" in say("Read wordfreq/cli.py and explain it.")
    out = say("/compact keep the function names")
    assert "~ conversation compacted:" in out, out
    files = checkpoint_files(aforo_home)
    assert len(files) == 1
    assert_private(files)
    assert session_stats(session)["events"]["compaction"] == 1

    # The run carries on from the code, not from the summary alone: the model reads again the files the
    # evidence list names, or aforo's pre-search (a Grep for the question's words) shows it the lines,
    # then it answers. (With an acknowledgement of aforo's after the summary, its one example of an
    # answer, it answered at once from the summary and, with Read's outlines, invented a `jso` function
    # until its output limit.)
    out = say("Which function breaks ties, and how?")
    assert ("> Read" in out or "> Grep" in out) and "[end_turn]" in out, out
    out = say("/undo")
    assert "undo: 8 messages came back (2 tool results)" in out, out
    assert "the conversation it replaced is kept in checkpoint" in out
    assert len(checkpoint_files(aforo_home)) == 2  # the compaction's, and the one this undo took first
    stats = session_stats(session)
    assert stats["events"]["recovery"] == 1
    child.sendline("/quit")
    child.expect(pexpect.EOF)
