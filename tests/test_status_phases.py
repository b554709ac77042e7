"""Every wait the status line names is announced by whoever waits, and always ended: the governor's
clearing and compaction, its truncation probes, the model call's prompt and answer, a tool run."""

from __future__ import annotations

import io
from pathlib import Path

from aforo.cli.render import HumanRenderer
from aforo.cli.status import DELAY, StatusLine
from aforo.events import ContextAction, Event, Progress, ToolEnd, ToolStart
from aforo.providers.fake import FakeProvider, Truncate
from support.scenario import cleared_then_compacted, make_agent, make_files, reader_model

PROMPT = "Task BRAVO-2718: read every mod*.py file and tell me which one is the longest. Never guess."


def phases(events: list[Event]) -> list[str]:
    return [e.phase for e in events if isinstance(e, Progress)]


def test_clearing_and_compacting_are_phases_that_end_before_their_line(tmp_path: Path) -> None:
    _agent, rec, _ = cleared_then_compacted(tmp_path, PROMPT)
    actions = [i for i, e in enumerate(rec.events) if isinstance(e, ContextAction)]
    assert {rec.events[i].action for i in actions} == {"cleared", "compacted"}  # type: ignore[union-attr]
    for i in actions:
        started = [e for e in rec.events[:i] if isinstance(e, Progress) and e.phase != "idle"][-1]
        assert started.phase == {"cleared": "clearing", "compacted": "compacting"}[rec.events[i].action]  # type: ignore[union-attr]
        assert rec.events[i - 1] == Progress(phase="idle")


def test_the_truncation_probes_are_a_phase(tmp_path: Path) -> None:
    files = make_files(tmp_path, 6, 6000)
    provider = FakeProvider(reader_model(files, batch=False), truncate=Truncate(1500, "plateau"))
    agent, rec, _ = make_agent(tmp_path, provider, window=16_000)
    agent.run(PROMPT)
    probes = [r for r in provider.requests if r.max_tokens == 1]
    assert probes, "the scenario must make the watch measure"
    assert phases(rec.events).count("probing") >= 1
    # Every phase is closed: the status line is never left on.
    assert phases(rec.events)[-1] == "idle"


def test_each_model_call_is_its_prompt_then_its_answer(tmp_path: Path) -> None:
    make_files(tmp_path, 1, 200)
    provider = FakeProvider(reader_model(["mod00.py"], batch=False))
    agent, rec, _ = make_agent(tmp_path, provider)
    agent.run(PROMPT)
    spans: list[list[str]] = [[]]
    for name in phases(rec.events):
        if name == "idle":
            spans.append([])
        else:
            spans[-1].append(name)
    calls = [span for span in spans if span[:1] == ["prompt"]]
    assert len(calls) == len(provider.requests) >= 2
    assert all(len(span) > 1 and set(span[1:]) == {"generating"} for span in calls)


def test_a_running_tool_is_shown_until_the_last_one_ends() -> None:
    clock = [0.0]
    err = io.StringIO()
    status = StatusLine(err, width=lambda: 80, clock=lambda: clock[0], autotick=False)
    renderer = HumanRenderer(io.StringIO(), io.StringIO(), status=status)
    renderer(ToolStart(id="c1", name="Read", input={"file_path": "a"}))
    renderer(ToolStart(id="c2", name="Grep", input={"pattern": "x"}))
    clock[0] += DELAY + 2
    status.tick()
    assert "running Read Grep · 2s" in err.getvalue()
    renderer(ToolEnd(id="c1", name="Read", duration_ms=1.0, ok=True))
    assert status.active
    renderer(ToolEnd(id="c2", name="Grep", duration_ms=1.0, ok=True))
    assert not status.active
