"""Say what the engine manager is doing while it downloads and builds: the phase and its elapsed time.

A build takes minutes, so silence would look like a hang. On a terminal a rich status line shows the
phase, a detail (the build's percentage when cmake prints one) and the time so far; elsewhere (CI logs,
pipes) one line starts each phase, a heartbeat line repeats every minute, and one line ends it.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from typing import TextIO

from rich.console import Console
from rich.progress import Progress as RichProgress
from rich.progress import SpinnerColumn, TaskID, TextColumn, TimeElapsedColumn

Detail = Callable[[], str]


def elapsed(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes}m {secs:02d}s" if minutes else f"{secs}s"


class Progress:
    def __init__(self, stream: TextIO, *, heartbeat_s: float = 60.0, prefix: str = "aforo engine") -> None:
        self.stream = stream
        self.heartbeat_s = heartbeat_s
        self.prefix = prefix
        self.console = Console(file=stream, highlight=False)

    def say(self, message: str) -> None:
        print(f"{self.prefix}: {message}", file=self.stream, flush=True)

    @contextlib.contextmanager
    def phase(self, name: str, detail: Detail | None = None) -> Iterator[None]:
        started = time.monotonic()
        if self.console.is_terminal:
            columns = (SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn())
            with RichProgress(*columns, console=self.console, transient=True) as bar:
                task = bar.add_task(name)
                with _ticking(self._tick_bar, bar, task, name, detail):
                    yield
        else:
            self.say(f"{name}...")
            with _ticking(self._heartbeat, name, detail, started):
                yield
        self.say(f"{name}: done in {elapsed(time.monotonic() - started)}")

    @staticmethod
    def _tick_bar(
        bar: RichProgress, task: TaskID, name: str, detail: Detail | None, done: threading.Event
    ) -> None:
        while not done.wait(1.0):
            if detail is not None and (text := detail()):
                bar.update(task, description=f"{name} ({text})")

    def _heartbeat(self, name: str, detail: Detail | None, started: float, done: threading.Event) -> None:
        while not done.wait(self.heartbeat_s):
            extra = f", {text}" if detail is not None and (text := detail()) else ""
            self.say(f"still {name} ({elapsed(time.monotonic() - started)} so far{extra})")


@contextlib.contextmanager
def _ticking(ticker: Callable[..., None], *args: object) -> Iterator[None]:
    """Run `ticker(*args, done)` in a thread for the body's duration; set `done` and join it at the end,
    however the body ends."""
    done = threading.Event()
    thread = threading.Thread(target=ticker, args=(*args, done), name="aforo-engine-progress")
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()
