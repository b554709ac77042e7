"""TruncationDetector, one ingredient at a time: exact counts, growth, tell-tale sizes, window crossings,
growth deficits, and settling a suspicion with the measured size of the new content."""

from __future__ import annotations

from aforo.context.overflow import (
    EXACT_TOLERANCE,
    MAX_CONTENT_RATIO,
    PROBE_TOLERANCE,
    TruncationDetector,
    Verdict,
)
from aforo.context.tokens import Sample

PREV = Sample(5000, 4700)  # a good previous turn: calibrated ratio ~1.064
RATIO = 5000 / 4700


def assess(
    cur: Sample,
    *,
    new: int,
    window: int | None = 32768,
    exact: int | None = None,
    windows: tuple[int, ...] | None = None,
    old_cached: int = 0,
) -> Verdict:
    detector = TruncationDetector() if windows is None else TruncationDetector(windows)
    return detector.assess(
        PREV, cur, ratio=RATIO, window=window, new_estimate=new, exact=exact, old_cached=old_cached
    )


def test_normal_growth_is_ok_and_says_what_was_expected() -> None:
    v = assess(Sample(5640, 5300), new=600)
    assert (v.status, v.expected_tokens) == ("ok", 5000 + 639)
    assert "5640" in v.reason and "5000" in v.reason and "5639" in v.reason


def test_no_usage_is_not_judged() -> None:
    assert assess(Sample(0, 5300), new=600).status == "ok"


def test_an_exact_count_decides_both_ways() -> None:
    # Growth looks perfect, but the exact count says 50 tokens went unread.
    v = assess(Sample(5640, 5300), new=600, exact=5690)
    assert (v.status, v.rule, v.expected_tokens) == ("truncated", "exact", 5690)
    # A tell-tale size that the exact count confirms is fine; one more token short is a loss.
    assert assess(Sample(8192, 7700), new=3000, exact=8192 + EXACT_TOLERANCE).status == "ok"
    assert assess(Sample(8192, 7700), new=3000, exact=8192 + EXACT_TOLERANCE + 1).status == "truncated"


def test_a_prompt_that_shrank_or_stood_still_while_messages_were_added_is_truncated() -> None:
    for reported in (4964, 5000):
        v = assess(Sample(reported, 4800), new=100)
        assert (v.status, v.rule) == ("truncated", "shrank")


def test_the_seed_growth_rule_is_an_ingredient() -> None:
    d = TruncationDetector()
    v = d.assess(Sample(3000, 2800), Sample(3016, 3350), ratio=1.07, window=32768, new_estimate=550)
    assert (v.status, v.rule) == ("truncated", "growth")
    # The smallest common window that holds what the server read but not what could have been sent.
    assert v.seems_real_window == 4096


def test_without_a_plausible_window_the_largest_prompt_read_whole_is_suggested() -> None:
    v = assess(Sample(5016, 5250), new=550)
    assert (v.status, v.seems_real_window) == ("truncated", 5016)


def test_first_request_collapse_and_quiet_first_request() -> None:
    d = TruncationDetector()
    v = d.assess(None, Sample(63, 5000), ratio=1.0, window=32768, new_estimate=5000)
    assert (v.status, v.rule) == ("truncated", "first")
    assert d.assess(None, Sample(1200, 1100), ratio=1.0, window=32768, new_estimate=1100).status == "ok"


def test_telltale_sizes_are_suspect() -> None:
    # The believed window, its half + 2 (context shift), a common default: each while the estimate grew.
    for reported, window in ((6000, 6000), (3002, 6000), (4096, 32768), (2048, None)):
        prev = Sample(reported - 500, 2800)
        v = TruncationDetector().assess(
            prev, Sample(reported, 3400), ratio=1.0, window=window, new_estimate=1
        )
        assert (v.status, v.rule) == ("suspect", "telltale"), (reported, window)


def test_a_report_under_a_window_the_new_content_could_have_crossed_is_suspect() -> None:
    # Ollama at 8192 dropped only the user's 20-token request: the report still grew, 20 too little.
    v = assess(Sample(8150, 7700), new=3000)
    assert (v.status, v.rule, v.seems_real_window) == ("suspect", "crossing", 8192)


def test_a_cache_hit_over_the_old_part_settles_a_crossing_and_only_that() -> None:
    v = assess(Sample(8150, 7700), new=3000, old_cached=4990)
    assert (v.status, v.rule) == ("ok", "cache")
    assert "first 4990 tokens from its cache" in v.reason
    # Evidence of a drop stays evidence: the hit does not outweigh a prompt that shrank or a tell-tale.
    assert assess(Sample(4990, 7700), new=3000, old_cached=4990).status == "truncated"
    assert assess(Sample(8192, 7700), new=3000, old_cached=4990).rule == "telltale"


def test_crossing_needs_the_new_content_to_be_able_to_reach_the_window() -> None:
    assert 5000 + MAX_CONTENT_RATIO * 300 < 8192  # no content this small could have crossed 8192
    assert assess(Sample(5330, 5000), new=300).status == "ok"


def test_windows_above_the_believed_one_and_unlisted_ones_are_not_plausible() -> None:
    cur = Sample(8150, 7700)
    assert assess(cur, new=3000, window=8000).rule != "crossing"
    assert assess(cur, new=3000, window=None, windows=()).status == "ok"
    assert assess(cur, new=3000, window=8192, windows=()).rule == "crossing"


def test_growth_much_smaller_than_calibrated_is_suspect() -> None:
    # Under 200 estimated tokens the seed rule does not decide; the deficit does.
    v = assess(Sample(5040, 4850), new=150, windows=())
    assert (v.status, v.rule) == ("suspect", "deficit")
    assert assess(Sample(5100, 4850), new=150, windows=()).status == "ok"


def test_resolve_decides_from_the_new_contents_exact_size() -> None:
    d = TruncationDetector()
    v = assess(Sample(8150, 7700), new=3000)
    dropped = d.resolve(v, 3150 + PROBE_TOLERANCE + 1)
    assert (dropped.status, dropped.rule, dropped.seems_real_window) == ("truncated", "probe", 8192)
    assert "older tokens were dropped" in dropped.reason and dropped.expected_tokens == 5000 + 3155
    kept = d.resolve(v, 3150 + PROBE_TOLERANCE)
    assert (kept.status, kept.rule) == ("ok", "probe")


def test_resolve_leaves_settled_verdicts_alone() -> None:
    v = assess(Sample(5640, 5300), new=600)
    assert TruncationDetector().resolve(v, 10_000) is v
