"""The governor's canaries on the real model (`make canary`, bench/real_canary.py) as a test: on both lanes
the ~100 KB conversation is compacted for the 8192-token window and the next answer ends with `stop`, holds
the marker of the first user message and comes from the conversation's model; the fast lane's telemetry
shows both models served. It starts its own llama-servers (one, then two on one thread each)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

from real_canary import FAST_ALIAS, MAIN_ALIAS, run_canaries

# Two canaries on 2 cores: a summary of up to 2048 tokens each, and the fast lane on single threads.
pytestmark = [pytest.mark.real, pytest.mark.timeout(2400)]


def test_both_lanes_end_with_stop_the_marker_and_the_main_model(tmp_path: Path) -> None:
    rows, stats = run_canaries(("standard", "fast"), tmp_path)
    by_lane = {row.lane: row for row in rows}
    assert set(by_lane) == {"standard", "fast"}
    for row in rows:
        assert row.original_bytes >= 100_000 and row.compacted_bytes < row.original_bytes / 4, row
        assert row.input_tokens == row.counted_tokens, "aforo's count of the request is the server's own"
        assert row.finish == "stop", row
        assert row.marker_in_answer, row.answer
        assert row.restored and row.model_after == MAIN_ALIAS, row
    assert by_lane["standard"].summary_by == MAIN_ALIAS
    assert by_lane["fast"].summary_by == FAST_ALIAS
    fast_lane = next(line for line in stats.splitlines() if line.strip().startswith("fast "))
    standard_lane = next(line for line in stats.splitlines() if line.strip().startswith("standard "))
    assert FAST_ALIAS in fast_lane and MAIN_ALIAS in standard_lane, stats
