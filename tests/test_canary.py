"""The canary of SPEC §5 as a test: ~100 KB compacted to fit an 8k window, task marker intact."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1] / "bench"))

from canary import run_canary


def test_canary_fits_an_8k_window_with_the_marker_intact() -> None:
    r = run_canary()
    assert r.bytes_before >= 100_000
    assert r.summary_prompt_tokens <= r.available, "the summary request itself must fit"
    assert r.tokens_after <= r.available
    assert r.bytes_after < r.bytes_before / 10
    assert r.marker_intact
