"""The governor against the real llama-server (-c 4096) and a real model: the window comes from the
server, counts are exact and equal the server's own, a stage fires and the run stays inside the window
and ends end_turn, and an over-window conversation is refused loudly, never answered."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from support.cli import run_cli

pytestmark = [pytest.mark.real, pytest.mark.timeout(900)]
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "overflow.py"


def turn_ends(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in events if e["type"] == "turn_end"]


def test_window_from_the_server_and_exact_counts_every_turn(
    real_base_url: str, real_model: str, demo_workspace: Path
) -> None:
    run = run_cli(
        "-w", str(demo_workspace), "--base-url", real_base_url, "-m", real_model,
        "--max-turns", "6", "--json", "Read wordfreq/counter.py and explain it.", timeout=600,
    )  # fmt: skip
    events = run.events()
    info = next(e for e in events if e["type"] == "info")
    assert info["window"] == 4096 and "llama.cpp" in info["window_source"], info
    assert info["counter"] != "estimate"
    turns = turn_ends(events)
    assert turns, run.out[-2000:]
    for turn in turns:
        usage = turn["usage"]
        reported = usage["input_tokens"] + usage["cache_read_tokens"] + usage["cache_write_tokens"]
        assert turn["exact"] is True
        assert turn["context"] == reported, turn


def test_a_stage_fires_in_a_4096_window_and_the_run_ends_end_turn(
    real_base_url: str, real_model: str, tmp_path: Path
) -> None:
    # Plain text: a long Python file is shown as its outline and the definition asked for (within the cap,
    # nothing for a stage to do), and a code-like name in the question would be found by the pre-search.
    body = "".join(f"route {n} answers with status {200 + n % 5}\n" for n in range(800))
    # A fixed workspace name: the system prompt names it, and a greedy model's answer follows the prompt.
    workspace = tmp_path / "shop"
    (workspace / "app").mkdir(parents=True)
    (workspace / "app" / "routes.txt").write_text(body)
    # A short answer budget and few turns keep a 2-core run bounded: the 0.5B model is slow and verbose.
    run = run_cli(
        "-w", str(workspace), "--base-url", real_base_url, "-m", real_model, "--context-window", "4096",
        "--max-tokens", "256", "--max-turns", "4", "--no-search", "--json",
        "Read app/routes.txt and tell me the status of route 3.", timeout=600,
    )  # fmt: skip
    events = run.events()
    capped = [e for e in events if e["type"] == "tool_end" and e["truncated"]]
    actions = [e for e in events if e["type"] == "context"]
    assert capped or actions, "a stage must fire: the file is larger than the cap"
    end = run.run_end()
    assert (end["reason"], run.code) == ("end_turn", 0), run.out[-3000:]
    turns = turn_ends(events)
    assert len(turns) == end["turns"] >= 2, "the model must have been asked again after the capped read"
    # Every request fitted what the governor had to give, as the server itself counted it.
    assert all(not t["truncated"] and t["exact"] for t in turns), turns
    assert max(t["context"] for t in turns) <= 4096 - 256
    answer = [e for e in events[events.index(capped[-1]) if capped else 0 :] if e["type"] == "text_delta"]
    assert answer, "the model answered after the capped result reached it"


def test_overflow_example_is_refused_loudly_by_llama_server(real_base_url: str, real_model: str) -> None:
    proc = subprocess.run(
        [sys.executable, str(EXAMPLE), "--base-url", real_base_url, "--model", real_model],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert "refused it as too long" in proc.stdout and "n_ctx 4096" in proc.stdout, proc.stdout
