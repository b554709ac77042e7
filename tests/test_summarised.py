"""After a compaction the same reads are not repeated: a read a compaction of this run summarised is
answered from the summary, and a step that asks for nothing else is followed by an answer-only request."""

from __future__ import annotations

from pathlib import Path

from aforo.context.ledger import is_compacted
from aforo.context.policy import Policy
from aforo.messages import Request
from aforo.providers.fake import FakeProvider, FakeTurn
from support.scenario import is_summary_request, make_agent, make_files

SUMMARY = (
    "Goal: say what mod00.py defines.\n"
    "Evidence: mod00.py defines f_0_0 to f_0_199 (mod00.py:1-400).\n"
    "Next action: answer."
)
ANSWER = "mod00.py defines f_0_0 to f_0_199."
# A result larger than the verbatim tail a compaction keeps, and compaction as soon as it is in.
POLICY = Policy(cap_fraction=0.5, clear_at=0.5, compact_at=0.5)


def rereads(request: Request) -> FakeTurn:
    """The 0.5B model after a compaction: the file its evidence list names, again and again."""
    if is_summary_request(request):
        return FakeTurn(SUMMARY)
    if request.answer_only:
        return FakeTurn(ANSWER)
    return FakeTurn("", [("Read", {"file_path": "mod00.py"})])


def test_a_read_the_compaction_summarised_is_answered_from_the_summary_then_the_answer_comes(
    tmp_path: Path,
) -> None:
    make_files(tmp_path, 1, 8000)
    provider = FakeProvider(rereads)
    agent, rec, _ = make_agent(tmp_path, provider, policy=POLICY)
    result = agent.run("What does mod00.py define?")
    assert (result.reason, result.answer) == ("end_turn", ANSWER)
    assert [e.action for e in rec.of("context")] == ["compacted"]
    assert len(rec.of("tool_start")) == 2 and len(provider.requests) == 4  # read, summary, re-read, answer
    told = [r.content for m in agent.messages for r in m.tool_results]
    assert told == [
        "[Already read before the compaction; the summary above keeps: Goal: say what mod00.py defines. / "
        "Evidence: mod00.py defines f_0_0 to f_0_199 (mod00.py:1-400). Answer from it, or ask for "
        "something not read yet.]"
    ]
    assert is_compacted(agent.messages[0])
    assert [r.answer_only for r in provider.requests if not is_summary_request(r)] == [False, False, True]
    steps = [e.fields["step"] for e in rec.of("info")]
    assert steps == ["asked again for what the compaction summarised (Read mod00.py); answer requested"]


def test_a_compaction_of_an_earlier_question_does_not_stop_a_new_one_from_reading(tmp_path: Path) -> None:
    make_files(tmp_path, 1, 8000)
    provider = FakeProvider(rereads)
    agent, _rec, _ = make_agent(tmp_path, provider, policy=POLICY)
    agent.run("What does mod00.py define?")
    provider = FakeProvider(
        [FakeTurn("", [("Read", {"file_path": "mod00.py"})]), FakeTurn("It ends at line 400.")]
    )
    agent.provider, agent.governor.policy = provider, Policy()  # no compaction of the new read
    result = agent.run("Where does mod00.py end?")
    assert result.reason == "end_turn"
    last = [r.content for r in agent.messages[-2].tool_results]
    assert len(last) == 1 and last[0].startswith("1\tdef f_0_0(x):")  # read again, for real


def test_only_what_this_question_read_is_answered_from_its_summary(tmp_path: Path) -> None:
    make_files(tmp_path, 2, 8000)
    agent, rec, _ = make_agent(tmp_path, FakeProvider(rereads), policy=POLICY)
    agent.run("What does mod00.py define?")
    before = len(rec.events)
    steps = iter(["mod01.py", "mod00.py", "mod01.py"])

    def second(request: Request) -> FakeTurn:
        if is_summary_request(request):
            return FakeTurn("Goal: say what mod01.py defines.\nEvidence: mod01.py defines f_1_0 and more.")
        if request.answer_only:
            return FakeTurn("mod01.py defines f_1_0 and more.")
        return FakeTurn("", [("Read", {"file_path": next(steps)})])

    agent.provider = FakeProvider(second)
    result = agent.run("And mod01.py?")
    assert result.reason == "end_turn"
    ends = [(e.name, e.lines) for e in rec.events[before:] if e.type == "tool_end"]
    # mod00.py, read by the first question only, is read for real after this question's compaction
    # (the compacted message's evidence list still names it); mod01.py, read and summarised in this
    # one, is not read twice.
    assert [n for n, _ in ends] == ["Read"] * 3 and ends[1][1] > 100 and ends[2][1] == 1
    steps_said = [e.fields["step"] for e in rec.events[before:] if e.type == "info"]
    assert steps_said == ["asked again for what the compaction summarised (Read mod01.py); answer requested"]
