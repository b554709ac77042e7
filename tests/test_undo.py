"""/undo walks back one transformation per call and never loses the conversation it replaces."""

from __future__ import annotations

from pathlib import Path

from aforo.context.undo import UNDO_REASON, choose
from aforo.messages import Message
from aforo.providers.fake import FakeProvider
from support.scenario import TASK_KEY, cleared_then_compacted, make_agent, make_files, reader_model

A = (Message.user("a"),)
B = (Message.user("a"), Message.assistant("b"))
C = (Message.user("a"), Message.assistant("b"), Message.user("c"))
PROMPT = f"Task {TASK_KEY}: read every mod*.py file and tell me which one is the longest."


def test_choose_takes_the_newest_checkpoint_that_changes_something() -> None:
    history = [("cp3", "compact", list(C)), ("cp2", "clear", list(B)), ("cp1", "compact", list(A))]
    # cp3 holds what the user has now (say, a compaction that was then rejected): nothing to restore.
    chosen = choose(history, C)
    assert chosen is not None and chosen.checkpoint == "cp2" and chosen.messages == B


def test_choose_goes_below_the_last_undo_and_skips_safety_checkpoints() -> None:
    history = [("cp4", UNDO_REASON, list(C)), ("cp3", "compact", list(B)), ("cp1", "clear", list(A))]
    first = choose(history, C)
    assert first is not None and first.checkpoint == "cp3"
    second = choose(history, B, below="cp3")
    assert second is not None and second.checkpoint == "cp1"
    assert choose(history, A, below="cp1") is None


def test_choose_a_named_checkpoint_by_id_or_its_unique_end() -> None:
    history = [
        ("20261129-221333-3c39d10b", UNDO_REASON, list(C)),
        ("20261129-221301-aa11bb22", "clear", list(A)),
    ]
    by_end = choose(history, A, wanted="3c39d10b")
    assert by_end is not None and by_end.reason == UNDO_REASON and by_end.messages == C
    assert choose(history, A, wanted="20261129-221301-aa11bb22") is not None
    assert choose(history, A, wanted="d10b") is None  # only a whole id part, never a loose match


def test_two_undos_walk_back_through_compaction_then_clearing(tmp_path: Path) -> None:
    agent, rec, journal = cleared_then_compacted(tmp_path, PROMPT)
    actions = [e.action for e in rec.of("context")]
    assert actions == ["cleared", "compacted"], actions
    before_clear, before_compact = (journal.checkpoints[0][2], journal.checkpoints[1][2])
    finished = tuple(agent.messages)

    first = agent.governor.undo(agent.request())
    assert first is not None
    restore, kept = first
    assert restore.reason == "compact" and list(restore.messages) == before_compact
    assert kept is not None and journal.checkpoints[-1][1:3] == (UNDO_REASON, list(finished))

    second = agent.governor.undo(agent.request())
    assert second is not None and second[0].reason == "clear"
    assert list(second[0].messages) == before_clear
    assert agent.governor.undo(agent.request()) is None  # nothing further back

    # The finished conversation the first undo replaced comes back by name.
    back = agent.governor.undo(agent.request(), kept)
    assert back is not None and back[0].messages == finished
    restored = [e for e in rec.of("context") if e.action == "restored"]
    assert [e.checkpoint for e in restored] == [journal.checkpoints[1][0], journal.checkpoints[0][0], kept]
    assert len(journal.events("recovery")) == 3


def test_a_new_transformation_restarts_the_walk(tmp_path: Path) -> None:
    files = make_files(tmp_path, 8, 3000)
    agent, _, journal = make_agent(tmp_path, FakeProvider(reader_model(files, batch=True)), window=4096)
    agent.run(PROMPT)
    undone = agent.governor.undo(agent.request())
    assert undone is not None
    agent.governor.start_over(agent.request())  # a new transformation (/clear)
    again = agent.governor.undo(agent.request())
    assert again is not None and again[0].reason == "manual_clear"
    assert again[1] is None  # an empty conversation needs no safety checkpoint
    assert journal.checkpoints[-1][1] == "manual_clear"
