"""Ctrl-C during a run: the first one cancels at a safe point, a blocked stream does not hold it up."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from aforo.cancel import cancel_on_sigint, interruptible
from aforo.messages import Request, StreamEvent
from aforo.providers.fake import FakeProvider, FakeTurn
from support.scenario import make_agent


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
