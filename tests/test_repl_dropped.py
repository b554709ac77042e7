"""`/dropped`: what the last transformation removed, from the checkpoint and the conversation now."""

from __future__ import annotations

from aforo.cli.session_keeper import INTERRUPTED_RESULT
from aforo.context.budget import Budget
from aforo.context.dropped import dropped
from aforo.context.governor import GovernedLane, Governor
from aforo.context.memory_journal import MemoryJournal
from aforo.context.policy import Policy
from aforo.context.stages import clear_old_results
from aforo.events import discard
from aforo.messages import Message, ToolResult, ToolUse


def exchange(i: int, path: str) -> list[Message]:
    use = ToolUse(f"c{i}", "Read", {"file_path": path})
    return [Message("assistant", (use,)), Message("user", (ToolResult(f"c{i}", f"body of {path}\n" * 20),))]


def history(n: int) -> list[Message]:
    out = [Message.user("explain the app")]
    for i in range(n):
        out += exchange(i, f"mod{i}.py")
    return [*out, Message.assistant("done")]


def test_clearing_lists_the_cleared_calls() -> None:
    before = history(5)
    after = clear_old_results(before, 2).messages
    report = dropped(before, after, "clear")
    assert report.kind == "cleared" and report.removed_messages == 0
    assert report.describe() == "cleared 3 tool results: Read mod0.py, Read mod1.py, Read mod2.py"


def test_compaction_counts_the_summarized_messages_and_their_results() -> None:
    before = history(3)
    compacted = Message.user("[Conversation compacted by aforo to save context. Checkpoint: x]\n...")
    after = [compacted, Message.assistant("Understood."), Message.user("next question")]
    report = dropped(before, after, "compact")
    assert report.kind == "compacted"
    assert report.describe() == (
        "compaction summarized 8 messages (3 tool results): Read mod0.py, Read mod1.py, Read mod2.py"
    )


def test_messages_added_since_do_not_count_and_a_kept_tail_is_kept() -> None:
    before = history(2)[:-1]  # ends mid-run with the last tool pair
    compacted = Message.user("[Conversation compacted by aforo to save context. Checkpoint: x]")
    after = [compacted, *before[-2:], Message.assistant("more"), *exchange(9, "new.py")]
    report = dropped(before, after, "compact")
    assert report.removed_messages == 3 and report.removed_results == ("Read mod0.py",)


def test_reset_and_nothing() -> None:
    before = history(1)
    assert (
        dropped(before, [Message.user("new topic")], "manual_clear")
        .describe()
        .startswith("/clear set aside 4 messages (1 tool results)")
    )
    assert dropped(before, before, "clear").describe() == "nothing was removed since the last checkpoint"


def test_undo_names_what_it_set_aside() -> None:
    before = history(2)  # the conversation an /undo replaced, kept in its safety checkpoint
    report = dropped(before, history(2)[:1], "undo")
    assert report.kind == "undone"
    assert report.describe() == "/undo set aside 5 messages (2 tool results): Read mod0.py, Read mod1.py"


def closed(messages: list[Message]) -> tuple[Message, ...]:
    conversation = Governor(
        GovernedLane(budget=Budget(4096)), policy=Policy(), journal=MemoryJournal(), emit=discard
    ).conversation
    conversation.replace(messages)
    conversation.close_pending(INTERRUPTED_RESULT)
    return conversation.messages


def test_close_pending_answers_trailing_calls_only() -> None:
    done = history(1)
    assert closed(done) == tuple(done)
    dangling = history(2)[:-2]  # the last assistant asked for a tool and nothing answered
    fixed = closed(dangling)
    assert len(fixed) == len(dangling) + 1
    (result,) = fixed[-1].tool_results
    assert result.tool_use_id == "c1" and result.is_error and result.content == INTERRUPTED_RESULT
