"""The status line: one line on stderr saying what aforo waits for and for how long, while it waits.

It is for people at a terminal only: `status_enabled` says no when stdout or stderr is not a terminal
(a pipe, a file, a pager reading stdout would get it mixed into its screen), with `--json`, and on
`TERM=dumb`, where progress bars are conventionally off. A thread redraws it every tenth of a second so
the elapsed time moves; a phase shorter than `DELAY` is never drawn, so a 1 ms tool does not flicker.

Everything else aforo writes to the terminal meanwhile goes through a `StatusWriter`, which erases the
line first, under the same lock the thread draws with, so the line never lands inside streamed text;
the writes also tell where the cursor is, and the line is drawn only at the start of a line. It is
erased with spaces and a carriage return, which any terminal understands.

Hand-written rather than rich's `Live`/`Status`: those redirect sys.stdout and redraw from their own
thread with no way to know that an answer is being streamed mid-line outside rich.
"""

from __future__ import annotations

import os
import shutil
import sys
import threading
import time
from collections.abc import Callable
from typing import TextIO

from aforo.events import Progress

DELAY = 0.15  # seconds a phase must last before it is drawn
TICK = 0.1  # seconds between redraws
_FRAMES_UTF8 = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
_FRAMES_ASCII = "|/-\\"

# What each phase is called on the line; a phase not named here (the governor's verbs) is shown as is.
LABELS = {
    "connecting": "connecting",
    "prompt": "processing the prompt",
    "generating": "generating",
    "tool": "running",
    "clearing": "clearing old tool results",
    "compacting": "compacting the conversation",
    "probing": "probing",
}


def status_enabled(stdout: TextIO, stderr: TextIO, *, as_json: bool = False) -> bool:
    if as_json or os.environ.get("TERM", "") == "dumb":
        return False
    return _isatty(stdout) and _isatty(stderr)


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a closed or unusual stream
        return False


def elapsed(seconds: float) -> str:
    """3 -> '3s', 75 -> '1m 15s'."""
    whole = int(seconds)
    return f"{whole}s" if whole < 60 else f"{whole // 60}m {whole % 60:02d}s"


def describe(progress: Progress, seconds: float, rate_seconds: float) -> str:
    """The line for `progress`, `seconds` into its phase (`rate_seconds` since the answer began)."""
    label = LABELS.get(progress.phase, progress.phase)
    parts = [f"{label} {progress.detail}" if progress.detail else label]
    # A compaction shows its summary request's progress the way a model call shows its own.
    if progress.phase in ("prompt", "compacting") and progress.total:
        pct = round(100 * progress.done / progress.total)
        cached = f", {progress.cached:,} cached" if progress.cached else ""
        parts[0] += f": {progress.done:,}/{progress.total:,} tokens ({pct}%{cached})"
    elif progress.phase == "generating" and progress.tokens:
        rate = f", {progress.tokens / rate_seconds:.1f} tok/s" if rate_seconds >= 0.5 else ""
        parts[0] += f": {progress.tokens} tokens{rate}"
    elif progress.phase == "compacting" and progress.tokens:
        parts[0] += f": summary {progress.tokens} tokens"
    parts.append(elapsed(seconds))
    return " · ".join(parts)


class StatusLine:
    """The line itself. `show` a Progress (idle erases it); write anything else through `write`."""

    def __init__(
        self,
        stream: TextIO,
        *,
        width: Callable[[], int] | None = None,
        clock: Callable[[], float] = time.monotonic,
        autotick: bool = True,
    ) -> None:
        self.stream = stream
        self._width = width or (lambda: shutil.get_terminal_size().columns)
        self._clock = clock
        self._lock = threading.RLock()
        self._progress: Progress | None = None
        self._since = 0.0  # when the phase began
        self._answer_since = 0.0  # when the first piece of the answer came (for tok/s)
        self._drawn = 0  # characters on the line now
        self._at_line_start = True
        self._frame = 0
        encoding = (getattr(stream, "encoding", None) or "").lower().replace("-", "")
        self._frames = _FRAMES_UTF8 if encoding == "utf8" else _FRAMES_ASCII
        self._autotick = autotick  # False: nothing redraws but `tick()` (tests drive the clock)
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()

    # --- what the renderer says ----------------------------------------------------------------------

    def show(self, progress: Progress) -> None:
        with self._lock:
            if progress.phase == "idle":
                self._progress = None
                self._erase()
                stopping = self._thread
                self._thread = None
            else:
                now = self._clock()
                previous = self._progress
                if previous is None or previous.phase != progress.phase or previous.detail != progress.detail:
                    self._since = now
                if progress.phase == "generating" and (previous is None or previous.phase != "generating"):
                    self._answer_since = now
                self._progress = progress
                stopping = None
                self._start()
        if stopping is not None:
            self._stop.set()
            stopping.join()

    @property
    def active(self) -> bool:
        return self._progress is not None

    def write(self, stream: TextIO, text: str) -> None:
        """Write `text` to `stream` (this terminal's stdout or stderr) with the line erased first; the
        line comes back at the next tick if still wanted and the text left the cursor at a line start."""
        with self._lock:
            self._erase()
            stream.write(text)
            stream.flush()
            if text:
                self._at_line_start = text.endswith("\n")

    def close(self) -> None:
        self.show(Progress(phase="idle"))

    # --- drawing -------------------------------------------------------------------------------------

    def _start(self) -> None:
        if self._thread is None and self._autotick:
            self._stop = threading.Event()
            self._thread = threading.Thread(target=self._run, args=(self._stop,), daemon=True)
            self._thread.start()

    def _run(self, stop: threading.Event) -> None:
        while not stop.wait(TICK):
            self.tick()

    def tick(self) -> None:
        """Redraw the line now (the thread calls this; tests may too)."""
        with self._lock:
            progress = self._progress
            if progress is None or not self._at_line_start:
                return
            now = self._clock()
            if now - self._since < DELAY:
                return
            self._frame = (self._frame + 1) % len(self._frames)
            text = describe(progress, now - self._since, now - self._answer_since)
            line = f"{self._frames[self._frame]} {text}"[: max(0, self._width() - 1)]
            # A shorter line than the last one leaves its tail: blank it, then write the line again.
            tail = " " * (self._drawn - len(line)) + "\r" + line if self._drawn > len(line) else ""
            self._write("\r" + line + tail)
            self._drawn = len(line)

    def _erase(self) -> None:
        if self._drawn:
            self._write("\r" + " " * self._drawn + "\r")
            self._drawn = 0

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):  # the terminal went away; the line is a nicety
            self._progress = None


class StatusWriter:
    """A text stream on the terminal that erases the status line before each write: everything aforo
    writes to the terminal while a status line may be drawn goes through one."""

    def __init__(self, stream: TextIO, status: StatusLine) -> None:
        self.stream = stream
        self.status = status

    def write(self, text: str) -> int:
        self.status.write(self.stream, text)
        return len(text)

    def flush(self) -> None:
        self.stream.flush()

    def isatty(self) -> bool:
        return self.stream.isatty()

    def fileno(self) -> int:
        return self.stream.fileno()

    @property
    def encoding(self) -> str:
        return getattr(self.stream, "encoding", None) or "utf-8"


def stderr_status(as_json: bool = False) -> StatusLine | None:
    """The status line on stderr, or None where it must not appear."""
    return StatusLine(sys.stderr) if status_enabled(sys.stdout, sys.stderr, as_json=as_json) else None
