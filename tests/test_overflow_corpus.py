"""The corpus of issue 5: the detector catches every truncated turn, first crossings included, and flags
no clean turn; the seed's rule visibly misses first crossings. The committed corpus is reproducible."""

from __future__ import annotations

import filecmp
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).parent.parent / "bench"


def _load(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


signal = _load("overflow_signal", BENCH / "overflow_signal.py")
generate = _load("overflow_corpus_generate", BENCH / "overflow_corpus" / "generate.py")
CORPUS = signal.load("non_truncated") + signal.load("truncated")


def test_detector_has_full_recall_and_no_false_positives() -> None:
    result = signal.score(CORPUS, signal.replay_detector)
    assert result["truncated_turns"] > 500 and result["first_crossings"] >= 300
    assert result["recall"] == 1.0
    assert result["first_recall"] == 1.0
    assert result["false_positives"] == 0


def test_the_seed_rule_misses_first_crossings_without_false_positives() -> None:
    result = signal.score(CORPUS, signal.replay_seed)
    assert result["first_recall"] < 0.6
    assert result["false_positives"] == 0
    by_mode = signal.first_crossing_by_mode(CORPUS, signal.replay_seed)
    assert by_mode["first_crossing_small"][0] == 0


def test_an_exact_counter_alone_is_enough() -> None:
    result = signal.score(CORPUS, lambda s: signal.replay_detector(s, exact=True))
    assert (result["recall"], result["false_positives"], result["probes"]) == (1.0, 0, 0)


def test_clean_sessions_mix_every_kind_of_content() -> None:
    # The corpus spans the ratios that make tokens/estimate useless as a signal on its own.
    data = signal.threshold_data(CORPUS)
    assert data["clean growth / estimated growth, min (seed 0.1)"] < 0.3
    assert data["new tokens / new estimate, max (MAX_CONTENT_RATIO 3.2)"] > 2.5


def test_the_committed_corpus_is_what_the_seeded_generator_writes(tmp_path: Path) -> None:
    generate.main(tmp_path)
    for name in ("non_truncated.json", "truncated.json", "blind_spots.json"):
        assert filecmp.cmp(tmp_path / name, BENCH / "overflow_corpus" / name, shallow=False), name
