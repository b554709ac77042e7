"""An answer about the files the session read is checked against aforo's record: one that names a
file not read, or leaves one out, is sent back once with the exact list (loop.record_check)."""

from __future__ import annotations

import re
from pathlib import Path

from aforo.context.ledger import RECORD_CHECK
from aforo.context.trail import Trail
from aforo.loop.record_check import asks_files_read, files_read, read_correction
from aforo.messages import Message, Request, ToolResult, ToolUse
from aforo.providers.fake import FakeProvider, FakeTurn
from support.scenario import make_agent, make_files


def test_a_question_about_the_files_read_is_told_from_other_questions() -> None:
    for asked in (
        "Which files have you read in this session?",
        "List the files you opened so far.",
        "What have you read in this session?",
        "Which modules did you read?",
    ):
        assert asks_files_read(asked), asked
    for asked in ("In which file did you find deinit?", "Which file defines Result?", "What was my goal?"):
        assert not asks_files_read(asked), asked


def test_the_files_read_are_the_records_reads_each_once_whatever_lines() -> None:
    trail = Trail()
    for n, (tool, path) in enumerate(
        [
            ("Read", "_hooks.py"),
            ("Grep", r"\b(plugins)\b"),
            ("Read", "src/_manager.py"),
            ("Read", "_hooks.py:715"),
        ]
    ):
        use = ToolUse(f"c{n}", tool, {"file_path": path} if tool == "Read" else {"pattern": path})
        trail = trail.absorb(Message("assistant", (use,))).absorb(
            Message("user", (ToolResult(f"c{n}", "x"),))
        )
    assert files_read(trail) == ("_hooks.py", "src/_manager.py")


def test_an_answer_naming_exactly_the_files_read_holds_and_any_other_is_sent_back() -> None:
    read = ("_hooks.py", "src/pluggy/_manager.py", "_result.py")
    assert read_correction("I read `_hooks.py`, _manager.py and _result.py.", read) is None
    # pluggy, held out: the 1.5B, shown these three, named a fourth it had never read.
    told = read_correction("_hooks.py, _manager.py, _result.py, and _tracing.py.", read)
    assert told is not None and told.startswith(RECORD_CHECK)
    assert "`_tracing.py` was not read" in told
    assert "exactly `_hooks.py`, `src/pluggy/_manager.py`, `_result.py`" in told
    assert "`_result.py` is missing" in (read_correction("_hooks.py and _manager.py", read) or "")
    assert read_correction("None: I only searched.", ()) is None
    assert "none (aforo only searched)" in (read_correction("I read core.py.", ()) or "")


def test_a_wrong_list_is_sent_back_once_and_the_corrected_answer_ends_the_run(tmp_path: Path) -> None:
    files = make_files(tmp_path, 3, 600)
    seen: list[Request] = []

    def respond(request: Request) -> FakeTurn:
        seen.append(request)
        last = request.messages[-1]
        if last.text.startswith(RECORD_CHECK):
            return FakeTurn("I read " + " and ".join(re.findall(r"`(mod\d\d\.py)`", last.text)) + ".")
        if "Which files" in last.text:
            return FakeTurn(f"I read {files[0]}, {files[1]} and tracing.py.")
        if last.tool_results:
            return FakeTurn("It holds numbers.")
        return FakeTurn("", [("Read", {"file_path": re.findall(r"mod\d\d\.py", last.text)[-1]})])

    agent, _, _ = make_agent(tmp_path, FakeProvider(respond))
    for name in files[:2]:
        assert agent.run(f"What is in {name}?").reason == "end_turn"
    result = agent.run("Which files have you read in this session?")
    assert (result.reason, result.answer) == ("end_turn", f"I read {files[0]} and {files[1]}.")
    checks = [m for m in agent.messages if m.text.startswith(RECORD_CHECK)]
    assert len(checks) == 1 and "`tracing.py` was not read" in checks[0].text
    assert seen[-1].answer_only  # the answer again, no tool
    # aforo's own ask is no request of the user's.
    assert not any(r.startswith(RECORD_CHECK) for r in agent.governor.conversation.trail.requests)


def test_a_list_still_wrong_after_its_correction_ends_the_run_as_it_is(tmp_path: Path) -> None:
    files = make_files(tmp_path, 1, 600)

    def respond(request: Request) -> FakeTurn:
        last = request.messages[-1]
        if "Which files" in last.text or last.text.startswith(RECORD_CHECK):
            return FakeTurn("I read other.py.")
        if last.tool_results:
            return FakeTurn("It holds numbers.")
        return FakeTurn("", [("Read", {"file_path": files[0]})])

    agent, _, _ = make_agent(tmp_path, FakeProvider(respond))
    agent.run(f"What is in {files[0]}?")
    result = agent.run("Which files have you read in this session?")
    assert (result.reason, result.answer) == ("end_turn", "I read other.py.")
    assert sum(m.text.startswith(RECORD_CHECK) for m in agent.messages) == 1
