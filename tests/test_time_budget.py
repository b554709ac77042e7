"""Every question ends within --max-turns and a time budget the user can see: past either, the model is
asked to answer from what it has; one that still calls tools ends the run with a named ending."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aforo.messages import Request
from aforo.providers.fake import FakeProvider, FakeTurn
from support.cli import run_cli
from support.live_server import LiveServer
from support.scenario import make_agent, make_files
from test_constrained_cli import llamacpp_steps, workspace

ANSWER = "From what I read: mod00.py and mod01.py define small functions."


class Clock:
    """Each model call takes `step` seconds."""

    def __init__(self, step: float) -> None:
        self.now, self.step = 0.0, step

    def __call__(self) -> float:
        return self.now


def reader(clock: Clock, *, obeys: bool = True):
    def respond(request: Request) -> FakeTurn:
        clock.now += clock.step
        if request.answer_only and obeys:
            return FakeTurn(ANSWER)
        return FakeTurn("", [("Read", {"file_path": f"mod{len(request.messages) // 2:02d}.py"})])

    return respond


def test_past_the_time_budget_the_model_is_asked_to_answer_from_what_it_has(tmp_path: Path) -> None:
    make_files(tmp_path, 6, 200)
    clock = Clock(100.0)
    provider = FakeProvider(reader(clock))
    agent, rec, _ = make_agent(tmp_path, provider)
    agent.time_budget, agent.clock = 150.0, clock
    result = agent.run("What do these files do?")
    assert (result.reason, result.answer, result.turns) == ("end_turn", ANSWER, 3)
    assert [r.answer_only for r in provider.requests] == [False, False, True]
    assert [e.fields["step"] for e in rec.of("info")] == [
        "the time budget of 150 s is spent; answer requested"
    ]


def test_a_model_that_keeps_calling_tools_past_the_budget_ends_time_budget(tmp_path: Path) -> None:
    make_files(tmp_path, 6, 200)
    clock = Clock(100.0)
    provider = FakeProvider(reader(clock, obeys=False))
    agent, _rec, _ = make_agent(tmp_path, provider)
    agent.time_budget, agent.clock = 150.0, clock
    result = agent.run("What do these files do?")
    assert result.reason == "time_budget" and result.turns == 3
    assert "time budget of 150 s" in (result.error or "") and "--time-budget" in (result.error or "")


def test_the_last_turn_of_max_turns_asks_for_the_answer(tmp_path: Path) -> None:
    make_files(tmp_path, 6, 200)
    provider = FakeProvider(reader(Clock(0.0)))
    agent, rec, _ = make_agent(tmp_path, provider, max_turns=3)
    result = agent.run("What do these files do?")
    assert (result.reason, result.answer) == ("end_turn", ANSWER)
    assert [r.answer_only for r in provider.requests] == [False, False, True]
    assert rec.of("info")[0].fields == {"step": "the last of 3 model calls (--max-turns); answer requested"}


def test_the_time_budget_is_a_flag_and_a_config_key_shown_at_start(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    bodies: list[dict[str, Any]] = []
    with LiveServer(llamacpp_steps(lambda body: {"answer": "It is beta.py."}, bodies)) as server:
        flags = ("-w", str(ws), "--base-url", server.url, "-m", "m")
        shown = run_cli(*flags, "--time-budget", "42", "--json", "which?")
        (ws / ".aforo.toml").write_text("time_budget = 60\n")
        header = run_cli(*flags, "which?")
    assert shown.code == header.code == 0, shown.err + header.err
    info = next(e for e in shown.events() if e["type"] == "info" and "window" in e)
    assert (info["time_budget"], info["max_turns"]) == (42, 25)
    assert "each question: up to 25 model calls and 60 s, then an answer from what it has" in header.out
