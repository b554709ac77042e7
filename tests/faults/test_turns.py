"""A turn is never lost or corrupted: saves per turn not per token, one writer per session, one result
per call even when ids repeat, impossible usage reports ignored, Ctrl-C during a slow tool."""

from __future__ import annotations

import asyncio
import io
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from aforo.cli.main import main
from aforo.events import Warning
from aforo.messages import Message, Request, ToolResult, ToolSpec
from aforo.protocols import ToolContext, ToolOutput
from aforo.providers.fake import FakeProvider, FakeTurn
from aforo.store import sessions as sessions_module
from aforo.store.sessions import SessionRecord, SessionStore
from aforo.tools.registry import ToolRegistry
from faults.server import (
    Behave,
    deep_json,
    misbehaving_app,
    ok_sse,
    openai_chunk,
    sse,
    tool_call_sse,
)
from support.cli import AFORO, run_cli
from support.live_server import LiveServer
from support.scenario import make_agent


@pytest.fixture(autouse=True)
def no_piped_input(monkeypatch: pytest.MonkeyPatch) -> None:
    """These runs call `main` in-process, where stdin is pytest's: give it an empty pipe, as a script's
    `< /dev/null` would, since aforo adds piped input to the question."""
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"")))


@pytest.fixture
def server() -> Iterator[Any]:
    servers: list[LiveServer] = []

    def start(behave: Behave) -> tuple[str, list[dict[str, Any]]]:
        app = misbehaving_app(behave)
        live = LiveServer(app).__enter__()
        servers.append(live)
        return f"{live.url}/v1", app.state.bodies

    yield start
    for live in servers:
        live.__exit__()


@pytest.fixture
def saves(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many times sessions are written, by a counting SessionStore.save."""
    count = [0]
    original = SessionStore.save

    def counting(self: SessionStore, rec: SessionRecord) -> Path:
        count[0] += 1
        return original(self, rec)

    monkeypatch.setattr(sessions_module.SessionStore, "save", counting)
    return count


# --- saves -------------------------------------------------------------------------------------


def test_a_500_token_streamed_answer_is_saved_once_per_turn_not_per_token(
    server: Any, tmp_path: Path, saves: list[int]
) -> None:
    body = [openai_chunk("tok ") for _ in range(500)] + [openai_chunk(finish="stop"), b"data: [DONE]\n\n"]
    url, _ = server(lambda n: sse(body))
    # llama.cpp streams live (a loud server): every token is an event the keeper sees.
    code = main(["-w", str(tmp_path), "--base-url", url, "--server", "llama.cpp", "-m", "m", "--json", "go"])
    assert code == 0
    assert saves[0] <= 5  # the prompt, the answer, the end: not one per token


def test_1000_tool_calls_in_one_turn_are_saved_a_few_times(
    server: Any, tmp_path: Path, saves: list[int]
) -> None:
    for i in range(1000):
        (tmp_path / f"f{i}.txt").write_text(f"file {i}\n")
    calls = [(f"call_{i}", "Read", json.dumps({"file_path": f"f{i}.txt"})) for i in range(1000)]
    answers = [tool_call_sse(*calls), ok_sse("done")]
    url, _ = server(lambda n: answers[n - 1])
    flags = ["-w", str(tmp_path), "--base-url", url, "--server", "openai", "-m", "m"]
    code = main([*flags, "--context-window", "200000", "--json", "read them all"])
    assert code == 0
    assert saves[0] <= 8  # the calls once, their results once: not once per call


# --- one writer per session -------------------------------------------------------------------


def test_two_resumes_of_one_session_at_once_the_second_is_refused_and_no_turn_is_lost(
    server: Any, tmp_path: Path, aforo_home: Path
) -> None:
    slow = [openai_chunk("slow "), openai_chunk("answer"), openai_chunk(finish="stop"), b"data: [DONE]\n\n"]
    # The first resume's answer waits until the concurrent one has been refused: however slow the
    # machine is to start the second process, the first one still holds the session then.
    release = threading.Event()

    async def slowly() -> Any:
        yield slow[0]
        waited = 0.0
        while not release.is_set() and waited < 60:
            await asyncio.sleep(0.05)
            waited += 0.05
        for piece in slow[1:]:
            yield piece

    answers = [ok_sse("first"), sse(slowly()), ok_sse("third")]
    url, bodies = server(lambda n: answers[n - 1])
    flags = ("-w", str(tmp_path), "--base-url", url, "--server", "openai", "-m", "m")
    assert run_cli(*flags, "first question").code == 0
    holder = subprocess.Popen([AFORO, *flags, "--resume", "second question"], stdout=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while len(bodies) < 2:  # the first resume is answering: it has the session
            assert time.monotonic() < deadline and holder.poll() is None
            time.sleep(0.05)
        second = run_cli(*flags, "--resume", "concurrent question")
        assert second.code == 2
        assert f"pid {holder.pid}" in second.err and "another aforo" in second.err
    finally:
        release.set()
        assert holder.wait(timeout=60) == 0
    assert run_cli(*flags, "--resume", "third question").code == 0
    store = SessionStore(aforo_home / "sessions")
    (summary,) = store.list()
    texts = [m.text for m in store.load(summary.id).messages]
    assert texts == ["first question", "first", "second question", "slow answer", "third question", "third"]


# --- one result per call ------------------------------------------------------------------------


def test_two_calls_with_the_same_id_each_get_their_own_result(
    server: Any, tmp_path: Path, aforo_home: Path
) -> None:
    (tmp_path / "a.txt").write_text("alpha content\n")
    (tmp_path / "b.txt").write_text("bravo content\n")
    calls = (("dup", "Read", '{"file_path": "a.txt"}'), ("dup", "Read", '{"file_path": "b.txt"}'))
    answers = [tool_call_sse(*calls), ok_sse("both read")]
    url, bodies = server(lambda n: answers[n - 1])
    run = run_cli("-w", str(tmp_path), "--base-url", url, "--server", "openai", "-m", "m", "read a and b")
    assert run.code == 0, run.err
    sent = bodies[1]["messages"]
    ids = [c["id"] for m in sent if m["role"] == "assistant" for c in m.get("tool_calls", [])]
    results = {m["tool_call_id"]: m["content"] for m in sent if m["role"] == "tool"}
    assert len(set(ids)) == 2 and set(results) == set(ids)
    assert "alpha content" in results[ids[0]] and "bravo content" in results[ids[1]]


def test_tool_arguments_nested_without_end_are_an_error_result_not_a_crash(
    server: Any, tmp_path: Path
) -> None:
    # Deep enough for json.loads to raise RecursionError; the call is kept (as text) in the conversation.
    answers = [tool_call_sse(("c1", "Read", deep_json(5_000))), ok_sse("sorry")]
    url, bodies = server(lambda n: answers[n - 1])
    flags = ("-w", str(tmp_path), "--base-url", url, "--server", "openai", "-m", "m")
    run = run_cli(*flags, "--context-window", "65536", "read")
    assert run.code == 0 and "Traceback" not in run.err
    (result,) = [m["content"] for m in bodies[1]["messages"] if m["role"] == "tool"]
    assert "json_depth" in result


# --- impossible usage reports ---------------------------------------------------------------------


class Liar(FakeProvider):
    """Reports 999 999 999 prompt tokens for every request."""

    def input_tokens(self, request: Request) -> int:
        return 999_999_999


def test_an_impossible_usage_report_does_not_calibrate_and_is_said_once(tmp_path: Path) -> None:
    agent, rec, _ = make_agent(
        tmp_path, Liar([FakeTurn("one"), FakeTurn("two"), FakeTurn("three")]), window=8192
    )
    for prompt in ("first", "second", "third"):
        assert agent.run(prompt).reason == "end_turn"
    assert agent.governor.meter.calibration.ratio == 1.0
    said = [e for e in rec.events if isinstance(e, Warning) and "cannot be true" in e.message]
    assert len(said) == 1 and "999,999,999" in said[0].message


# --- Ctrl-C while a slow tool runs ------------------------------------------------------------------


class Slow:
    spec = ToolSpec("Slow", "Takes a minute.", {"type": "object", "properties": {}})

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        time.sleep(60)  # deaf to the cancel: the registry must stop waiting for it anyway
        return ToolOutput("finally")


def test_ctrl_c_while_a_slow_tool_runs_ends_the_run_at_once(tmp_path: Path) -> None:
    agent, _, _ = make_agent(tmp_path, FakeProvider([FakeTurn("", [("Slow", {})]), FakeTurn("never")]))
    agent.tools = ToolRegistry([Slow()], tmp_path)
    threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT)).start()
    started = time.monotonic()
    result = agent.run("do the slow thing")
    assert result.reason == "aborted"
    assert time.monotonic() - started < 5  # not the tool's minute, nor its 30 s deadline
    (answer,) = [b for m in agent.messages for b in m.content if isinstance(b, ToolResult)]
    assert answer.is_error and "cancelled" in answer.content
    assert agent.messages[-1].role == "user" and isinstance(agent.messages[0], Message)
