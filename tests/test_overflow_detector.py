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

PREV = Sample(3000, 2800)  # a good previous turn: calibrated ratio ~1.07


def assess(
    cur: Sample, *, new: int, window: int | None = None, exact: int | None = None, **kw: object
) -> Verdict:
    detector = TruncationDetector(**kw)  # type: ignore[arg-type]
    return detector.assess(PREV, cur, ratio=3000 / 2800, window=window, new_estimate=new, exact=exact)


def test_normal_growth_is_ok_and_says_what_was_expected() -> None:
    v = assess(Sample(3640, 3400), new=600)
    assert v.status == "ok"
    assert v.expected_tokens == 3000 + 643
    assert "3640" in v.reason and "3000" in v.reason


def test_no_usage_is_not_judged() -> None:
    assert assess(Sample(0, 3400), new=600).status == "ok"


def test_an_exact_count_decides_both_ways() -> None:
    # Growth looks perfect, but the exact count says 50 tokens went unread.
    v = assess(Sample(3640, 3400), new=600, exact=3690)
    assert (v.status, v.rule, v.expected_tokens) == ("truncated", "exact", 3690)
    # A tell-tale size that the exact count confirms is fine.
    assert assess(Sample(4096, 3400), new=600, exact=4096 + EXACT_TOLERANCE).status == "ok"
    assert assess(Sample(4096, 3400), new=600, exact=4096 + EXACT_TOLERANCE + 1).status == "truncated"


def test_a_prompt_that_shrank_or_stood_still_while_messages_were_added_is_truncated() -> None:
    for reported in (2964, 3000):
        v = assess(Sample(reported, 2900), new=100)
        assert (v.status, v.rule) == ("truncated", "shrank")


def test_the_seed_growth_rule_is_an_ingredient() -> None:
    v = assess(Sample(3016, 3350), new=550)
    assert (v.status, v.rule) == ("truncated", "growth")
    assert v.seems_real_window == 4096  # the smallest common window holding what the server read


def test_first_request_collapse_and_quiet_first_request() -> None:
    d = TruncationDetector()
    v = d.assess(None, Sample(63, 5000), ratio=1.0, window=32768, new_estimate=5000)
    assert (v.status, v.rule) == ("truncated", "first")
    assert d.assess(None, Sample(1200, 1100), ratio=1.0, window=32768, new_estimate=1100).status == "ok"


def test_telltale_sizes_are_suspect() -> None:
    for reported, window in ((6000, 6000), (3002, 6000), (4096, 32768), (2048, None)):
        prev = Sample(1900, 1800) if reported == 2048 else PREV
        v = TruncationDetector().assess(
            prev, Sample(reported, 3400), ratio=1.0, window=window, new_estimate=1
        )
        assert (v.status, v.rule) == ("suspect", "telltale"), (reported, window)


def test_a_report_under_a_window_the_new_content_could_have_crossed_is_suspect() -> None:
    # Ollama at 4096 dropped only the user's 20-token request: the report still grew, by 20 too little.
    v = assess(Sample(3000 + 1080, 3800), new=1000, window=32768)
    assert (v.status, v.rule, v.seems_real_window) == ("suspect", "crossing", 4096)


def test_crossing_needs_the_new_content_to_be_able_to_reach_the_window() -> None:
    # 3000 + 3.2 * 300 < 4096: no content this small could have crossed 4096.
    assert 3000 + MAX_CONTENT_RATIO * 300 < 4096
    assert assess(Sample(3330, 3100), new=300, window=32768).status == "ok"


def test_windows_above_the_believed_one_and_unlisted_ones_are_not_plausible() -> None:
    cur = Sample(4080, 3800)
    assert assess(cur, new=1000, window=4000).rule != "crossing"
    assert assess(cur, new=1000, window=None, windows=()).status == "ok"
    assert assess(cur, new=1000, window=4096, windows=()).rule == "crossing"


def test_growth_much_smaller_than_calibrated_is_suspect() -> None:
    # Under 200 estimated tokens the seed rule does not decide; the deficit does.
    v = assess(Sample(3040, 2950), new=150, window=None, windows=())
    assert (v.status, v.rule) == ("suspect", "deficit")
    assert assess(Sample(3100, 2950), new=150, window=None, windows=()).status == "ok"


def test_resolve_decides_from_the_new_contents_exact_size() -> None:
    d = TruncationDetector()
    v = assess(Sample(4080, 3800), new=1000, window=32768)
    dropped = d.resolve(v, 1080 + PROBE_TOLERANCE + 1)
    assert (dropped.status, dropped.rule, dropped.seems_real_window) == ("truncated", "probe", 4096)
    assert "older tokens were dropped" in dropped.reason and dropped.expected_tokens == 3000 + 1085
    kept = d.resolve(v, 1080 + PROBE_TOLERANCE)
    assert (kept.status, kept.rule) == ("ok", "probe")


def test_resolve_leaves_settled_verdicts_alone() -> None:
    v = assess(Sample(3640, 3400), new=600)
    assert TruncationDetector().resolve(v, 10_000) is v
