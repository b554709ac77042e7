"""The seed's growth rule (SPEC §4) on the seed's own numbers, and generation-time loss (issue 5 item 6)."""

from __future__ import annotations

from pathlib import Path

import pytest

from aforo.context.overflow import (
    OVERFLOW_MIN_FIRST,
    OVERFLOW_MIN_GROWTH,
    OVERFLOW_MIN_GROWTH_COMPACT,
    generation_overflow,
    looks_truncated,
    unread,
)
from aforo.context.tokens import Sample
from aforo.providers.fake import FakeProvider, Truncate
from support.scenario import make_agent, make_files, reader_model


@pytest.mark.parametrize(
    ("prev", "cur", "compaction", "truncated"),
    [
        # Growth ratio 0.1: 1000 estimated tokens added, a report that grew by 100 read them (exactly
        # the ratio is not truncation), one that grew by 99 did not.
        (Sample(3000, 3000), Sample(3100, 4000), False, False),
        (Sample(3000, 3000), Sample(3099, 4000), False, True),
        # Minimum growth 200: a report that did not grow at all is undecided below it, caught from it.
        (Sample(3000, 3000), Sample(3000, 3199), False, False),
        (Sample(3000, 3000), Sample(3000, 3200), False, True),
        # The compaction request's minimum, 50, in the same way.
        (Sample(3000, 3000), Sample(3000, 3049), True, False),
        (Sample(3000, 3000), Sample(3000, 3050), True, True),
        # A first request is decided from 500 estimated tokens, by the same ratio: under 50 reported.
        (None, Sample(1, 499), False, False),
        (None, Sample(49, 500), False, True),
        (None, Sample(50, 500), False, False),
    ],
)
def test_the_seed_constants_decide_at_their_boundaries(
    prev: Sample | None, cur: Sample, compaction: bool, truncated: bool
) -> None:
    if compaction:
        assert looks_truncated(prev, cur, OVERFLOW_MIN_GROWTH_COMPACT) is truncated
    else:
        assert looks_truncated(prev, cur) is truncated


def test_growth_of_about_600_per_turn_is_not_truncation() -> None:
    # New messages of ~550 estimated tokens, the reported prompt grows ~600: ratio 1.1.
    prev = Sample(3000, 2750)
    assert not looks_truncated(prev, Sample(3600, 3300))
    assert not looks_truncated(Sample(3600, 3300), Sample(4205, 3850))


@pytest.mark.parametrize("growth", [-36, 16, 14, 21])
def test_the_seeds_truncated_growths_are_caught(growth: int) -> None:
    # Measured on Ollama once the window was full: the estimate kept growing ~550, the report did not.
    prev = Sample(3700, 4500)
    cur = Sample(3700 + growth, 5050)
    assert (cur.tokens - prev.tokens) / (cur.estimate - prev.estimate) < 0.04
    assert looks_truncated(prev, cur)


def test_whitespace_growth_of_022_is_not_truncation() -> None:
    # The lowest clean ratio the seed saw: repeated whitespace, 0.22 tokens per estimated token.
    assert not looks_truncated(Sample(2000, 2000), Sample(2000 + 220, 3000))


def test_growth_under_the_minimum_is_not_decided() -> None:
    prev = Sample(3700, 4500)
    assert not looks_truncated(prev, Sample(3700, 4500 + OVERFLOW_MIN_GROWTH - 1))
    assert looks_truncated(prev, Sample(3700, 4500 + OVERFLOW_MIN_GROWTH))


def test_compaction_uses_a_smaller_minimum_growth() -> None:
    prev, cur = Sample(3000, 3000), Sample(3002, 3080)
    assert not looks_truncated(prev, cur)
    assert looks_truncated(prev, cur, OVERFLOW_MIN_GROWTH_COMPACT)


@pytest.mark.parametrize("estimate", [3975, 17701])
def test_a_first_request_reporting_63_is_truncated(estimate: int) -> None:
    assert looks_truncated(None, Sample(63, estimate))


def test_small_first_requests_and_missing_usage_are_not_decided() -> None:
    assert not looks_truncated(None, Sample(63, OVERFLOW_MIN_FIRST - 1))
    assert not looks_truncated(None, Sample(900, 1000))
    assert not looks_truncated(Sample(3700, 4500), Sample(0, 9000))
    assert not looks_truncated(None, Sample(0, 9000))


def test_generation_overflow_is_prompt_plus_completion_over_the_window() -> None:
    # llama-server --context-shift reported total_tokens 4566 with n_ctx 4096.
    assert generation_overflow(3900, 666, 4096)
    assert not generation_overflow(3072, 1024, 4096)
    assert generation_overflow(3073, 1024, 4096)
    assert not generation_overflow(0, 0, 4096)


def test_the_measuring_requests_share_no_prefix_with_the_conversation(tmp_path: Path) -> None:
    # A probe that began like the conversation (its system prompt and tools) made llama-server reuse the
    # conversation's slot in place and lose its cache; one without the system prompt is served beside it.
    files = make_files(tmp_path, 6, 6000)
    provider = FakeProvider(reader_model(files, batch=False), truncate=Truncate(1500, "plateau"))
    agent, _, _ = make_agent(tmp_path, provider, window=16_000)
    agent.run("Task BRAVO-2718: read every mod*.py file and tell me which one is the longest.")
    probes = [r for r in provider.requests if r.max_tokens == 1]
    turns = [r for r in provider.requests if r.max_tokens > 1]
    assert probes and turns
    assert all(r.system == () for r in probes) and all(r.system for r in turns)
    assert all(r.tools == turns[0].tools for r in probes)  # the same framing of the new messages
    assert all(r.messages[0].text == "." for r in probes)


def test_unread_is_decided_by_the_exact_count_alone_when_there_is_one() -> None:
    """The one check the detector and the summary request share: an exact count overrides the growth
    rule both ways, and a missing report proves nothing."""
    prev = Sample(3000, 3000)
    stalled = Sample(3000, 4000)  # the growth rule calls this truncated
    assert unread(prev, stalled, exact=None)
    assert not unread(prev, stalled, exact=3004)  # within the template's slack of the exact count
    assert unread(prev, Sample(3100, 3100), exact=3105)  # grew, but short of the exact count
    assert not unread(prev, Sample(0, 4000), exact=3105)
    # A summary request is judged against the conversation's last with the smaller minimum growth.
    small = Sample(3000, 3100)
    assert not unread(prev, small, exact=None)
    assert unread(prev, small, exact=None, min_growth=OVERFLOW_MIN_GROWTH_COMPACT)
