"""Ctrl-C during a run: the first one cancels at a safe point, a blocked stream does not hold it up."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from aforo.cancel import cancel_on_sigint, interruptible
from aforo.context.policy import Policy
from aforo.messages import Request, StreamEvent, StreamProgress
from aforo.providers.fake import FakeProvider, FakeTurn
from support.scenario import (
    big_file,
    is_summary_request,
    make_agent,
    reads_big_then_answers,
    run_then_release,
)


def blocking_source(release: threading.Event, closed: threading.Event) -> Iterator[int]:
    try:
        yield 1
        release.wait()  # a stalled server: nothing more until the test lets it go
        yield 2
    finally:
        closed.set()


def test_a_cancel_ends_the_iteration_while_the_source_blocks() -> None:
    release, closed, cancel = threading.Event(), threading.Event(), threading.Event()
    events = interruptible(blocking_source(release, closed), cancel)
    assert next(events) == 1
    cancel.set()
    # Without the worker thread this would wait on `release` forever (the test would time out).
    assert list(events) == []
    assert not closed.is_set()  # the source is still blocked...
    release.set()
    assert closed.wait(10)  # ...and is closed by its own thread as soon as it moves


def test_items_and_errors_of_the_source_come_through_in_order() -> None:
    def source() -> Iterator[str]:
        yield "a"
        yield "b"
        raise ValueError("the server went away")

    events = interruptible(source(), threading.Event())
    assert next(events) == "a" and next(events) == "b"
    with pytest.raises(ValueError, match="went away"):
        next(events)


def test_first_sigint_sets_cancel_and_the_second_raises() -> None:
    cancel = threading.Event()
    before = signal.getsignal(signal.SIGINT)
    with cancel_on_sigint(cancel):
        os.kill(os.getpid(), signal.SIGINT)
        assert cancel.wait(5)
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGINT)
            threading.Event().wait(5)  # the handler raises here, at the next bytecode
    assert signal.getsignal(signal.SIGINT) is before


def test_sigint_during_a_stalled_answer_ends_the_run_aborted_and_well_formed(tmp_path: Path) -> None:
    release = threading.Event()

    class Stalled(FakeProvider):
        def stream(self, request: Request, cancel: threading.Event | None = None) -> Iterator[StreamEvent]:
            threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGINT)).start()
            release.wait()  # the server sends nothing; only Ctrl-C can end this
            yield from super().stream(request, cancel)

    agent, _, _ = make_agent(tmp_path, Stalled([FakeTurn("too late")]))
    try:
        result = agent.run("tell me something slow")
    finally:
        release.set()
    assert result.reason == "aborted"
    assert [m.role for m in agent.messages] == ["user"]  # the prompt kept, no half answer


def test_sigint_during_a_compaction_stops_it_at_once_and_keeps_the_conversation(tmp_path: Path) -> None:
    """The summary request is read like a model call: the first Ctrl-C ends it (it ignored the cancel for
    the 10-35 s a summary took), and the conversation is the one from before the compaction."""
    big_file(tmp_path)
    release, asked = threading.Event(), threading.Event()

    class StalledSummary(FakeProvider):
        def stream(self, request: Request, cancel: threading.Event | None = None) -> Iterator[StreamEvent]:
            if is_summary_request(request):
                asked.set()
                threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGINT)).start()
                release.wait(8)  # a summary that takes its time; only Ctrl-C should end the wait early
            yield from super().stream(request, cancel)

    policy = Policy(clear_at=0.2, compact_at=0.2, keep_tool_results=10)  # compacts after the one Read
    agent, events, _ = make_agent(tmp_path, StalledSummary(reads_big_then_answers), policy=policy)
    result, took = run_then_release(agent, "what is in big.py?", release)
    assert asked.is_set() and result.reason == "aborted"
    assert took < 2.0, f"the compaction held the Ctrl-C for {took:.1f} s"
    # As it was before the compaction: the prompt, the Read and its result, nothing summarized.
    assert [m.role for m in agent.messages] == ["user", "assistant", "user"]
    (result_block,) = agent.messages[2].tool_results
    assert "def f_0(x)" in result_block.content and not result_block.cleared
    assert not [e for e in events.of("context") if getattr(e, "action", "") == "compacted"]


def test_a_compaction_reports_its_summary_requests_progress(tmp_path: Path) -> None:
    (tmp_path / "big.py").write_text("".join(f"def f_{n}(x):\n    return x * {n}\n" for n in range(400)))

    def script(request: Request) -> FakeTurn:
        if is_summary_request(request):
            return FakeTurn("Goal: read big.py. Evidence: big.py defines f_0 to f_399 (Read big.py).")
        if any(m.tool_results for m in request.messages):
            return FakeTurn("It defines f_0 to f_399.")
        return FakeTurn(tool_calls=[("Read", {"file_path": "big.py"})])

    class Progressing(FakeProvider):
        def stream(self, request: Request, cancel: threading.Event | None = None) -> Iterator[StreamEvent]:
            if is_summary_request(request):
                yield StreamProgress(512, 2048)
                yield StreamProgress(2048, 2048, cached=256)
            yield from super().stream(request, cancel)

    policy = Policy(clear_at=0.2, compact_at=0.2, keep_tool_results=10)
    agent, events, _ = make_agent(tmp_path, Progressing(script), policy=policy)
    assert agent.run("what is in big.py?").reason == "end_turn"
    shown = [
        (e.done, e.total, e.cached) for e in events.of("progress") if getattr(e, "phase", "") == "compacting"
    ]
    assert (512, 2048, 0) in shown and (2048, 2048, 256) in shown
    summary_pieces = [e.tokens for e in events.of("progress") if getattr(e, "phase", "") == "compacting"]
    assert max(summary_pieces) >= 1  # then the summary's own pieces, as it is written


def test_sigint_during_a_compaction_after_a_clearing_puts_the_clearing_back(tmp_path: Path) -> None:
    """One admission cleared an old result, then compacted: a Ctrl-C during the summary leaves the
    conversation as it was before that admission, the cleared result whole again."""
    (tmp_path / "a.py").write_text("".join(f"A_{n} = {n}\n" for n in range(60)))
    (tmp_path / "b.py").write_text("".join(f"def f_{n}(x):\n    return x * {n}\n" for n in range(400)))
    release = threading.Event()

    def script(request: Request) -> FakeTurn:
        read = {u.input["file_path"] for m in request.messages for u in m.tool_uses}
        if "a.py" not in read:
            return FakeTurn(tool_calls=[("Read", {"file_path": "a.py"})])
        if "b.py" not in read:
            return FakeTurn(tool_calls=[("Read", {"file_path": "b.py"})])
        return FakeTurn("answered without a compaction")

    class StalledSummary(FakeProvider):
        def stream(self, request: Request, cancel: threading.Event | None = None) -> Iterator[StreamEvent]:
            if is_summary_request(request):
                threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGINT)).start()
                release.wait(8)
            yield from super().stream(request, cancel)

    policy = Policy(clear_at=0.3, compact_at=0.3, keep_tool_results=0)
    agent, events, _ = make_agent(tmp_path, StalledSummary(script), policy=policy)
    try:
        result = agent.run("what is in a.py and b.py?")
    finally:
        release.set()
    actions = [getattr(e, "action", "") for e in events.of("context")]
    assert actions == ["cleared", "restored"], actions  # cleared, compaction stopped, clearing put back
    assert result.reason == "aborted"
    first = agent.messages[2].tool_results[0]
    assert not first.cleared and "A_59 = 59" in first.content
