"""The long-session suite's expectations (bench/long_session.py) against what they stand for, with no
model: what the user typed holds the goal, rule and decision a probe expects back; a line count or a
definition's file a probe expects is true of the pinned sdist; a held-out session is long enough to
compact twice in an 8 192 window and probes every category late."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "bench"))

from long_session import ALL_FILES, CATEGORIES, SESSIONS, STATE, Fact, Session, fetched

DECIDES = re.compile(r"\b(decided|chose|we'll use)\b", re.I)
# A pattern that expects a file or a line count: a fact of the sources, to be checked there.
OF_THE_SOURCES = re.compile(r"\\\.py|^\\b\d+\\b$")


def typed(session: Session, decision: bool) -> str:
    """The first request (the goal and its rule), or the request that took the decision."""
    if not decision:
        return session.steps[0].prompt
    return next(s.prompt for s in session.steps if not s.category and DECIDES.search(s.prompt))


@pytest.mark.parametrize("session", SESSIONS, ids=lambda s: s.id)
def test_what_the_user_said_holds_what_its_probes_expect_back(session: Session) -> None:
    for step in session.steps:
        if step.category in ("rules", "decision") or (step.category == "recall" and step.said is None):
            said = typed(session, step.category == "decision")
            assert re.search(step.expect, said, re.I), (session.id, step.prompt, said)


HELD_OUT = [s for s in SESSIONS if s.held_out]


@pytest.mark.parametrize("session", HELD_OUT, ids=lambda s: s.id)
def test_a_held_out_session_is_long_and_probes_every_category_late(session: Session) -> None:
    steps = session.steps
    assert 34 <= len(steps) <= 40  # an earlier round compacted once in 23 questions at 8 192
    last_third = steps[len(steps) - len(steps) // 3 :]
    for category in CATEGORIES:
        assert sum(s.category == category for s in last_third) >= 2, category
    after_middle = steps[len(steps) // 2 :]
    artifacts = [s for s in after_middle if s.category == "artifact"]
    assert sum(s.expect == ALL_FILES for s in artifacts) >= 1
    assert sum(s.expect != ALL_FILES for s in artifacts) >= 1
    assert len(artifacts) >= 3
    reads = [s for s in steps if not s.category and re.match(r"(Read|Summarize) ", s.prompt)]
    assert len(reads) >= 6  # whole files read fill the window
    for i, step in enumerate(steps):  # a follow-up follows the question it continues
        if step.category == "continuation":
            assert not steps[i - 1].category, step.prompt


@pytest.mark.parametrize("session", HELD_OUT, ids=lambda s: s.id)
def test_every_expected_file_or_line_count_of_a_held_out_session_is_checked(session: Session) -> None:
    for step in session.steps:
        if step.category and OF_THE_SOURCES.search(step.expect):
            assert step.fact is not None, step.prompt


def defines(source: str, name: str) -> bool:
    return bool(re.search(rf"^\s*(?:async\s+)?(?:def|class)\s+{re.escape(name)}\b", source, re.M))


def check(fact: Fact, expect: str, package: Path) -> None:
    files = {p.name: p.read_text(encoding="utf-8") for p in package.glob("*.py")}
    assert fact.file in files
    if fact.lines is not None:
        assert len(files[fact.file].splitlines()) == fact.lines
        assert re.search(expect, f"{fact.file} has {fact.lines} lines")
        assert not re.search(expect, f"{fact.file} has {fact.lines + 1} lines")
        return
    assert [f for f, text in files.items() if defines(text, fact.name)] == [fact.file], fact.name
    named = [f for f in files if re.search(expect, f)]
    assert named in ([fact.file], []), (expect, named)  # the file, and no other of the package
    assert named or re.search(expect, fact.name), expect


@pytest.mark.parametrize("session", [s for s in SESSIONS if any(t.fact for t in s.steps)], ids=lambda s: s.id)
def test_the_facts_a_session_expects_are_true_of_its_pinned_sdist(session: Session) -> None:
    # Fetched by the suite's own run (or `fetch_all`) into its default state; tests reach no network.
    package = fetched(session.package, STATE / "src")
    if package is None:
        pytest.skip(f"{session.package} is not fetched under {STATE / 'src'}: run the suite once")
    for step in session.steps:
        if step.fact is not None:
            check(step.fact, step.expect, package)
