"""Silent truncation: did the server read the whole prompt it was sent? (SPEC §4, issue 5)

A server may answer HTTP 200 after dropping the oldest messages, where the user's task is. The only
evidence is the prompt size it reports. `looks_truncated` is the seed's rule: the reported count stops
growing while the estimate grows. It misses the turn that first crosses the window, where Ollama drops
just the oldest message (often only the user's request) and the count still grows, by a little less.

`TruncationDetector` adds cheap evidence that turns such a turn into a *suspicion*: the report sits
just under a window the server plausibly runs while the new content could have crossed it, the report
equals a tell-tale size, or it grew much less than the calibrated ratio predicts. A suspicion is settled
by an exact fact: the count of the new content alone (`resolve`), since appending messages adds at
least their own tokens. Thresholds come from the corpus in `bench/overflow_corpus/`; docs/governor.md has
the numbers. Pure: no I/O, the caller does the measuring.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Literal

from aforo.context.tokens import Sample

# The seed's constants (SPEC §4). Growth ratio 0.1: the seed saw 1.1 without truncation and 0.03-0.04
# with it; the lowest clean value was 0.22 (whitespace), so 0.1 keeps a margin of 2x on either side.
OVERFLOW_GROWTH_RATIO = 0.1
# Below 200 estimated tokens of growth, estimation noise dominates and the growth rule does not decide.
OVERFLOW_MIN_GROWTH = 200
# A compaction request only adds the instruction to summarize (a few hundred tokens at most).
OVERFLOW_MIN_GROWTH_COMPACT = 50
# A first request has no previous turn: only a large one reporting a tiny count (the 63) is decided.
OVERFLOW_MIN_FIRST = 500

# Windows servers run by default or by common configuration (Ollama's 2048/4096 defaults, powers of two
# in llama.cpp/LM Studio presets, 128k/256k for big defaults). A report just under one of them, on a turn
# whose new content could have crossed it, is where a keep-newest truncation lands.
COMMON_WINDOWS = (2048, 4096, 8192, 16384, 32768, 65536, 131072, 262144)
# Upper bound of true tokens per raw-estimated token for any content: the corpus tops out at 2.93 (CJK,
# up to 3.0 plus noise); code is ~1.03, JSON ~1.47, whitespace ~0.22. Used only to bound what new content
# could weigh, so erring high costs probes, never misses.
MAX_CONTENT_RATIO = 3.2
# A prompt's end of turn and the next turn's header (5 tokens in ChatML, Llama 3's and Gemma's templates),
# with room to spare: how far a cache hit may stop short of a message it still shows was read.
CACHE_FRAMING = 8
# Reported growth below this fraction of the calibrated expectation is suspicious. Clean turns go as
# low as 0.15 (whitespace after a JSON-heavy history), so this flags those for a probe (cost, not a
# false positive) and catches truncations that drop more than half of what was added.
DEFICIT_RATIO = 0.5
# An exact counter with the chat template matches the server's count; appending a message costs at
# least its framing (4-5 tokens) plus one token of content, so a shortfall above 4 tokens is a loss.
EXACT_TOLERANCE = 4
# The probe's count of the new content, after subtracting the probe's own framing, is off by a few
# tokens (generation prompt, BOS); the smallest message a keep-newest drop removes is larger than that.
PROBE_TOLERANCE = 4
# Context shift in llama.cpp keeps the first tokens and half of the rest: reports window/2 + 2.
_HALF_WINDOW_EXTRA = 2

Status = Literal["ok", "truncated", "suspect"]


def looks_truncated(prev: Sample | None, cur: Sample, min_growth: int = OVERFLOW_MIN_GROWTH) -> bool:
    """The seed's rule: the estimate grew but the reported prompt did not (SPEC §4)."""
    if cur.tokens <= 0:
        return False
    if prev is None:
        return cur.estimate >= OVERFLOW_MIN_FIRST and cur.tokens < OVERFLOW_GROWTH_RATIO * cur.estimate
    grown = cur.estimate - prev.estimate
    return grown >= min_growth and cur.tokens - prev.tokens < OVERFLOW_GROWTH_RATIO * grown


def unread(
    prev: Sample | None, cur: Sample, *, exact: int | None, min_growth: int = OVERFLOW_MIN_GROWTH
) -> bool:
    """Did the server demonstrably read less than the prompt it was sent? The one check of it: the
    detector's exact, first and growth rules and the summary request's check all ask here.

    An exact count of the request decides alone (a report short of it by more than a template's
    slack); without one, the growth rule against `prev`. No report (0 tokens) proves nothing.
    """
    if cur.tokens <= 0:
        return False
    if exact is not None:
        return cur.tokens < exact - EXACT_TOLERANCE
    return looks_truncated(prev, cur, min_growth)


def generation_overflow(prompt_tokens: int, completion_tokens: int, window: int) -> bool:
    """Prompt plus answer exceed the window: the server shifted context while generating (item 6)."""
    return prompt_tokens + completion_tokens > window


@dataclass(frozen=True, kw_only=True)
class Verdict:
    """What the detector concluded about one request, and why, in words a user can act on."""

    status: Status
    reason: str
    expected_tokens: int
    seems_real_window: int | None = None
    rule: str = ""
    """The evidence that decided: none, no_usage, exact, first, shrank, growth, telltale, crossing,
    cache, deficit or probe."""
    reported: int = 0
    prev_reported: int | None = None


class TruncationDetector:
    """Decides, turn by turn, whether the server read the whole prompt.

    `windows` are the sizes a server plausibly runs besides the one aforo believes; pass `()` when the
    window came from the server itself (then only that one matters and probes get rarer).
    """

    def __init__(self, windows: tuple[int, ...] = COMMON_WINDOWS) -> None:
        self.windows = windows

    def assess(
        self,
        prev: Sample | None,
        cur: Sample,
        *,
        ratio: float,
        window: int | None,
        new_estimate: int,
        exact: int | None = None,
        min_growth: int = OVERFLOW_MIN_GROWTH,
        old_cached: int = 0,
    ) -> Verdict:
        """Judge `cur` against `prev`, the last good sample of the same conversation.

        `ratio` is the calibration (tokens/estimate of `prev`), `new_estimate` the raw estimate of the
        messages added since `prev` (of the whole request when there is no `prev`), `exact` the exact
        count of the request when a counter exists. `old_cached` is how many of the prompt's first tokens
        the server took from its cache, when that many show it read the previous prompt whole (the
        watch decides: `Watch.old_part_cached`); 0 otherwise.
        """
        base = prev.tokens if prev else 0
        expected = base + math.ceil(max(ratio, 0.0) * new_estimate)
        said = f"aforo sent ~{cur.estimate} estimated tokens, the server reported {cur.tokens}"

        def verdict(status: Status, rule: str, why: str, real: int | None = None) -> Verdict:
            last = prev.tokens if prev else None
            return Verdict(
                status=status,
                reason=f"{said}; {why}",
                expected_tokens=expected,
                seems_real_window=real,
                rule=rule,
                reported=cur.tokens,
                prev_reported=last,
            )

        if cur.tokens <= 0:
            return verdict("ok", "no_usage", "no usage reported, nothing to judge")
        if exact is not None:
            if unread(prev, cur, exact=exact):
                why = f"the exact count of the request is {exact}: {exact - cur.tokens} tokens went unread"
                return replace(
                    verdict("truncated", "exact", why, self._window(prev, cur, exact)), expected_tokens=exact
                )
            return replace(verdict("ok", "exact", f"matches the exact count {exact}"), expected_tokens=exact)
        if prev is None:
            if unread(None, cur, exact=None, min_growth=min_growth):
                why = f"a first request of this size cannot read as under {OVERFLOW_GROWTH_RATIO:.0%} of it"
                return verdict("truncated", "first", why)
            return verdict("ok", "none", "first request, nothing to compare with")

        grown = cur.tokens - prev.tokens
        was = f"the previous request reported {prev.tokens}"
        upper = prev.tokens + math.ceil(MAX_CONTENT_RATIO * new_estimate)
        if new_estimate > 0 and grown <= 0:
            # Appending messages cannot make a prompt shorter, nor leave it the same size.
            why = f"{was}; messages were added but the prompt did not grow ({grown:+d})"
            return verdict("truncated", "shrank", why, self._window(prev, cur, upper))
        if unread(prev, cur, exact=None, min_growth=min_growth):
            why = f"{was}; the estimate grew {cur.estimate - prev.estimate} but the report only {grown:+d}"
            return verdict("truncated", "growth", why, self._window(prev, cur, upper))
        if new_estimate <= 0:
            return verdict("ok", "none", "nothing new was added")

        expect = f"expected ~{expected} ({was} plus ~{expected - prev.tokens} new)"
        if cur.tokens in self._telltales(window):
            return verdict("suspect", "telltale", f"{expect}; {cur.tokens} is a tell-tale window size")
        for size in self._plausible(window):
            if prev.tokens < size < upper and cur.tokens <= size:
                why = f"{expect}; the new content may have crossed a {size}-token window"
                if old_cached:
                    # A drop that lands under a window starts at the oldest messages: the cache shows
                    # the server read them, in the order it read them before.
                    why += f", but it took the first {old_cached} tokens from its cache: nothing old went"
                    return verdict("ok", "cache", why)
                return verdict("suspect", "crossing", why, size)
        if grown < DEFICIT_RATIO * (expected - prev.tokens):
            return verdict("suspect", "deficit", f"{expect}; it grew only {grown:+d}")
        return verdict("ok", "none", expect)

    def resolve(self, verdict: Verdict, new_content_tokens: int) -> Verdict:
        """Settle a suspicion with the exact count of the new content measured alone."""
        if verdict.status != "suspect" or verdict.prev_reported is None:
            return verdict
        grown = verdict.reported - verdict.prev_reported
        expected = verdict.prev_reported + new_content_tokens
        measured = f"the new content alone measures {new_content_tokens} tokens, the prompt grew {grown:+d}"
        if grown < new_content_tokens - PROBE_TOLERANCE:
            why = f"{verdict.reason}; {measured}: {new_content_tokens - grown} older tokens were dropped"
            prev = Sample(verdict.prev_reported, 0)
            real = verdict.seems_real_window or self._window(prev, Sample(verdict.reported, 0), expected)
            return replace(
                verdict,
                status="truncated",
                reason=why,
                expected_tokens=expected,
                seems_real_window=real,
                rule="probe",
            )
        why = f"{verdict.reason}; {measured}: nothing was dropped"
        return replace(
            verdict, status="ok", reason=why, expected_tokens=expected, seems_real_window=None, rule="probe"
        )

    def _plausible(self, window: int | None) -> list[int]:
        # Prompts stay under the window aforo believes, so a larger one can never be the one crossed.
        return sorted({w for w in self.windows if not window or w < window} | ({window} if window else set()))

    def _telltales(self, window: int | None) -> set[int]:
        sizes = set(self.windows)
        if window:
            sizes |= {window, window // 2 + _HALF_WINDOW_EXTRA}
        return sizes

    def _window(self, prev: Sample | None, cur: Sample, needed: int) -> int | None:
        """The smallest plausible window that holds what the server demonstrably read but not `needed`;
        else the largest prompt it read whole (erring low only makes aforo clear and compact earlier)."""
        floor = max(prev.tokens if prev else 0, cur.tokens)
        if floor < OVERFLOW_MIN_FIRST:
            return None
        fits = [w for w in sorted(self.windows) if floor <= w < needed]
        return fits[0] if fits else floor
