"""Calibration refuses usage reports that cannot be true (issue 13: "outside the window, negative, jumps
no message could cause"): each branch of `aforo.context.tokens.impossible`, and what stays possible.
The report of 999 999 999 tokens (more than 4 tokens a character) runs end to end in test_turns.py."""

from __future__ import annotations

from aforo.context.tokens import Sample, impossible

# A request estimated at 3000 tokens (12 000 characters): no tokenizer makes more than 4 tokens of a
# character, and no template more than 1024 tokens of framing, so 49 024 is the most it can be.
ESTIMATE = 3000


def why(tokens: int, *, window: int = 32_768, known: bool = True, exact: int | None = None) -> str | None:
    return impossible(Sample(tokens, ESTIMATE), window=window, window_known=known, exact=exact)


def test_a_plausible_report_calibrates() -> None:
    assert why(3400) is None
    assert why(0) is None  # no usage reported: nothing to calibrate on, nothing impossible either


def test_a_negative_count_is_impossible() -> None:
    reason = why(-5)
    assert reason is not None and "negative" in reason and "-5" in reason


def test_more_than_four_tokens_a_character_is_impossible() -> None:
    assert why(49_024, window=131_072) is None
    reason = why(49_025, window=131_072)
    assert reason is not None and "4 tokens per character" in reason and "49,025" in reason


def test_more_than_the_known_window_is_impossible() -> None:
    reason = why(9000, window=8192)
    assert reason is not None and "window of 8,192" in reason and "9,000" in reason
    assert why(8192, window=8192) is None
    # A window aforo only assumed (no server said it) is no evidence against the report.
    assert why(9000, window=8192, known=False) is None


def test_more_than_twice_the_exact_count_and_its_framing_is_impossible() -> None:
    # 2 x 1500 + 1024 = 4024: what the server's own tokenizer allows with a template's framing.
    assert why(4024, exact=1500) is None
    reason = why(4025, exact=1500)
    assert reason is not None and "its own tokenizer counts at 1,500" in reason
    assert why(4025) is None  # without an exact count, only the other bounds apply
