"""The long-session suite's scoring (bench/long_session.py): an artifact probe is right only when the
answer names exactly the files the harness saw read; the reads come from the runs' own events."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1] / "bench"))

from long_session import (
    ALL_FILES,
    CATEGORIES,
    PACKAGES,
    SESSIONS,
    artifact_right,
    read_files,
    said_terms,
)

FILES = {"core.py", "decorators.py", "exceptions.py", "globals.py", "types.py"}


def test_an_artifact_answer_names_every_file_read_and_no_other() -> None:
    read = {"core.py", "decorators.py"}
    assert artifact_right("I read core.py and decorators.py.", read, FILES)
    assert artifact_right("- src/click/core.py (3042 lines)\n- decorators.py", read, FILES)
    assert not artifact_right("I read core.py.", read, FILES)  # one missing
    assert not artifact_right("core.py, decorators.py and types.py", read, FILES)  # one never read
    assert not artifact_right("Read a.py, Read b.py", read, FILES)  # the call format, copied
    assert artifact_right("I have not read any file yet, only searched.", set(), FILES)
    assert not artifact_right("I read core.py.", set(), FILES)  # a session that read nothing


def test_a_probe_of_what_was_said_takes_the_terms_of_that_answer() -> None:
    assert said_terms("Click raises a `ClickException` for it. Then `Other`.") == {"ClickException"}
    assert said_terms("core.py has 3042 lines.") == {"core.py", "3042"}
    assert said_terms("It returns BaseCommand or parse_args.") == {"BaseCommand", "parse_args"}
    # A term the probe names itself is no sign the answer repeats what was said: only the count is.
    asked = "How many lines did you say main.py has?"
    assert said_terms("main.py has 394 lines.", asked) == {"394"}


def test_the_reads_are_the_runs_read_calls_inside_the_package(tmp_path: Path) -> None:
    for name in FILES:
        (tmp_path / name).write_text("x = 1\n")
    events = [
        {"type": "tool_start", "name": "Read", "input": {"file_path": "core.py"}},
        {"type": "tool_start", "name": "Read", "input": {"file_path": "src/click/types.py"}},
        {"type": "tool_start", "name": "Grep", "input": {"pattern": "globals.py"}},
        {"type": "tool_start", "name": "Read", "input": {"file_path": "missing.py"}},
    ]
    assert read_files(events, tmp_path) == {"core.py", "types.py"}


def test_every_session_probes_every_category_after_enough_turns() -> None:
    for session in SESSIONS:
        assert session.package in PACKAGES
        assert 15 <= len(session.steps) <= 40, session.id
        asked = {s.category for s in session.steps if s.category}
        assert asked == set(CATEGORIES), session.id
        assert any(s.expect == ALL_FILES for s in session.steps), session.id
        for i, step in enumerate(session.steps):  # a probe of what was said points at an earlier step
            assert step.said is None or step.said < i, session.id
    assert {s.held_out for s in SESSIONS} == {True, False}


def test_a_read_of_some_lines_or_one_definition_reads_the_file(tmp_path: Path) -> None:
    for name in ("unix.py", "api.py", "core.py"):
        (tmp_path / name).write_text("x\n")
    events = [
        {"type": "tool_start", "name": "Read", "input": {"file_path": "unix.py:149"}},
        {"type": "tool_start", "name": "Read", "input": {"file_path": "api.py#PlatformDirsABC"}},
        {"type": "tool_start", "name": "Grep", "input": {"pattern": "core.py"}},
        {"type": "tool_start", "name": "Read", "input": {"file_path": "missing.py:3-9"}},
    ]
    assert read_files(events, tmp_path) == {"unix.py", "api.py"}
