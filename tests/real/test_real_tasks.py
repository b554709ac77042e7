"""A fast subset of the real-model task suite (bench/real_tasks.py, `make bench-real`): the model keeps
working past its first call, never copies aforo's own text, and aforo's truncation checks do not cost
the conversation its place in the server's prompt cache."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import httpx
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from real_tasks import AFORO, TASKS, Task, run_task
from recording_proxy import RecordingProxy

pytestmark = pytest.mark.real


def task(name: str) -> Task:
    return next(t for t in TASKS if t.name == name)


def test_three_files_are_read_in_one_constrained_step_and_the_run_answers(
    real_base_url: str, real_model: str
) -> None:
    row = run_task(task("three-files"), real_base_url, real_model, no_counter=False)
    assert row.files_ok, row.answers  # alpha.py, beta.py and gamma.py: not one file, then prose
    assert row.endings == ["end_turn"] and row.answers[0].strip()
    assert row.copied == 0


def test_follow_ups_each_read_their_file_and_none_copies_aforo(real_base_url: str, real_model: str) -> None:
    follow = task("follow-ups")
    short = Task(follow.name, follow.workspace, follow.asks[:3], follow.what)
    row = run_task(short, real_base_url, real_model, no_counter=False)
    assert row.files_ok and row.endings == ["end_turn"] * 3
    assert row.copied == 0, row.answers  # the measurement: 18 of 18 copied a hint line


def test_a_truncation_check_leaves_the_conversation_in_the_cache(
    real_base_url: str, real_server_url: str
) -> None:
    # No counter and no window: the ten files read in one step are checked with a probe; the request
    # after it must still find the conversation in llama-server's cache.
    ws = Path(__file__).resolve().parents[2] / "examples" / "tasks" / "modules"
    args = [
        "-w",
        str(ws),
        "-m",
        "m",
        "--temperature",
        "0",
        "--server",
        "openai",
        "--tool-mode",
        "constrained",
    ]
    with RecordingProxy(real_server_url) as proxy, tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "AFORO_HOME": tmp, "XDG_CONFIG_HOME": tmp}
        httpx.post(f"{real_server_url}/slots/0?action=erase", timeout=30)
        done = subprocess.run(
            [AFORO, *args, "--base-url", f"{proxy.url}/v1", task("ten-files").asks[0].prompt],
            capture_output=True,
            text=True,
            env=env,
            timeout=900,
            check=False,
        )
        records = proxy.take()
    assert done.returncode == 0, done.stderr[-2000:]
    kinds = [r.kind for r in records]
    assert "verify" in kinds, kinds
    after = next(i for i, k in enumerate(kinds) if k == "verify" and "chat" in kinds[i:])
    before_chat = [r for r in records[:after] if r.kind == "chat"][-1]
    next_chat = next(r for r in records[after:] if r.kind == "chat")
    # Everything the conversation had evaluated before the probe is reused after it.
    assert next_chat.cache_n >= before_chat.cache_n + before_chat.prompt_n - 8, records
