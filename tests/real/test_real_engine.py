"""`aforo --local` with the real engine: it answers about examples/demo after a real tool call, and a
second run starts without rebuilding. Uses the engine cache the outer `make test-real` filled (the
package's own, AFORO_ENGINE_HOME or the platform cache dir); prints how long each run took.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from aforo.engine.home import EngineHome
from aforo.engine.pins import LLAMA_SERVER

pytestmark = pytest.mark.real

AFORO = str(Path(sys.executable).parent / "aforo")
QUESTION = "Read wordfreq/counter.py and explain it."


def local_run(workspace: Path) -> tuple[float, int, list[dict[str, Any]], str]:
    args = [AFORO, "--local", "--yes", "-w", str(workspace), "--json", QUESTION]
    started = time.monotonic()
    proc = subprocess.run(args, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    return time.monotonic() - started, proc.returncode, events, proc.stderr


def test_local_answers_about_the_demo_after_a_real_tool_call_and_reruns_without_building(
    demo_workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stamp = EngineHome.from_env(dict(os.environ)).engine_dir(LLAMA_SERVER) / "stamp.json"
    built_at = stamp.stat().st_mtime_ns
    times = []
    for _run in range(2):
        seconds, code, events, err = local_run(demo_workspace)
        assert code == 0, err
        started = {e["id"]: e for e in events if e["type"] == "tool_start"}
        reads = [started[e["id"]]["input"] for e in events if e["type"] == "tool_end" and e["ok"]]
        assert any("counter.py" in str(r.get("file_path")) for r in reads), events
        answer = "".join(e["text"] for e in events if e["type"] == "text_delta")
        # Names the model can only know from the file it read.
        assert "count_words" in answer or "top_words" in answer, answer
        assert "building llama-server" not in err
        times.append(seconds)
    assert stamp.stat().st_mtime_ns == built_at  # nothing was rebuilt
    with capsys.disabled():
        print(f"\naforo --local on examples/demo: {times[0]:.1f} s, then {times[1]:.1f} s (engine cached)")
