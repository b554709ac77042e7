"""The governor end to end with the fake provider: the seed's shapes, budgets, transactions, bounds."""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from aforo import reply_format
from aforo.context.compaction import CUT_SUMMARY
from aforo.context.ledger import is_compacted
from aforo.context.memory_journal import MemoryJournal
from aforo.context.policy import Policy
from aforo.context.summary_request import SUMMARY_ASK, SUMMARY_MAX_TOKENS
from aforo.context.tokens import estimate_request
from aforo.errors import CompactionError, HTTPStatusError, StoreError, TransformError
from aforo.messages import Message, Request
from aforo.providers.fake import FakeProvider, FakeTurn, Truncate
from aforo.records import CheckpointFacts, Decision, Stamp, Where
from aforo.wire.openai_chat import messages_to_openai
from support.scenario import TASK_KEY, is_summary_request, make_agent, make_files, reader_model

PROMPT = f"Task {TASK_KEY}: read every mod*.py file and tell me which one is the longest. Never guess."


def sent_sizes(provider: FakeProvider) -> list[int]:
    return [estimate_request(r) for r in provider.requests]


def test_eight_files_at_once_are_read_as_far_as_they_fit_and_never_cleared_unread(tmp_path: Path) -> None:
    # Eight results at the cap are more than the window holds: the step reads what fits before
    # compaction (each counted at the cap), names the rest, and the model asks for them again.
    files = make_files(tmp_path, 8, 3000)
    provider = FakeProvider(reader_model(files, batch=True))
    agent, rec, journal = make_agent(tmp_path, provider, window=4096)
    result = agent.run(PROMPT)
    assert result.reason == "end_turn", result.error
    assert any(e.truncated for e in rec.of("tool_end")), "the cap fired"
    kinds = [e.type for e in rec.events]
    first = rec.events[: kinds.index("info")]
    assert [e.input["file_path"] for e in first if e.type == "tool_start"] == files[:3]  # 3 x 614 fit
    later = ", ".join(f"Read {f}" for f in files[3:])
    # What deferred them, as it is: each result counted at the cap (614 tokens here), and the room left
    # before compaction, which holds three of them and not four.
    step = rec.of("info")[0].fields["step"]
    said = re.fullmatch(
        rf"not read yet: {later} \(a step reads 3 new results at most now: each is counted at the cap, "
        r"614 tokens, all one may take, and ([\d,]+) tokens are left before compaction\)",
        step,
    )
    assert said, step
    assert 3 * 614 <= int(said[1].replace(",", "")) < 4 * 614
    # The model is told in the last result, and asks for them again.
    asked = provider.requests[1].messages[-1].tool_results[-1].content
    why = step[step.index("(") + 1 : -1]
    assert asked.endswith(f"[Not read yet: {why}. Ask again after this for: {later}.]")
    # Results the model has not read yet are never cleared (it would only ask again): compacted only.
    assert {e.action for e in rec.of("context")} == {"compacted"}
    assert {c[1] for c in journal.checkpoints} == {"compact"}  # no clearing, so no checkpoint for one
    assert max(sent_sizes(provider)) <= agent.governor.budget.available
    assert TASK_KEY in agent.messages[-1].text


def test_read_results_are_cleared_and_the_rest_read_later_without_compaction(tmp_path: Path) -> None:
    # Two files, then six: the six do not fit, so they are read as room allows, and the results the
    # model has read are cleared to make it. Once all six came at once and were compacted unread.
    files = make_files(tmp_path, 8, 3000)
    provider = FakeProvider(reader_model(files, batch=(2, 6)))
    agent, rec, journal = make_agent(tmp_path, provider, window=4096, policy=Policy(keep_tool_results=2))
    result = agent.run(PROMPT)
    assert result.reason == "end_turn", result.error
    assert any(e.truncated for e in rec.of("tool_end")), "the cap fired"
    actions = [e.action for e in rec.of("context")]
    assert actions and set(actions) == {"cleared"}
    assert sorted(e.input["file_path"] for e in rec.of("tool_start")) == files  # each read once
    # Every transformation left a checkpoint first, with what /undo needs.
    assert len(journal.checkpoints) == len(actions)
    assert [c[1] for c in journal.checkpoints] == ["clear" if a == "cleared" else "compact" for a in actions]
    assert PROMPT in journal.checkpoints[0][2][0].text
    # The original request survives verbatim, and the answer is the task's.
    assert PROMPT in agent.messages[0].text
    assert TASK_KEY in agent.messages[-1].text
    available = agent.governor.budget.available
    assert max(sent_sizes(provider)) <= available


def test_twelve_files_one_per_turn_compact_and_finish(tmp_path: Path) -> None:
    files = make_files(tmp_path, 12, 2400)
    provider = FakeProvider(reader_model(files, batch=False))
    agent, rec, journal = make_agent(tmp_path, provider, window=4096)
    result = agent.run(PROMPT)
    assert result.reason == "end_turn", result.error
    compactions = [e for e in rec.of("context") if e.action == "compacted"]
    assert len(compactions) >= 1
    assert all(e.after < e.before for e in compactions)
    assert f"all {len(files)} files read" in agent.messages[-1].text
    assert PROMPT in agent.messages[0].text
    assert max(sent_sizes(provider)) <= agent.governor.budget.available
    assert len(journal.events("compaction")) == len(compactions)
    assert journal.events("admission")
    # Each compaction says how large its summary request was: at most what fits, never dropped.
    available = agent.governor.budget.available
    assert all(0 < (r.summary_tokens or 0) <= available for r in journal.events("compaction"))


def _last_turn_before(sent: list[Request], i: int) -> Request:
    """The conversation's request the server read last before request `i` (not a side call: those carry
    no system prompt)."""
    return next(r for r in reversed(sent[:i]) if r.system and not is_summary_request(r))


def as_steps(respond: Callable[[Request], FakeTurn]) -> Callable[[Request], FakeTurn]:
    """The scripted model's turns as a server that forces the reply format writes them: one JSON step."""

    def step(request: Request) -> FakeTurn:
        turn = respond(request)
        if not request.constrained:
            return turn
        if turn.tool_calls:
            return FakeTurn(json.dumps({"read": [args["file_path"] for _, args in turn.tool_calls]}))
        return FakeTurn(json.dumps({"answer": turn.text}))

    return step


# Keeping two results, a clearing and a compaction come in one admission once: the clearing rewrites
# old results, and the summary is asked of the conversation as the server last read it, before that.
@pytest.mark.parametrize("keep", [6, 2])
def test_on_its_own_server_the_summary_is_asked_as_one_more_turn_of_the_conversation(
    tmp_path: Path, keep: int
) -> None:
    """llama-server keeps one slot's prompt and reads again only what follows the longest prefix it
    shares with the new one. A summary under its own system prompt shared nothing: measured with the
    1.5B, 2 608 tokens read in 99 s, past its share of the question's time, at every compaction of a
    held-out round. Asked as one more turn, the server reads only that turn."""
    files = make_files(tmp_path, 12, 2400)
    provider = FakeProvider(as_steps(reader_model(files, batch=False)))
    policy = Policy(clear_at=0.5, compact_at=0.6, keep_tool_results=keep)
    agent, rec, _ = make_agent(tmp_path, provider, window=4096, policy=policy, constrained=True)
    assert agent.run(PROMPT).reason == "end_turn"
    sent = provider.requests
    asked = [i for i, r in enumerate(sent) if is_summary_request(r)]
    assert asked and len(asked) == len([e for e in rec.of("context") if e.action == "compacted"])
    for i in asked:
        summary, before = sent[i], _last_turn_before(sent, i)
        assert (summary.system, summary.tools) == (before.system, before.tools)
        # All the server read last comes first, but the question it repeated after the newest results.
        wire = reply_format.wire_messages(before)
        assert reply_format.wire_messages(summary)[: len(wire) - 1] == wire[:-1]
        assert summary.messages[-1].text.startswith(SUMMARY_ASK)
        assert summary.answer_only  # the schema allows only the answer: a summary, never a call
        assert summary.max_tokens == SUMMARY_MAX_TOKENS < agent.governor.budget.reserve


def test_where_the_model_may_call_a_tool_the_summary_is_asked_of_the_transcript(tmp_path: Path) -> None:
    # Tool definitions and no schema (the gateway's clients send theirs): told not to call, a model may
    # still call, and Ollama's OpenAI endpoint ignores tool_choice; the transcript carries no tools.
    files = make_files(tmp_path, 12, 2400)
    provider = FakeProvider(reader_model(files, batch=False))
    agent, rec, _ = make_agent(tmp_path, provider, window=4096, policy=Policy(clear_at=0.5, compact_at=0.6))
    assert agent.run(PROMPT).reason == "end_turn"
    summaries = [r for r in provider.requests if is_summary_request(r)]
    assert summaries and all(([p.name for p in r.system], r.tools) == (["compaction"], ()) for r in summaries)
    assert len(summaries) == len([e for e in rec.of("context") if e.action == "compacted"])


def test_a_summary_with_no_room_for_one_more_turn_is_asked_of_the_transcript(tmp_path: Path) -> None:
    # Compacted only when the conversation is within a few tokens of what fits: the turn that asks for
    # the summary does not fit after it, so the transcript is shrunk to fit instead.
    files = make_files(tmp_path, 12, 2400)
    provider = FakeProvider(reader_model(files, batch=False))
    agent, rec, _ = make_agent(tmp_path, provider, window=4096, policy=Policy(compact_at=1.0))
    assert agent.run(PROMPT).reason == "end_turn"
    summaries = [r for r in provider.requests if is_summary_request(r)]
    assert summaries and all([p.name for p in r.system] == ["compaction"] for r in summaries)
    assert len(summaries) == len([e for e in rec.of("context") if e.action == "compacted"])
    assert all(estimate_request(r) <= agent.governor.budget.available for r in summaries)


@pytest.mark.parametrize("seed", range(12))
def test_no_request_ever_exceeds_available(tmp_path: Path, seed: int) -> None:
    rnd = random.Random(seed)
    files = make_files(tmp_path, rnd.randint(3, 14), rnd.randint(500, 9000))
    window = rnd.choice([2048, 3000, 4096, 6000, 8192])
    provider = FakeProvider(reader_model(files, batch=rnd.random() < 0.5))
    agent, _, _ = make_agent(tmp_path, provider, window=window, max_turns=40)
    result = agent.run(PROMPT)
    assert result.reason in ("end_turn", "context_overflow"), result.error
    assert max(sent_sizes(provider)) <= agent.governor.budget.available
    assert PROMPT in agent.messages[0].text


def _history_then(respond_summary: FakeTurn | Exception, tmp_path: Path):
    """A run that must compact, with a scripted answer to the summary request."""
    files = make_files(tmp_path, 8, 3000)
    reader = reader_model(files, batch=True)

    def respond(request: Request) -> FakeTurn:
        if is_summary_request(request):
            if isinstance(respond_summary, Exception):
                return FakeTurn(error=respond_summary)
            return respond_summary
        return reader(request)

    return respond


@pytest.mark.parametrize(
    ("summary", "why"),
    [
        (FakeTurn("Goal: partial", stop_reason="max_tokens"), "not completed"),
        (FakeTurn("I can't", stop_reason="refusal"), "not completed"),
        (FakeTurn("   "), "empty summary"),
        (HTTPStatusError("server error 500", 500), "summary request failed"),
    ],
)
def test_failed_compaction_warns_and_leaves_conversation(tmp_path: Path, summary, why: str) -> None:
    provider = FakeProvider(_history_then(summary, tmp_path))
    agent, rec, _ = make_agent(tmp_path, provider, window=4096)
    agent.run(PROMPT)
    warnings = [e.message for e in rec.of("warning")]
    assert any("Compaction failed" in w and why in w for w in warnings), warnings
    assert "compacted" not in [e.action for e in rec.of("context")]
    assert agent.messages[0].text == PROMPT  # untouched, not a summary
    # Bounded: one summary attempt per model call, never a loop of summaries.
    calls = [r for r in provider.requests if is_summary_request(r)]
    normal = [r for r in provider.requests if not is_summary_request(r)]
    assert len(calls) <= len(normal)


def test_a_summary_cut_at_its_output_limit_is_kept_and_the_run_goes_on(tmp_path: Path) -> None:
    # The 0.5B model wrote past its word budget to the output limit; the run ended context_overflow.
    cut = "Goal: find the longest file for task BRAVO-2718.\nEvidence: read mod00.py, mod01.py and mod0"
    provider = FakeProvider(_history_then(FakeTurn(cut, stop_reason="max_tokens"), tmp_path))
    agent, rec, journal = make_agent(tmp_path, provider, window=4096)
    result = agent.run(PROMPT)
    assert result.reason == "end_turn", result.error
    assert "compacted" in [e.action for e in rec.of("context")]
    compacted = [m.text for r in provider.requests for m in r.messages if is_compacted(m)]
    assert compacted and f"{cut}\n{CUT_SUMMARY}" in compacted[0]
    assert any("cut at its output limit" in (r.cause or "") for r in journal.events("compaction"))


def test_truncated_summary_request_is_refused(tmp_path: Path) -> None:
    files = make_files(tmp_path, 8, 3000)
    reader = reader_model(files, batch=True)

    class LyingSummaries(FakeProvider):
        def input_tokens(self, request: Request) -> int:
            return 63 if is_summary_request(request) else super().input_tokens(request)

    agent, rec, _ = make_agent(tmp_path, LyingSummaries(reader), window=4096)
    agent.run(PROMPT)
    warnings = " ".join(e.message for e in rec.of("warning"))
    assert "truncated the summary request" in warnings
    assert agent.messages[0].text == PROMPT


class DenseSummaries(FakeProvider):
    """A summary request tokenizes to `density` of its estimate (0.4: another shape than the
    conversation's turns); `missing` tokens of it go unread."""

    density = 0.4
    missing = 0

    def tokenize(self, request: Request) -> int:
        if is_summary_request(request):
            return int(self.density * estimate_request(request))
        return super().input_tokens(request)

    def input_tokens(self, request: Request) -> int:
        return self.tokenize(request) - (self.missing if is_summary_request(request) else 0)


class ServerCounter:
    """The exact counter of a `DenseSummaries` server: its tokenizer, whatever the server then reads."""

    name, exact = "fake-exact", True

    def __init__(self, server: DenseSummaries) -> None:
        self.server = server

    def count(self, request: Request) -> int:
        return self.server.tokenize(request)

    def count_messages(self, messages: tuple[Message, ...] | list[Message]) -> int:
        return self.count(Request(model="m", messages=tuple(messages), max_tokens=1))


def test_a_summary_request_that_matches_its_exact_count_is_not_taken_for_a_truncation(
    tmp_path: Path,
) -> None:
    files = make_files(tmp_path, 8, 3000)
    provider = DenseSummaries(reader_model(files, batch=True))
    agent, rec, journal = make_agent(tmp_path, provider, window=4096, counter=ServerCounter(provider))
    agent.run(PROMPT)
    # Far under its estimate (measured on llama-server: 1 100 tokens for about 1 154 expected), but it is
    # the exact count: the whole request was read.
    assert [e.message for e in rec.of("warning")] == []
    assert "compacted" in [e.action for e in rec.of("context")]
    summaries = [r for r in provider.requests if is_summary_request(r)]
    assert [r.summary_tokens for r in journal.events("compaction")] == [
        provider.input_tokens(r) for r in summaries
    ]


def test_a_summary_request_read_short_of_its_exact_count_is_refused(tmp_path: Path) -> None:
    # 40 tokens unread of a request the size of its estimate: too few for the rules without a counter
    # to see (the reported share and the growth both look normal), so only the exact count tells.
    files = make_files(tmp_path, 8, 3000)
    provider = DenseSummaries(reader_model(files, batch=True))
    provider.density, provider.missing = 1.0, 40
    agent, rec, _ = make_agent(tmp_path, provider, window=4096, counter=ServerCounter(provider))
    agent.run(PROMPT)
    warnings = " ".join(e.message for e in rec.of("warning"))
    assert "truncated the summary request" in warnings and "its exact count" in warnings, warnings
    assert "compacted" not in [e.action for e in rec.of("context")]
    assert agent.messages[0].text == PROMPT


def test_prompt_larger_than_available_is_rejected_locally(tmp_path: Path) -> None:
    provider = FakeProvider([FakeTurn("never")])
    agent, _, journal = make_agent(tmp_path, provider, window=1024)
    result = agent.run("x" * 20_000)
    assert result.reason == "context_overflow"
    assert "Nothing was sent" in (result.error or "")
    assert provider.requests == []
    assert journal.events("rejection")[0].cause == "does_not_fit"


def test_provider_failure_after_transformation_restores_history(tmp_path: Path) -> None:
    files = make_files(tmp_path, 8, 3000)
    reader = reader_model(files, batch=True)
    state = {"compacted": False}

    def respond(request: Request) -> FakeTurn:
        if is_summary_request(request):
            state["compacted"] = True
            return reader(request)
        if state["compacted"]:
            return FakeTurn(error=HTTPStatusError("HTTP 503 from the server", 503))
        return reader(request)

    agent, rec, journal = make_agent(tmp_path, FakeProvider(respond), window=4096)
    result = agent.run(PROMPT)
    assert result.reason == "error"
    actions = [e.action for e in rec.of("context")]
    assert actions[-1] == "restored"
    assert agent.messages[0].text == PROMPT
    assert len(agent.messages) > 2 and agent.messages[-1].tool_results
    assert journal.events("recovery")


def test_always_truncating_server_is_bounded(tmp_path: Path) -> None:
    files = make_files(tmp_path, 6, 6000)
    provider = FakeProvider(reader_model(files, batch=False), truncate=Truncate(1500, "plateau"))
    agent, _, _ = make_agent(tmp_path, provider, window=16_000)
    result = agent.run(PROMPT)
    assert result.reason == "context_overflow"
    assert len(provider.requests) <= 8


def test_always_failing_server_is_bounded(tmp_path: Path) -> None:
    provider = FakeProvider(lambda r: FakeTurn(error=HTTPStatusError("HTTP 500", 500)))
    agent, _, _ = make_agent(tmp_path, provider)
    assert agent.run(PROMPT).reason == "error"
    assert len(provider.requests) == 1


def test_calibration_ignores_truncated_and_zero_usage(tmp_path: Path) -> None:
    make_files(tmp_path, 1, 100)
    provider = FakeProvider(
        [FakeTurn("", [("Read", {"file_path": "mod00.py"})]), FakeTurn("done")], report_usage=False
    )
    agent, _, _ = make_agent(tmp_path, provider)
    agent.run("read")
    assert agent.governor.meter.calibration.measured is None
    assert agent.governor.meter.calibration.ratio == 1.0


def test_compaction_that_would_not_save_room_is_not_applied(tmp_path: Path) -> None:
    """Early in a run the summary plus what aforo keeps verbatim can outweigh the little it replaces."""
    summary = "Goal: answer hi. " + "The user greeted the assistant and the assistant greeted back. " * 20
    provider = FakeProvider([FakeTurn("Hello."), FakeTurn(summary)])
    agent, _, journal = make_agent(tmp_path, provider, window=8192, max_tokens=1024)
    assert agent.run("hi").reason == "end_turn"
    before = agent.messages
    request = agent.request()
    with pytest.raises(CompactionError, match="outweigh what was summarized") as caught:
        agent.governor.compact_now(request, provider)
    assert "more than the" not in str(caught.value)
    assert agent.messages == before
    assert journal.events("compaction") == []


class NoCheckpoints(MemoryJournal):
    """A journal whose disk is full: every checkpoint write fails."""

    def checkpoint(self, messages: tuple[Message, ...], facts: CheckpointFacts) -> str:
        raise StoreError("disk full")


def test_no_checkpoint_no_transformation(tmp_path: Path) -> None:
    files = make_files(tmp_path, 8, 3000)
    provider = FakeProvider(reader_model(files, batch=(2, 6)))
    policy = Policy(keep_tool_results=2)
    agent, rec, journal = make_agent(tmp_path, provider, window=4096, journal=NoCheckpoints(), policy=policy)
    result = agent.run(PROMPT)
    assert rec.of("context") == []  # neither cleared nor compacted
    warnings = [e.message for e in rec.of("warning")]
    assert "Not clearing the conversation: the checkpoint could not be written (disk full)." in warnings
    assert "Not compacting the conversation: the checkpoint could not be written (disk full)." in warnings
    assert any(w.startswith("Compaction failed: the checkpoint could not be written") for w in warnings)
    assert "checkpoint: disk full" in {r.cause for r in journal.events("rejection")}
    assert journal.events("clearing") == journal.events("compaction") == []
    # Nothing was cleared behind the user's back, and admission still refused what did not fit.
    assert not any(r.cleared for m in agent.messages for r in m.tool_results)
    assert agent.messages[0].text == PROMPT
    assert result.reason == "context_overflow" and "Nothing was sent" in (result.error or "")
    assert max(sent_sizes(provider)) <= agent.governor.budget.available


def test_clear_and_undo_without_a_checkpoint_keep_the_conversation(tmp_path: Path) -> None:
    agent, _, journal = make_agent(tmp_path, FakeProvider([FakeTurn("Hello.")]), journal=NoCheckpoints())
    agent.run("hi")
    before = agent.messages
    with pytest.raises(TransformError, match="so the conversation was kept"):
        agent.governor.start_over(agent.request())
    assert agent.messages == before
    journal.checkpoints.append(("mem-0", "clear", [Message.user("older")], journal_facts("clear")))
    with pytest.raises(TransformError, match="nothing was undone"):
        agent.governor.undo(agent.request())
    assert agent.messages == before
    assert [r.cause for r in journal.events("rejection")] == ["checkpoint: disk full"] * 2


def journal_facts(reason: str) -> CheckpointFacts:
    return CheckpointFacts(reason=reason, tokens_before=0, stamp=Stamp(where=Where(), lane=""))


def test_clear_command_is_checkpointed_and_recorded(tmp_path: Path) -> None:
    agent, rec, journal = make_agent(tmp_path, FakeProvider([FakeTurn("Hello.")]))
    agent.run("hi")
    agent.governor.start_over(agent.request())
    assert agent.messages == ()
    (event,) = rec.of("context")
    assert event.action == "reset" and event.count == 2 and event.checkpoint == journal.checkpoints[0][0]
    (record,) = journal.events("clearing")
    assert record.cause == "/clear" and record.checkpoint == event.checkpoint
    assert record.tokens_after is not None and record.tokens_before is not None
    assert record.tokens_after < record.tokens_before


def test_checkpoints_keep_the_decisions_and_next_action_of_the_last_summary(tmp_path: Path) -> None:
    files = make_files(tmp_path, 8, 3000)
    agent, _, journal = make_agent(tmp_path, FakeProvider(reader_model(files, batch=True)), window=4096)
    agent.run(PROMPT)
    first = journal.checkpoints[0][3]
    assert first.decisions == ()  # no summary in the conversation yet
    # The run was at work when it compacted: the next action is its request, whatever a summary says.
    assert first.next_action == f"answer the request in flight: {PROMPT}"
    agent.governor.start_over(agent.request())  # checkpoints the compacted conversation
    facts = journal.checkpoints[-1][3]
    assert facts.reason == "manual_clear" and TASK_KEY in facts.goal
    # What reader_model's summary said, taken from the compacted conversation the checkpoint holds.
    assert facts.decisions == (Decision("read files one by one", "the window is small."),)
    assert facts.next_action == "read the remaining files."


@pytest.mark.parametrize("said", ["[Summary of the conversation]", "Summary:\n```\n```"])
def test_a_summary_that_says_nothing_is_left_out_and_the_compaction_still_applies(
    tmp_path: Path, said: str
) -> None:
    # What Qwen2.5-Coder 0.5B wrote as a summary in the long-session task (make bench-real), and an
    # empty fence.
    provider = FakeProvider(_history_then(FakeTurn(said), tmp_path))
    agent, rec, journal = make_agent(tmp_path, provider, window=4096)
    agent.run(PROMPT)
    assert "compacted" in [e.action for e in rec.of("context")]
    head = next(m for m in agent.messages if m.text.startswith("[Conversation compacted"))
    assert said.split()[0] not in head.text
    assert "## Summary of the work so far" not in head.text
    assert PROMPT in head.text  # the request is still there, verbatim
    causes = [r.cause or "" for r in journal.events("compaction")]
    assert any("summary said nothing and was left out" in c for c in causes), causes


def test_a_summary_with_something_to_say_is_kept(tmp_path: Path) -> None:
    summary = "Goal: read the files. Evidence: f00.txt holds the key."
    provider = FakeProvider(_history_then(FakeTurn(summary), tmp_path))
    agent, rec, _ = make_agent(tmp_path, provider, window=4096)
    agent.run(PROMPT)
    assert "compacted" in [e.action for e in rec.of("context")]
    head = next(m for m in agent.messages if m.text.startswith("[Conversation compacted"))
    assert f"## Summary of the work so far\n{summary}" in head.text


def _said(greeting: str) -> str:
    """A long answer that does not repeat itself (a loop would be stopped at its first copy)."""
    return " ".join(f"{greeting} number {n}." for n in range(200))


def test_a_compaction_the_user_asks_for_keeps_no_worked_example(tmp_path: Path) -> None:
    """`/compact` is asked for room: the conversation becomes the summary, not the summary and the last
    request answered (which an automatic compaction keeps when it fits)."""
    summary = "Goal: two questions answered. Evidence: both were greetings."
    provider = FakeProvider([FakeTurn(_said("Hello")), FakeTurn(_said("Hi again")), FakeTurn(summary)])
    agent, _, _ = make_agent(tmp_path, provider, window=8192, max_tokens=1024)
    assert agent.run("hi").reason == "end_turn"
    assert agent.run("hi again").reason == "end_turn"
    agent.governor.compact_now(agent.request(), provider)
    assert [m.role for m in agent.messages] == ["user"]
    assert "hi again" in agent.messages[0].text  # the requests, verbatim in the compacted message


def test_after_a_compaction_the_next_request_follows_the_summary_with_no_answer_of_aforos(
    tmp_path: Path,
) -> None:
    """An acknowledgement after the compacted message was the only answer the 0.5B model saw after a
    /compact: it gave it again as its answer. The next request is joined to the compacted message on the
    wire instead, so no template sees two user turns in a row."""
    summary = "Goal: two questions answered. Evidence: both were greetings."
    turns = [FakeTurn(_said("Hello")), FakeTurn(_said("Hi again")), FakeTurn(summary), FakeTurn("Bye.")]
    provider = FakeProvider(turns)
    agent, _, _ = make_agent(tmp_path, provider, window=8192, max_tokens=1024)
    agent.run("hi")
    agent.run("hi again")
    agent.governor.compact_now(agent.request(), provider)
    assert agent.run("and now?").reason == "end_turn"
    sent = provider.requests[-1]
    assert [m.role for m in sent.messages] == ["user", "user"]
    wire = messages_to_openai(sent)
    assert [m["role"] for m in wire] == ["system", "user"]
    assert wire[1]["content"] == f"{sent.messages[0].text}\n\nand now?"
    assert [m["role"] for m in reply_format.render(sent.messages, ())] == ["user"]


def test_a_second_compaction_before_any_answer_says_there_is_nothing_new(tmp_path: Path) -> None:
    summary = "Goal: two questions answered. Evidence: both were greetings."
    provider = FakeProvider([FakeTurn(_said("Hello")), FakeTurn(_said("Hi again")), FakeTurn(summary)])
    agent, _, _ = make_agent(tmp_path, provider, window=8192, max_tokens=1024)
    agent.run("hi")
    agent.run("hi again")
    agent.governor.compact_now(agent.request(), provider)
    compacted = agent.messages
    with pytest.raises(CompactionError, match="no answer from the model since the last compaction"):
        agent.governor.compact_now(agent.request(), provider)
    assert agent.messages == compacted
