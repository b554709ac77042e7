"""Lanes in the governor, with fake providers: summaries go to the compaction lane and fit ITS window, the
model served is recorded and checked after a summary elsewhere, and a loud refusal is recovered once on
the compaction lane, or the conversation is put back and the run ends named."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from aforo.context.budget import Budget
from aforo.context.counting import Meter
from aforo.context.governor import GovernedLane, Governor
from aforo.context.lanes import Lane
from aforo.context.ledger import is_compacted
from aforo.context.memory_journal import MemoryJournal
from aforo.context.policy import Policy
from aforo.context.summary_request import OMITTED_OUTPUT, SUMMARY_MAX_TOKENS
from aforo.context.tokens import estimate_request
from aforo.errors import CompactionError, ConnectError, ContextOverflowError
from aforo.events import ModelCheck
from aforo.loop.agent import Agent
from aforo.messages import Message, Request, SystemPart
from aforo.providers.fake import FakeProvider, FakeTurn
from aforo.records import Where
from aforo.server_kinds import KINDS
from aforo.servers.kind import ServerInfo
from aforo.servers.open_lane import OpenLane
from aforo.tools.registry import default_registry
from support.scenario import TASK_KEY, Recorder, is_summary_request, make_files, reader_model

PROMPT = f"Task {TASK_KEY}: read every mod*.py file and tell me which one is the longest. Never guess."
SUMMARY = FakeTurn(f"Goal: task {TASK_KEY}, find the longest file.\nNext action: read the rest.")


def lanes_agent(
    workspace: Path,
    main: FakeProvider,
    side: FakeProvider,
    *,
    window: int = 4096,
    side_window: int = 2048,
    policy: Policy | None = None,
) -> tuple[Agent, Recorder, MemoryJournal, Lane]:
    rec, journal = Recorder(), MemoryJournal()
    lane = Lane(
        name="fast",
        model=side.model,
        server="fake",
        provider=side,
        budget=Budget(side_window, 8192, "test"),
        meter=Meter(None, rec),
    )
    governor = Governor(
        GovernedLane(budget=Budget(window, 8192, "test"), name="standard", model=main.model),
        policy=policy or Policy(),
        journal=journal,
        emit=rec,
        compaction=lane,
    )
    agent = Agent(
        provider=main,
        tools=default_registry(workspace),
        governor=governor,
        system=(SystemPart("You are a test assistant.", "system prompt"),),
        emit=rec,
    )
    return agent, rec, journal, lane


def test_summaries_go_to_the_compaction_lane_and_fit_its_window(tmp_path: Path) -> None:
    files = make_files(tmp_path, 12, 2400)
    main = FakeProvider(reader_model(files, batch=False), model="main-model")
    side = FakeProvider(reader_model(files, batch=False), model="fast-model")
    agent, rec, journal, lane = lanes_agent(tmp_path, main, side, window=4096, side_window=2048)
    result = agent.run(PROMPT)
    assert result.reason == "end_turn", result.error
    summaries = side.requests
    assert summaries and all(is_summary_request(r) for r in summaries)
    assert not any(is_summary_request(r) for r in main.requests)
    # Sized for the lane's window (smaller than the conversation's), and asked of the lane's model.
    assert all(estimate_request(r) <= lane.budget.available for r in summaries)
    # The lane's window, not the conversation's, made the transcript give up tool output.
    assert any(OMITTED_OUTPUT in r.messages[0].text for r in summaries)
    assert lane.budget.available < agent.governor.budget.available
    assert {r.model for r in summaries} == {"fast-model"}
    assert all(r.max_tokens == min(lane.budget.reserve, SUMMARY_MAX_TOKENS) for r in summaries)
    compacted = [e for e in rec.of("context") if e.action == "compacted"]
    assert compacted and {(e.lane, e.model) for e in compacted} == {("fast", "fast-model")}
    # Every record says which lane and which model served; both models show up.
    records = journal.events("compaction")
    assert {(r.stamp.lane, r.stamp.served) for r in records} == {("fast", "fast-model")}
    assert {(r.stamp.lane, r.stamp.served) for r in journal.events("admission")[1:]} == {
        ("standard", "main-model")
    }
    assert {e.model for e in rec.of("turn_end")} == {"main-model"}
    assert {e.lane for e in rec.of("turn_end")} == {"standard"}
    # The lane learnt its own calibration from the summaries; the conversation's is its own.
    assert lane.meter.calibration.measured is not None
    assert lane.meter.calibration.measured.estimate == estimate_request(summaries[-1])
    # Each checkpoint names the conversation's lane and the model its server last said it served.
    facts = [c[3] for c in journal.checkpoints]
    assert facts and {(f.stamp.lane, f.stamp.served) for f in facts} == {("standard", "main-model")}


def answering(files: list[str], served: Callable[[Request], str | None]) -> Callable[[Request], FakeTurn]:
    """The reader model, whose answers say `served(request)` served them."""
    read = reader_model(files, batch=False)

    def respond(request: Request) -> FakeTurn:
        turn = read(request)
        return FakeTurn(turn.text, turn.tool_calls, served=served(request))

    return respond


def after_summary(request: Request) -> bool:
    return any(is_compacted(m) for m in request.messages)


def test_the_next_answer_after_a_summary_elsewhere_shows_the_model_restored(tmp_path: Path) -> None:
    files = make_files(tmp_path, 12, 2400)
    main = FakeProvider(answering(files, lambda r: None), model="main-model")
    agent, rec, journal, _ = lanes_agent(tmp_path, main, FakeProvider(lambda r: SUMMARY, model="fast-model"))
    assert agent.run(PROMPT).reason == "end_turn"
    compactions = [e for e in rec.of("context") if e.action == "compacted"]
    checks = [e for e in rec.events if isinstance(e, ModelCheck)]
    assert compactions and len(checks) == len(compactions)
    assert all(c.restored and c.served == c.expected == "main-model" for c in checks)
    assert len(journal.events("model_restored")) == len(compactions)
    assert not journal.events("model_mismatch") and not rec.of("warning")
    # The check belongs to the first answer after the compaction: it comes right before that turn's end.
    after = rec.events[rec.events.index(compactions[0]) :]
    first_end = next(e for e in after if e.type == "turn_end")
    assert after[after.index(first_end) - 1] == checks[0]


def test_a_switched_model_is_a_warning_naming_both(tmp_path: Path) -> None:
    files = make_files(tmp_path, 12, 2400)
    main = FakeProvider(
        answering(files, lambda r: "impostor" if after_summary(r) else None), model="main-model"
    )
    agent, rec, journal, _ = lanes_agent(tmp_path, main, FakeProvider(lambda r: SUMMARY, model="fast-model"))
    agent.run(PROMPT)
    warnings = [e.message for e in rec.of("warning")]
    assert any("'impostor'" in w and "'main-model'" in w and "'standard'" in w for w in warnings), warnings
    (first, *_rest) = journal.events("model_mismatch")
    assert (first.stamp.lane, first.stamp.served) == ("standard", "impostor") and "main-model" in (
        first.cause or ""
    )
    assert not journal.events("model_restored")


def test_a_server_that_does_not_say_its_model_cannot_be_checked_and_says_so(tmp_path: Path) -> None:
    files = make_files(tmp_path, 12, 2400)
    main = FakeProvider(answering(files, lambda r: "" if after_summary(r) else None), model="main-model")
    agent, rec, journal, _ = lanes_agent(tmp_path, main, FakeProvider(lambda r: SUMMARY, model="fast-model"))
    agent.run(PROMPT)
    assert any("does not say which model" in e.message for e in rec.of("warning"))
    assert journal.events("warning") and not journal.events("model_restored")


def three_reads_then(after: Callable[[Request], FakeTurn]) -> Callable[[Request], FakeTurn]:
    def respond(request: Request) -> FakeTurn:
        if len(request.messages) == 1 and not after_summary(request):
            return FakeTurn("", [("Read", {"file_path": f"mod0{i}.py"}) for i in range(3)])
        return after(request)

    return respond


def test_a_loud_refusal_is_compacted_once_on_the_lane_and_retried_once(tmp_path: Path) -> None:
    make_files(tmp_path, 3, 3000)
    refusals: list[int] = []

    def then(request: Request) -> FakeTurn:
        if not after_summary(request):
            refusals.append(len(request.messages))
            # No window named: without a second lane this would end the run at once.
            return FakeTurn(error=ContextOverflowError("request exceeds the available context size"))
        return FakeTurn(f"Task {TASK_KEY}: mod02.py is the longest.")

    main = FakeProvider(three_reads_then(then), model="main-model")
    side = FakeProvider(lambda r: SUMMARY, model="fast-model")
    agent, rec, journal, _ = lanes_agent(tmp_path, main, side, window=8192)
    result = agent.run(PROMPT)
    assert result.reason == "end_turn", result.error
    assert len(refusals) == 1 and len(side.requests) == 1
    assert [e.action for e in rec.of("context")] == ["compacted"]
    assert rec.of("context")[0].lane == "fast"
    assert len(journal.events("model_restored")) == 1
    assert agent.governor.budget.window == 8192  # nothing named a smaller one


def test_a_second_refusal_ends_the_run_never_a_loop(tmp_path: Path) -> None:
    make_files(tmp_path, 3, 3000)
    then = lambda r: FakeTurn(error=ContextOverflowError("too long", n_ctx=8192))  # noqa: E731
    main = FakeProvider(three_reads_then(then), model="main-model")
    side = FakeProvider(lambda r: SUMMARY, model="fast-model")
    agent, _, _, _ = lanes_agent(tmp_path, main, side, window=8192)
    result = agent.run(PROMPT)
    assert result.reason == "context_overflow"
    assert len(main.requests) == 3 and len(side.requests) == 1


def test_when_the_lane_fails_the_conversation_is_put_back_and_the_run_ends_named(tmp_path: Path) -> None:
    make_files(tmp_path, 3, 3000)
    seen: list[tuple[Message, ...]] = []

    def then(request: Request) -> FakeTurn:
        seen.append(request.messages)
        # The server names a smaller window: clearing fires in the recovery, before the compaction.
        return FakeTurn(error=ContextOverflowError("too long", n_prompt=2600, n_ctx=2048))

    def reads_then(request: Request) -> FakeTurn:
        # One read, then two: the first result has been seen when the refusal comes (only a seen result
        # is ever cleared).
        if after_summary(request) or len(request.messages) > 3:
            return then(request)
        if len(request.messages) == 1:
            return FakeTurn("", [("Read", {"file_path": "mod00.py"})])
        return FakeTurn("", [("Read", {"file_path": f"mod0{i}.py"}) for i in (1, 2)])

    main = FakeProvider(reads_then, model="main-model")
    side = FakeProvider(
        [FakeTurn(error=ConnectError("no server at http://127.0.0.1:9/v1"))], model="fast-model"
    )
    agent, rec, journal, _ = lanes_agent(
        tmp_path, main, side, window=8192, policy=Policy(keep_tool_results=1)
    )
    result = agent.run(PROMPT)
    assert result.reason == "context_overflow"
    assert "lane 'fast'" in (result.error or "") and "no server at" in (result.error or "")
    assert len(seen) == 1 and len(side.requests) == 1
    # The clearing the recovery made was undone from its checkpoint: the conversation is the refused one.
    assert agent.messages == seen[0]
    assert [e.action for e in rec.of("context")] == ["cleared", "restored"]
    # Put back from the checkpoint the clearing wrote (the compaction's own came after it).
    assert rec.of("context")[1].checkpoint == journal.checkpoints[0][0]
    assert [c[1] for c in journal.checkpoints] == ["clear", "compact"]
    assert journal.events("recovery")


def test_a_lane_too_small_for_the_summary_request_is_an_error_naming_it(tmp_path: Path) -> None:
    big = "Never edit files. " + "Explain every line of the module carefully. " * 80
    main = FakeProvider([FakeTurn("ok")], model="main-model")
    side = FakeProvider([SUMMARY], model="fast-model")
    agent, _, journal, _ = lanes_agent(tmp_path, main, side, window=8192, side_window=600)
    agent.run(big)
    before = agent.messages
    try:
        agent.governor.compact_now(agent.request(), main)
    except CompactionError as exc:
        assert "lane 'fast'" in str(exc) and "context_window" in str(exc)
    else:
        raise AssertionError("the summary request cannot fit 600 tokens")
    assert agent.messages == before and not journal.checkpoints and not side.requests


def test_the_summary_is_sampled_like_the_conversation(tmp_path: Path) -> None:
    files = make_files(tmp_path, 12, 2400)
    main = FakeProvider(reader_model(files, batch=False), model="main-model")
    side = FakeProvider(lambda r: SUMMARY, model="fast-model")
    agent, _, _, _ = lanes_agent(tmp_path, main, side)
    agent.temperature = 0.0
    agent.run(PROMPT)
    assert side.requests and {r.temperature for r in side.requests} == {0.0}


def opened_lane(provider: FakeProvider, budget: Budget) -> OpenLane:
    server = ServerInfo(kind="llama.cpp", root_url="http://h", v1_url="http://h/v1")
    return OpenLane(
        name="fast",
        server=server,
        kind=KINDS[2],
        server_kind="llama.cpp",
        model="small",
        budget=budget,
        provider=provider,
        counter=None,
        window_known=True,
    )


def test_an_opened_lane_is_the_summary_lane_of_another_conversation_as_it_is() -> None:
    provider = FakeProvider([])
    budget = Budget(2048, max_tokens=256, source="server")
    opened = opened_lane(provider, budget)
    meter = Meter(None, lambda event: None)
    lane = opened.summary_lane(meter)
    assert (lane.name, lane.model, lane.server) == ("fast", "small", "llama.cpp")
    assert lane.provider is provider and lane.budget is budget and lane.meter is meter


def test_a_governor_is_built_on_an_opened_lane_as_it_is() -> None:
    budget = Budget(2048, max_tokens=256, source="server")
    governor = Governor(
        opened_lane(FakeProvider([]), budget),
        policy=Policy(),
        journal=MemoryJournal(),
        emit=lambda event: None,
    )
    assert governor.where() == Where(
        model="small", server="llama.cpp", window=2048, window_source="server", counter="estimate"
    )
    assert (governor.lane, governor.budget) == ("fast", budget)
    assert governor.watch.window_known and governor.summary_lane == "fast"
