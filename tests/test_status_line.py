"""The status line: what it says for each phase, when it is drawn, and that nothing written to the
terminal ever lands inside it (driven by a fake clock; the pty tests see it on a real terminal)."""

from __future__ import annotations

import io
import os
from collections.abc import Iterator

import pytest

from aforo.cli.status import DELAY, StatusLine, StatusWriter, describe, elapsed, status_enabled
from aforo.events import Progress


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def line() -> Iterator[tuple[StatusLine, io.StringIO, Clock]]:
    clock = Clock()
    err = io.StringIO()
    status = StatusLine(err, width=lambda: 60, clock=clock, autotick=False)
    yield status, err, clock


def visible(screen: str) -> str:
    """What a terminal shows on the current line after `screen` was written (CR returns to column 0)."""
    last = screen.split("\n")[-1]
    cells: list[str] = []
    col = 0
    for c in last:
        if c == "\r":
            col = 0
            continue
        if col < len(cells):
            cells[col] = c
        else:
            cells.append(c)
        col += 1
    return "".join(cells).rstrip()


def test_each_phase_is_named_with_its_elapsed_time() -> None:
    assert (
        describe(Progress(phase="connecting", detail="http://h:1/v1"), 2.4, 0)
        == "connecting http://h:1/v1 · 2s"
    )
    server = describe(Progress(phase="prompt", done=2048, total=2534, cached=512), 24.4, 0)
    assert server == "processing the prompt: 2,048/2,534 tokens (81%, 512 cached) · 24s"
    assert describe(Progress(phase="prompt"), 75, 0) == "processing the prompt · 1m 15s"
    assert (
        describe(Progress(phase="generating", tokens=42), 4.2, 4.0)
        == "generating: 42 tokens, 10.5 tok/s · 4s"
    )
    assert describe(Progress(phase="compacting"), 3, 0) == "compacting the conversation · 3s"
    assert describe(Progress(phase="tool", detail="Read Grep"), 1, 0) == "running Read Grep · 1s"
    assert elapsed(3599.9) == "59m 59s"


def test_a_compaction_shows_its_summary_requests_progress_like_a_model_call() -> None:
    reading = describe(Progress(phase="compacting", done=1200, total=5700, cached=300), 12.2, 0)
    assert reading == "compacting the conversation: 1,200/5,700 tokens (21%, 300 cached) · 12s"
    writing = describe(Progress(phase="compacting", tokens=35), 61, 0)
    assert writing == "compacting the conversation: summary 35 tokens · 1m 01s"


def test_a_short_phase_is_never_drawn_a_long_one_is(line: tuple[StatusLine, io.StringIO, Clock]) -> None:
    status, err, clock = line
    status.show(Progress(phase="prompt"))
    clock.now += DELAY / 2
    status.tick()
    assert err.getvalue() == ""  # a 1 ms tool or a fast prompt does not flicker
    clock.now += 12
    status.tick()
    assert visible(err.getvalue()).endswith("processing the prompt · 12s")
    status.show(Progress(phase="idle"))
    assert visible(err.getvalue()) == "" and not status.active


def test_output_erases_the_line_first_and_it_returns_only_at_a_line_start(
    line: tuple[StatusLine, io.StringIO, Clock],
) -> None:
    status, err, clock = line
    out = io.StringIO()
    screen = StatusWriter(out, status)
    status.show(Progress(phase="generating", tokens=3))
    clock.now += 1
    status.tick()
    assert "generating" in visible(err.getvalue())
    screen.write("The answer begins")
    assert visible(err.getvalue()) == ""  # erased before the text was written
    clock.now += 1
    status.tick()
    assert visible(err.getvalue()) == ""  # the text is mid-line: the line stays away
    screen.write(" and ends.\n")
    status.tick()
    assert "generating" in visible(err.getvalue())
    assert out.getvalue() == "The answer begins and ends.\n"


def test_the_line_fits_the_width(line: tuple[StatusLine, io.StringIO, Clock]) -> None:
    status, err, clock = line
    status.show(Progress(phase="connecting", detail="http://" + "x" * 200))
    clock.now += 1
    status.tick()
    assert 0 < len(visible(err.getvalue())) <= 59


def test_it_is_only_for_a_person_at_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    main, sub = os.openpty()
    with os.fdopen(sub, "w", closefd=True) as tty, io.StringIO() as pipe:
        monkeypatch.setenv("TERM", "xterm")
        assert status_enabled(tty, tty)
        assert not status_enabled(pipe, tty)  # stdout into a pipe or a file
        assert not status_enabled(tty, pipe)  # stderr redirected
        assert not status_enabled(tty, tty, as_json=True)
        monkeypatch.setenv("TERM", "dumb")
        assert not status_enabled(tty, tty)
    os.close(main)
