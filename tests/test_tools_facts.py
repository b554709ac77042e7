"""What the tools know exactly stays when a result's body is cleared or compacted: ten files compared in a
4 096 window."""

from __future__ import annotations

import re
from pathlib import Path

from aforo.context.compacted import compacted_message, newest_evidence
from aforo.context.ledger import COMPACTED_HEADER, build_ledger
from aforo.context.stages import clear_old_results
from aforo.context.tokens import estimate_text
from aforo.messages import CLEARED_NOTE, Message, Request, ToolResult, ToolUse, block_from_dict, block_to_dict
from aforo.providers.fake import FakeProvider, FakeTurn
from support.scenario import is_summary_request, make_agent

QUESTION = "Read all ten files mod00.py to mod09.py. Which is the longest?"


def test_a_cleared_result_keeps_its_facts_and_a_result_without_them_the_note() -> None:
    uses = (ToolUse("a", "Read", {"file_path": "a.py"}), ToolUse("b", "Read", {"file_path": "b.py"}))
    results = (
        ToolResult("a", "x = 1\n" * 100, facts="a.py: 100 lines; 1 function: f"),
        ToolResult("b", "y = 2\n" * 100),
    )
    exchange = [Message("assistant", uses), Message("user", results)]
    messages = [Message.user("task"), *exchange, Message.user("more")]
    cleared = [r for m in clear_old_results(messages, keep=0).messages for r in m.tool_results]
    assert cleared[0].cleared and cleared[0].content.startswith("[a.py: 100 lines; 1 function: f. ")
    assert cleared[0].facts == "a.py: 100 lines; 1 function: f"
    assert cleared[1].cleared and cleared[1].content == CLEARED_NOTE


def test_facts_round_trip_through_a_session_file() -> None:
    block = ToolResult("a", "body", facts="a.py: 3 lines", cleared=True)
    assert block_from_dict(block_to_dict(block)) == block
    assert "facts" not in block_to_dict(ToolResult("a", "body"))


def ten_files(root: Path) -> dict[str, int]:
    """Ten Python files of 24 to 42 lines (the longest is not the last): together more than the window."""
    lines = {f"mod{i:02d}.py": 24 + (i * 7) % 10 * 2 for i in range(10)}
    for name, count in lines.items():
        body = "".join(f"value_{n} = {n} * {n}  # {name}\n" for n in range(count))
        (root / name).write_text(body)
    return lines


def test_the_longest_of_ten_files_is_answerable_from_all_ten_in_a_4096_window(tmp_path: Path) -> None:
    lines = ten_files(tmp_path)
    names = sorted(lines)
    last: list[Request] = []

    def respond(request: Request) -> FakeTurn:
        if request.max_tokens > 1:
            last[:] = [request]
        asked = [u.input["file_path"] for m in request.messages for u in m.tool_uses]
        todo = [n for n in names if n not in asked]
        # Two files a turn, as the window allows, then the answer.
        return FakeTurn("", [("Read", {"file_path": n}) for n in todo[:2]]) if todo else FakeTurn("done")

    agent, rec, _ = make_agent(tmp_path, FakeProvider(respond), window=4096)
    result = agent.run(QUESTION)
    assert result.reason == "end_turn"
    # The bodies did not all fit: clearing happened, and no compaction replaced the conversation.
    actions = [e.action for e in rec.of("context")]
    assert "cleared" in actions and "compacted" not in actions
    results = [r for m in last[0].messages for r in m.tool_results]
    read: dict[str, set[str]] = {name: set() for name in lines}
    for use in (u for m in last[0].messages for u in m.tool_uses):
        read[use.input["file_path"]].add(use.id)
    assert len(results) == 10 and any(r.cleared for r in results)
    # Every file's exact line count reaches the answering turn, from a cleared result's facts or the body.
    for name, count in lines.items():
        shown = [r for r in results if r.tool_use_id in read[name]]
        assert shown, name
        if shown[0].cleared:
            assert re.search(rf"\[{re.escape(name)}: {count} lines\b", shown[0].content), shown[0].content
        else:
            body = shown[0].content.split("\n[Not read yet")[0]  # a deferred read's note may follow
            assert f"# {name}" in body and body.count("\n") == count - 1


def test_ten_files_read_at_once_keep_their_counts_through_the_compaction_in_4096_tokens(
    tmp_path: Path,
) -> None:
    # A small model copies the file list into one read; ten results at the cap do not fit, so a step runs
    # as many as the room holds and names the rest, which the model asks for again; the conversation is
    # compacted on the way, and a last compaction keeps every count beside the evidence list, whatever
    # the summaries say.
    lines = {f"notes{i:02d}.md": 80 + (i * 7) % 10 * 5 for i in range(10)}
    for name, count in lines.items():
        (tmp_path / name).write_text("".join(f"Entry {n} of the notes in {name}.\n" for n in range(count)))

    def respond(request: Request) -> FakeTurn:
        if is_summary_request(request):
            return FakeTurn("Goal: the longest notes file. Next action: answer.")
        asked = {u.input["file_path"] for m in request.messages for u in m.tool_uses}
        todo = [n for n in sorted(lines) if n not in asked]
        return FakeTurn("", [("Read", {"file_path": n}) for n in todo]) if todo else FakeTurn("done")

    provider = FakeProvider(respond)
    agent, rec, _ = make_agent(tmp_path, provider, window=4096)
    assert agent.run("Read the ten notes files. Which is the longest?").reason == "end_turn"
    assert "compacted" in [e.action for e in rec.of("context")]  # the unread results cannot be cleared
    agent.governor.compact_now(agent.request(), provider)
    compacted = agent.messages[0].text
    assert compacted.startswith(COMPACTED_HEADER)
    for name, count in lines.items():
        assert f"- <evidence>Read {name}</evidence> ({name}: {count} lines)" in compacted


def test_facts_beside_the_evidence_survive_a_second_compaction() -> None:
    first = build_ledger(
        [
            Message.user("Compare a.py and b.py."),
            Message("assistant", (ToolUse("r1", "Read", {"file_path": "a.py"}),)),
            Message("user", (ToolResult("r1", "x\n" * 12, facts="a.py: 12 lines"),)),
        ]
    )
    compacted = compacted_message(first, "Goal: compare.", "cp-1")
    again = build_ledger(
        [
            compacted,
            Message("assistant", (ToolUse("r2", "Read", {"file_path": "b.py"}),)),
            Message("user", (ToolResult("r2", "y\n" * 7, facts="b.py: 7 lines"),)),
        ]
    )
    text = compacted_message(again, "Goal: compare.", "cp-2").text
    assert "- <evidence>Read a.py</evidence> (a.py: 12 lines)" in text
    assert "- <evidence>Read b.py</evidence> (b.py: 7 lines)" in text


def test_facts_take_only_the_room_the_evidence_sources_leave() -> None:
    uses = [ToolUse(f"r{i}", "Read", {"file_path": f"f{i}.py"}) for i in range(3)]
    messages = [Message.user("Compare the files.")]
    for use in uses:
        facts = f"{use.input['file_path']}: {10 + int(use.id[1:])} lines; 1 function: something_long_enough"
        messages += [Message("assistant", (use,)), Message("user", (ToolResult(use.id, "x", facts=facts),))]
    ledger = build_ledger(messages)
    bare = [f"- <evidence>Read f{i}.py</evidence>" for i in range(3)]
    room = sum(estimate_text(line + "\n") for line in bare)
    # Room for the sources alone: every source, no facts (before, a source was never left out).
    assert newest_evidence(ledger, room) == (bare, 0)
    # Room for one line's facts more: the newest gets them.
    full = newest_evidence(ledger, None)[0]
    lines, left_out = newest_evidence(ledger, room + estimate_text(full[2]) - estimate_text(bare[2]))
    assert left_out == 0 and lines[:2] == bare[:2] and lines[2].startswith(bare[2] + " (f2.py: 12 lines;")
    assert all("lines;" in line for line in full)
