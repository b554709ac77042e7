"""What the engine manager's progress display prints while it downloads and builds.

Off a terminal (CI logs, pipes): a line when a phase starts, a heartbeat line every `heartbeat_s` with
the time so far and the phase's detail, a line when it ends. On a terminal: a transient rich line whose
description carries the detail, then the same closing line. The clock is `progress.time` replaced by a
stand-in, so the times printed are known exactly; the heartbeat interval is made short.
"""

from __future__ import annotations

import io
import threading
import time
from collections.abc import Callable

import pytest

from aforo.engine import progress as progress_module
from aforo.engine.progress import Progress, elapsed

START = "aforo engine: building llama-server..."
DONE = "aforo engine: building llama-server: done in 1m 05s"


class Clock:
    """`time` for progress.py: the first reading (the phase's start) is `start`, every later one `now`."""

    def __init__(self, start: float, now: float) -> None:
        self.start, self.now = start, now
        self.rewind()

    def rewind(self) -> None:
        """For the next phase: its start reads `start` again."""
        self.readings = [self.start]

    def monotonic(self) -> float:
        return self.readings.pop() if self.readings else self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    fake = Clock(1000.0, 1065.4)
    monkeypatch.setattr(progress_module, "time", fake)
    return fake


def wait_until(condition: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def heartbeats(stream: io.StringIO) -> list[str]:
    return [line for line in stream.getvalue().splitlines() if "still" in line]


def run_phase(
    clock: Clock, stream: io.StringIO, detail: Callable[[], str] | None, beats: int = 2
) -> list[str]:
    """A phase that lasts until `beats` heartbeat lines were printed; returns all the lines."""
    clock.rewind()
    shown = Progress(stream, heartbeat_s=0.02)
    with shown.phase("building llama-server", detail):
        wait_until(lambda: len(heartbeats(stream)) >= beats)
    return stream.getvalue().splitlines()


def test_off_a_terminal_a_phase_prints_its_start_heartbeats_with_the_detail_and_its_end(clock: Clock) -> None:
    lines = run_phase(clock, io.StringIO(), lambda: "45%")
    assert lines[0] == START
    assert lines[-1] == DONE
    assert len(lines) >= 4
    assert set(lines[1:-1]) == {"aforo engine: still building llama-server (1m 05s so far, 45%)"}


def test_the_heartbeat_shows_the_detail_of_the_moment_and_nothing_when_there_is_none(clock: Clock) -> None:
    progress_so_far = iter(["", "12 MB so far", "30 MB so far"])

    def detail() -> str:
        return next(progress_so_far, "30 MB so far")

    lines = run_phase(clock, io.StringIO(), detail, beats=3)
    assert lines[1:4] == [
        "aforo engine: still building llama-server (1m 05s so far)",
        "aforo engine: still building llama-server (1m 05s so far, 12 MB so far)",
        "aforo engine: still building llama-server (1m 05s so far, 30 MB so far)",
    ]
    without = run_phase(clock, io.StringIO(), None)
    assert set(without[1:-1]) == {"aforo engine: still building llama-server (1m 05s so far)"}


def test_a_short_phase_prints_no_heartbeat_and_its_ticker_is_gone_when_it_ends(clock: Clock) -> None:
    stream = io.StringIO()
    before = threading.active_count()
    with Progress(stream, heartbeat_s=3600).phase("building llama-server", lambda: "45%"):
        time.sleep(0.2)
    assert stream.getvalue().splitlines() == [START, DONE]
    assert threading.active_count() == before

    fast = io.StringIO()
    lines = run_phase(clock, fast, lambda: "45%")
    time.sleep(0.2)  # ten heartbeat intervals: a ticker still running would have printed again
    assert fast.getvalue().splitlines() == lines
    assert threading.active_count() == before


def test_a_phase_that_fails_says_no_done_and_stops_its_heartbeat(clock: Clock) -> None:
    stream = io.StringIO()
    before = threading.active_count()
    with (
        pytest.raises(RuntimeError, match="compiler died"),
        Progress(stream, heartbeat_s=0.02).phase("building llama-server"),
    ):
        wait_until(lambda: len(heartbeats(stream)) >= 1)
        raise RuntimeError("compiler died")
    printed = stream.getvalue()
    assert printed.startswith(START + "\n") and "done in" not in printed
    assert threading.active_count() == before
    time.sleep(0.2)
    assert stream.getvalue() == printed


def test_on_a_terminal_the_detail_goes_into_the_status_line_not_into_heartbeat_lines(
    clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FORCE_COLOR", "1")  # rich takes the StringIO for a terminal
    stream = io.StringIO()
    shown = Progress(stream, heartbeat_s=0.02)
    assert shown.console.is_terminal
    with shown.phase("building llama-server", lambda: "45%"):
        # The bar's ticker looks at the detail once a second; rich redraws ten times a second.
        wait_until(lambda: "building llama-server (45%)" in stream.getvalue())
    printed = stream.getvalue()
    assert "still" not in printed and START not in printed
    assert printed.endswith(DONE + "\n")


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [(0, "0s"), (59.9, "59s"), (60, "1m 00s"), (65.4, "1m 05s"), (754, "12m 34s"), (3725, "62m 05s")],
)
def test_elapsed_times_read_as_minutes_and_two_digit_seconds(seconds: float, shown: str) -> None:
    assert elapsed(seconds) == shown
