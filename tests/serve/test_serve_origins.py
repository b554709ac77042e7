"""The patterns of `--allow-origin` / `AFORO_ALLOW_ORIGINS`: what each allows, in linear time, and a
pattern that can never match an origin refused with its source named."""

from __future__ import annotations

import itertools
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aforo.errors import ConfigError
from aforo.gateway.origins import Origins, allowed_origins


@pytest.mark.parametrize(
    ("origin", "allowed"),
    [
        ("http://localhost:3000", True),
        ("https://127.0.0.1", True),
        ("http://[::1]:8080", True),
        ("HTTP://LOCALHOST:3000", True),  # scheme and host are case-insensitive
        ("http://localhost:3000.evil.example", False),  # a port's star is digits only
        ("http://localhost.evil.example", False),
        ("http://127.0.0.1.evil.example:80", False),
        ("https://evil.example", False),
        ("null", False),
        ("file://", False),
        ("chrome-extension://abcdefghijklmnop", False),
    ],
)
def test_by_default_only_this_machines_pages(origin: str, allowed: bool) -> None:
    assert allowed_origins((), {}).allows(origin) is allowed


def test_patterns_from_the_flag_and_the_environment() -> None:
    origins = allowed_origins(
        ["https://*.example.com, http://192.168.1.5:*", "null"],
        {"AFORO_ALLOW_ORIGINS": "chrome-extension://*/"},
    )
    assert origins.allows("https://chat.example.com")
    assert origins.allows("https://a.b.example.com")
    assert not origins.allows("https://example.com.evil.example")
    assert not origins.allows("https://evil.example/.example.com")  # a star is no '/'
    assert origins.allows("http://192.168.1.5:7860")
    assert not origins.allows("http://192.168.1.5:7860.evil.example")
    assert origins.allows("null")
    assert origins.allows("chrome-extension://abcdefghijklmnop")
    assert allowed_origins(["*"], {}).allows("https://anything.example")


@pytest.mark.parametrize(
    ("given_", "where"),
    [(["https://chat.example.com/app"], "--allow-origin"), (["example.com"], "--allow-origin")],
)
def test_a_pattern_that_is_no_origin_is_refused(given_: list[str], where: str) -> None:
    with pytest.raises(
        ConfigError, match=rf"{where}: .* is not an origin: give it as scheme://host\[:port\]"
    ):
        allowed_origins(given_, {})
    with pytest.raises(
        ConfigError, match=re.escape("AFORO_ALLOW_ORIGINS: 'https://x.example/app' is not an origin")
    ):
        allowed_origins([], {"AFORO_ALLOW_ORIGINS": "https://ok.example,https://x.example/app"})


def _oracle(pattern: str, origin: str) -> bool:
    """The same rule as a regular expression (slow on long inputs, obviously right on short ones)."""
    pieces = pattern.split("*")
    regex = re.escape(pieces[0])
    for before, piece in itertools.pairwise(pieces):
        regex += ("[0-9]*" if before.endswith(":") else "[a-z0-9.-]*") + re.escape(piece)
    return re.fullmatch(regex, origin) is not None


@given(
    st.text(alphabet="ab.:/*-1", min_size=1, max_size=12).filter(lambda p: p != "*"),
    st.text(alphabet="ab.:/-1", max_size=16),
)
def test_the_greedy_match_agrees_with_the_regular_expression(pattern: str, origin: str) -> None:
    assert Origins((pattern,)).allows(origin) is _oracle(pattern, origin)


def test_a_long_origin_against_many_stars_is_refused_at_once() -> None:
    """A page chooses its Origin: one past any real origin's length is not matched at all, and matching is
    linear in any case (no backtracking over the stars)."""
    origins = allowed_origins(["http://*a*a*a*a*a*a*a*a*:1"], {})
    assert not origins.allows("http://" + "a" * 250 + ":2")
    assert not origins.allows("http://" + "a" * 100_000)
