"""The loop against the fake provider: every ending has a name, the transcript stays well-formed."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from aforo.errors import ConnectError, ContextOverflowError
from aforo.messages import Message, MessageEnd, Request, TextBlock, ToolResult, Usage
from aforo.providers.fake import FakeProvider, FakeTurn, Truncate
from support.scenario import is_summary_request, make_agent, make_files


def well_formed(messages: list[Message]) -> None:
    """Every tool call is answered right after it, and no result is an orphan."""
    assert messages[0].role == "user"
    for i, m in enumerate(messages):
        if m.role == "assistant" and m.tool_uses:
            nxt = messages[i + 1]
            assert [r.tool_use_id for r in nxt.tool_results] == [u.id for u in m.tool_uses]
        if m.role == "user" and m.tool_results:
            prev = messages[i - 1]
            assert {u.id for u in prev.tool_uses} == {r.tool_use_id for r in m.tool_results}


def test_end_turn_after_tool_calls(tmp_path: Path) -> None:
    make_files(tmp_path, 2, 200)
    provider = FakeProvider(
        [
            FakeTurn("", [("Glob", {"pattern": "*.py"})]),
            FakeTurn("", [("Read", {"file_path": "mod00.py"}), ("Read", {"file_path": "mod01.py"})]),
            FakeTurn("Both files define small functions."),
        ]
    )
    agent, rec, _ = make_agent(tmp_path, provider)
    result = agent.run("What is in this project?")
    assert result.reason == "end_turn"
    assert (result.turns, result.tool_calls) == (3, 3)
    assert result.input_tokens == sum(provider.input_tokens(r) for r in provider.requests)
    assert result.output_tokens > 0
    kinds = [e.type for e in rec.events]
    assert kinds.count("turn_end") == 3 and kinds[-1] == "run_end"
    assert "".join(e.text for e in rec.of("text_delta")) == "Both files define small functions."
    well_formed(agent.messages)
    # Results come back in the order the model asked for them, whatever finished first.
    reads = agent.messages[4].tool_results
    assert agent.messages[4].text == ""  # the results alone
    assert "mod00.py" in reads[0].content and "mod01.py" in reads[1].content


def test_max_turns(tmp_path: Path) -> None:
    # A new call every turn (a Grep for another word): progress each time, so only the turn limit stops it.
    provider = FakeProvider(lambda req: FakeTurn("", [("Grep", {"pattern": f"w{len(req.messages)}"})]))
    agent, _rec, _ = make_agent(tmp_path, provider, max_turns=3)
    result = agent.run("loop forever")
    assert result.reason == "max_turns" and result.turns == 3
    assert "--max-turns" in (result.error or "")
    well_formed(agent.messages)


@pytest.mark.parametrize("stop", ["max_tokens", "refusal"])
def test_max_tokens_and_refusal(tmp_path: Path, stop: str) -> None:
    provider = FakeProvider([FakeTurn("partial answ", stop_reason=stop)])  # type: ignore[arg-type]
    agent, _, _ = make_agent(tmp_path, provider)
    assert agent.run("question").reason == stop


def test_provider_error_ends_with_error(tmp_path: Path) -> None:
    provider = FakeProvider([FakeTurn(error=ConnectError("no server at http://x — start one"))])
    agent, rec, _ = make_agent(tmp_path, provider)
    result = agent.run("question")
    assert result.reason == "error" and "no server" in (result.error or "")
    assert rec.events[-1].type == "run_end"
    assert agent.messages == (Message.user("question"),)


def test_cancel_keeps_conversation_well_formed(tmp_path: Path) -> None:
    cancel = threading.Event()

    def respond(req: Request) -> FakeTurn:
        if len(req.messages) > 2:
            cancel.set()  # the user presses Ctrl-C while the second answer streams
        return FakeTurn("", [("LS", {})])

    agent, rec, _ = make_agent(tmp_path, FakeProvider(respond))
    result = agent.run("list it", cancel)
    assert result.reason == "aborted"
    assert rec.events[-1].type == "run_end"
    well_formed(agent.messages)
    assert agent.messages[-1].role == "user"


def test_bad_tool_calls_become_error_results(tmp_path: Path) -> None:
    provider = FakeProvider(
        [
            FakeTurn("", [("Read", '{"file_path": "a.py"'), ("Nope", {}), ("Read", {"file_path": 3})]),
            FakeTurn("I could not read it."),
        ]
    )
    agent, rec, _ = make_agent(tmp_path, provider)
    assert agent.run("read a.py").reason == "end_turn"
    results = agent.messages[2].tool_results
    assert all(r.is_error for r in results)
    assert "JSON" in results[0].content or "json" in results[0].content
    assert "Nope" in results[1].content
    assert [e.ok for e in rec.of("tool_end")] == [False, False, False]


def test_outside_workspace_is_refused(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (tmp_path / "secret.txt").write_text("TOP-SECRET")
    provider = FakeProvider([FakeTurn("", [("Read", {"file_path": "../secret.txt"})]), FakeTurn("ok")])
    agent, _, _ = make_agent(ws, provider)
    agent.run("read the secret")
    result = agent.messages[2].tool_results[0]
    assert result.is_error and "TOP-SECRET" not in result.content


def test_text_tool_calls_are_executed(tmp_path: Path) -> None:
    make_files(tmp_path, 1, 100)
    written = 'Let me read it.\n```json\n{"name": "Read", "arguments": {"file_path": "mod00.py"}}\n```'
    provider = FakeProvider([FakeTurn(written), FakeTurn("It defines f_0_0.")])
    agent, _rec, _ = make_agent(tmp_path, provider)
    assert agent.run("what is in mod00.py?").reason == "end_turn"
    assistant = agent.messages[1]
    assert [u.name for u in assistant.tool_uses] == ["Read"]
    assert "```" not in assistant.text
    assert "def f_0_0" in agent.messages[2].tool_results[0].content
    # Nothing of aforo's own rides with the results: a small model copies such a line as its answer.
    assert agent.messages[2].text == ""
    assert all(isinstance(b, ToolResult) for b in agent.messages[2].content)
    well_formed(agent.messages)


def test_a_model_may_call_again_after_a_text_written_call(tmp_path: Path) -> None:
    # The 0.5B model wrote one call per answer; the run must let it read the next file, not end.
    make_files(tmp_path, 3, 100)
    asks = [f'```json\n{{"name": "Read", "arguments": {{"file_path": "mod0{i}.py"}}}}\n```' for i in range(3)]
    provider = FakeProvider([*(FakeTurn(a) for a in asks), FakeTurn("mod02.py defines f_2_0.")])
    agent, _, _ = make_agent(tmp_path, provider)
    result = agent.run("read mod00.py, mod01.py and mod02.py")
    assert (result.reason, result.tool_calls, result.turns) == ("end_turn", 3, 4)
    assert [u.input["file_path"] for m in agent.messages for u in m.tool_uses] == [
        "mod00.py",
        "mod01.py",
        "mod02.py",
    ]


def test_silent_truncation_ends_context_overflow_with_history_intact(tmp_path: Path) -> None:
    make_files(tmp_path, 3, 6000)
    provider = FakeProvider(
        [
            FakeTurn("", [("Read", {"file_path": "mod00.py"})]),
            FakeTurn("", [("Read", {"file_path": "mod01.py"})]),
            FakeTurn("Ready to continue or answer any specific questions about the code."),
        ],
        truncate=Truncate(window=2500, mode="collapse"),
    )
    # aforo is told a window far larger than the server's: the stages cannot help, detection must.
    agent, rec, journal = make_agent(tmp_path, provider, window=32768)
    result = agent.run("lee los ficheros mod00.py y mod01.py")
    assert result.reason == "context_overflow"
    assert "--context-window" in (result.error or "")
    assert "Ready to continue" not in "".join(e.text for e in rec.of("text_delta"))
    assert agent.messages[0] == Message.user("lee los ficheros mod00.py y mod01.py")
    assert agent.messages[-1].role == "user" and agent.messages[-1].tool_results
    assert rec.of("turn_end")[-1].truncated
    assert journal.events("overflow")


def test_loud_overflow_without_window_info_ends_context_overflow(tmp_path: Path) -> None:
    provider = FakeProvider([FakeTurn(error=ContextOverflowError("too long"))])
    agent, _, _ = make_agent(tmp_path, provider)
    result = agent.run("question")
    assert result.reason == "context_overflow" and "--context-window" in (result.error or "")
    assert len(provider.requests) == 1


def test_loud_overflow_adopts_window_compacts_once_and_retries_once(tmp_path: Path) -> None:
    make_files(tmp_path, 2, 3000)
    calls: list[int] = []

    def respond(req: Request) -> FakeTurn:
        calls.append(len(req.messages))
        if is_summary_request(req):
            return FakeTurn("Goal: read both files. Next action: answer.")
        if len(calls) == 1:
            return FakeTurn("", [("Read", {"file_path": "mod00.py"}), ("Read", {"file_path": "mod01.py"})])
        if len(calls) == 2:
            return FakeTurn(error=ContextOverflowError("request exceeds", n_prompt=2600, n_ctx=2048))
        return FakeTurn("Done.")

    agent, rec, journal = make_agent(tmp_path, FakeProvider(respond), window=8192)
    result = agent.run("read both files")
    assert result.reason == "end_turn"
    assert agent.governor.budget.window == 2048
    assert [e.action for e in rec.of("context")] == ["compacted"]
    assert len(journal.checkpoints) == 1
    assert isinstance(agent.messages[0].content[0], TextBlock)
    assert "read both files" in agent.messages[0].text


def test_loud_overflow_twice_never_loops(tmp_path: Path) -> None:
    provider = FakeProvider(lambda req: FakeTurn(error=ContextOverflowError("too long", n_ctx=512)))
    agent, _, _ = make_agent(tmp_path, provider, window=8192)
    result = agent.run("question")
    assert result.reason == "context_overflow"
    assert len(provider.requests) <= 2


def test_results_are_capped(tmp_path: Path) -> None:
    make_files(tmp_path, 1, 40_000)
    provider = FakeProvider([FakeTurn("", [("Read", {"file_path": "mod00.py"})]), FakeTurn("long file")])
    agent, rec, _ = make_agent(tmp_path, provider, window=4096)
    agent.run("read mod00.py")
    end = rec.of("tool_end")[0]
    assert end.truncated
    content = agent.messages[2].tool_results[0].content
    assert "cut here to fit the context cap" in content
    assert len(content) / 4 <= agent.governor.policy.cap_tokens(agent.governor.budget) * 1.05
    assert isinstance(agent.messages[2].content[0], ToolResult)


def test_generation_beyond_the_window_is_warned_and_marked(tmp_path: Path) -> None:
    class Shifting(FakeProvider):
        def stream(self, request, cancel=None):  # type: ignore[no-untyped-def]
            for event in super().stream(request, cancel):
                if isinstance(event, MessageEnd):
                    # llama-server with --context-shift: prompt 3 600 + 966 generated in a 4096 window.
                    event = MessageEnd(Usage(3600, output_tokens=966), event.stop_reason)
                yield event

    agent, rec, _ = make_agent(tmp_path, Shifting([FakeTurn("an answer")]), window=4096)
    agent.run("question")
    assert rec.of("turn_end")[0].context_shift
    assert any("shifted context" in e.message for e in rec.of("warning"))


def test_repeated_calls_in_one_message_run_once(tmp_path: Path) -> None:
    make_files(tmp_path, 1, 2000)
    same = {"file_path": "mod00.py"}
    provider = FakeProvider([FakeTurn("", [("Read", same)] * 5 + [("LS", {})]), FakeTurn("done")])
    agent, rec, _ = make_agent(tmp_path, provider)
    result = agent.run("read it")
    assert result.reason == "end_turn", result.error
    results = agent.messages[2].tool_results
    well_formed(agent.messages)
    assert "def f_0_0" in results[0].content
    assert all(r.content.startswith("[Same call as ") and len(r.content) < 80 for r in results[1:5])
    assert "mod00.py" in results[5].content  # the LS listing
    assert len(rec.of("tool_end")) == 6


def test_a_step_that_only_repeats_calls_is_dropped_and_the_answer_asked_for(tmp_path: Path) -> None:
    make_files(tmp_path, 2, 2000)
    reads = [("Read", {"file_path": "mod00.py"}), ("Read", {"file_path": "mod01.py"})]
    provider = FakeProvider([FakeTurn("", reads), FakeTurn("", reads[::-1]), FakeTurn("Both define f_0_0.")])
    agent, rec, _ = make_agent(tmp_path, provider)
    result = agent.run("what is in mod00.py and mod01.py?")
    assert (result.reason, result.tool_calls, result.turns) == ("end_turn", 2, 3)
    # The repeat left no trace in the conversation; the call after it could only answer.
    assert [m.role for m in agent.messages] == ["user", "assistant", "user", "assistant"]
    assert agent.messages[-1].text == "Both define f_0_0."
    turns = [r for r in provider.requests if r.max_tokens > 1]  # not the governor's measurements
    assert [r.answer_only for r in turns] == [False, False, True]
    assert turns[1].messages == turns[2].messages  # the same prompt: the server's cache holds it
    assert [e.fields["step"] for e in rec.of("info")] == [
        "asked again for results it has (Read mod01.py, Read mod00.py); answer requested"
    ]
    assert len(rec.of("tool_start")) == 2


def test_a_repeat_of_a_failed_call_makes_no_progress_either(tmp_path: Path) -> None:
    missing = ("Read", {"file_path": "nope.py"})
    provider = FakeProvider(
        [FakeTurn("", [missing]), FakeTurn("", [missing]), FakeTurn("There is no nope.py.")]
    )
    agent, _, _ = make_agent(tmp_path, provider)
    result = agent.run("read nope.py")
    assert (result.reason, result.tool_calls) == ("end_turn", 1)
    assert agent.messages[2].tool_results[0].is_error


def test_calls_when_only_the_answer_may_come_end_the_run_no_progress(tmp_path: Path) -> None:
    make_files(tmp_path, 1, 200)
    read = ("Read", {"file_path": "mod00.py"})
    provider = FakeProvider([FakeTurn("", [read]), FakeTurn("", [read]), FakeTurn("", [read])])
    agent, rec, _ = make_agent(tmp_path, provider, max_turns=10)
    result = agent.run("what is in mod00.py?")
    assert (result.reason, result.turns, result.tool_calls) == ("no_progress", 3, 1)
    assert result.error == "the model kept calling tools (Read mod00.py) when asked to answer"
    well_formed(list(agent.messages))
    assert rec.of("run_end")[0].result.reason == "no_progress"


def test_a_mixed_step_runs_its_new_calls_and_points_repeats_at_their_results(tmp_path: Path) -> None:
    make_files(tmp_path, 2, 2000)
    read0, read1 = ("Read", {"file_path": "mod00.py"}), ("Read", {"file_path": "mod01.py"})
    provider = FakeProvider([FakeTurn("", [read0]), FakeTurn("", [read0, read1]), FakeTurn("done")])
    agent, _, _ = make_agent(tmp_path, provider)
    assert agent.run("read both").reason == "end_turn"
    again, new = agent.messages[4].tool_results
    assert again.content.startswith("[Already done: this is the same call as ")
    assert agent.messages[1].tool_uses[0].id in again.content
    assert "def f_1_0" in new.content


def test_calls_written_as_text_get_ids_a_resumed_conversation_has_not_used(tmp_path: Path) -> None:
    make_files(tmp_path, 2, 100)
    asks = [f'```json\n{{"name": "Read", "arguments": {{"file_path": "mod0{i}.py"}}}}\n```' for i in (0, 1)]
    first, _, _ = make_agent(tmp_path, FakeProvider([FakeTurn(asks[0]), FakeTurn("It defines f_0_0.")]))
    first.run("what is in mod00.py?")
    # A later process resumes the saved conversation with a fresh agent.
    again, _, _ = make_agent(tmp_path, FakeProvider([FakeTurn(asks[1]), FakeTurn("It defines f_1_0.")]))
    again.governor.conversation.replace(first.messages)
    assert again.run("and mod01.py?").reason == "end_turn"
    ids = [u.id for m in again.messages for u in m.tool_uses]
    assert len(ids) == 2 and len(set(ids)) == 2
    well_formed(list(again.messages))
    assert "def f_1_0" in again.messages[-2].tool_results[0].content
