"""Every clearing and compaction of a CLI run leaves a 0600 checkpoint and a telemetry record, and
`aforo stats --json` reports them (issue 7)."""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

from dialects.openai_app import Call, Reply
from dialects.truncating_app import Seen, TruncatingServer
from support.cli import run_cli
from support.live_server import LiveServer
from support.scenario import make_files

SUMMARY = "Goal: find the longest file (LONGEST-8).\nEvidence: read mod00.py..mod07.py.\nNext action: answer."


def two_then_six(files: list[str]):
    """Reads two files, then asks for the other six until it has a result for each (each step reads
    what room allows); with results it has read cleared (a result not read yet never is)."""

    def answer(seen: Seen) -> Reply:
        if not seen.tools:
            return Reply(text=SUMMARY)
        results = sum(m.get("role") == "tool" for m in seen.messages)
        if "compacted" not in json.dumps(seen.messages) and results < len(files):
            batch = files[:2] if results == 0 else files[2:]
            return Reply(calls=[Call("Read", json.dumps({"file_path": f})) for f in batch])
        return Reply(text="mod07.py is the longest (LONGEST-8).")

    return answer


def test_transformations_leave_checkpoints_and_records(tmp_path: Path, aforo_home: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    files = make_files(ws, 8, 3000)
    # A batch of reads never fills the window past compaction (each call is counted at the cap): with
    # one result kept, compaction as soon as clearing, and a long request, the run does both.
    (ws / ".aforo.toml").write_text("[policy]\nkeep_tool_results = 1\nclear_at = 0.6\ncompact_at = 0.6\n")
    server = TruncatingServer(two_then_six(files), window=4096)
    with LiveServer(server.app) as live:
        run = run_cli(
            "-w", str(ws), "--base-url", f"{live.url}/v1", "-m", "test-model", "--context-window", "4096",
            "--json", "Task LONGEST-8: read the eight mod*.py files; which is the longest?" + " lorem" * 500,
        )  # fmt: skip
    assert run.run_end()["reason"] == "end_turn", run.out[-2000:]
    actions = [e for e in run.events() if e["type"] == "context"]
    done = [a["action"] for a in actions]
    assert set(done) == {"cleared", "compacted"}

    checkpoints = sorted((aforo_home / "checkpoints").rglob("*.json"))
    # Each transformation's own, and those of compactions that were tried and refused (the long request,
    # kept verbatim, left them saving nothing): a checkpoint comes first, whatever follows.
    assert len(checkpoints) >= len(actions)
    for path in checkpoints:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
        data: dict[str, Any] = json.loads(path.read_text())
        assert data["kind"] == "aforo.checkpoint" and "LONGEST-8" in data["goal"]
        assert data["messages"][0]["content"][0]["text"].startswith("Task LONGEST-8")
    assert {a["checkpoint"] for a in actions} <= {json.loads(p.read_text())["id"] for p in checkpoints}

    stats = run_cli("stats", "--json")
    assert stats.code == 0, stats.err
    overall = json.loads(stats.out)["overall"]
    assert overall["events"]["clearing"] == done.count("cleared")
    assert overall["events"]["compaction"] == done.count("compacted") == 1
    assert overall["events"]["admission"] >= 2
    records = [json.loads(line) for line in run_cli("stats", "--export").out.splitlines()]
    compaction = next(r for r in records if r["event"] == "compaction")
    assert compaction["checkpoint"].endswith(".json") and Path(compaction["checkpoint"]).exists()
    assert compaction["bytes_before"] > compaction["bytes_after"] > 0
    assert compaction["model"] == "test-model" and compaction["window"] == 4096
