"""Keys typed while a run works, kept for the next prompt instead of lost.

Between two prompts the terminal is in its ordinary mode: what the user types is echoed onto the status
line, and the next prompt drops it (prompt_toolkit enters raw mode with TCSAFLUSH, which discards
pending input): `/context` typed during a compaction was shown stuck to the spinner, then gone. While
a run works, `held` turns the echo and line buffering off (Ctrl-C still interrupts) and, when it ends,
reads what was typed; the REPL puts it into the next prompt, where Enter sends it and the user can
edit it first. Editing keys are applied (backspace, Ctrl-U); other control keys and escape sequences
(arrows) are left out.
"""

from __future__ import annotations

import os
import re
import select
import sys
import termios
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Protocol

from aforo.limits import TYPEAHEAD_BYTES

_ESCAPES = re.compile(r"\x1b(\[[0-9;?]*[ -/]*[@-~]|O.|.)?")
_BACKSPACES = ("\x7f", "\x08")
_KILL_LINE = "\x15"


class _Terminal(Protocol):
    def fileno(self) -> int: ...


@dataclass
class Typed:
    """What was typed during the run (filled when the run ends): the text, and bytes over the limit."""

    text: str = ""
    dropped: int = 0


@contextmanager
def held(stream: _Terminal | None = None) -> Iterator[Typed]:
    """While inside, keys typed on the terminal are neither echoed nor lost; `Typed` holds them after."""
    typed = Typed()
    stream = sys.stdin if stream is None else stream
    try:
        fd = stream.fileno()
        saved = termios.tcgetattr(fd) if os.isatty(fd) else None
    except (AttributeError, OSError, ValueError, termios.error):
        saved = None
    if saved is None:  # not a terminal: nothing is echoed, nothing to keep
        yield typed
        return
    quiet = termios.tcgetattr(fd)
    quiet[3] &= ~(termios.ECHO | termios.ICANON)  # ISIG stays: Ctrl-C still interrupts the run
    quiet[6][termios.VMIN], quiet[6][termios.VTIME] = 0, 0
    termios.tcsetattr(fd, termios.TCSANOW, quiet)
    try:
        yield typed
    finally:
        data, dropped = _drain(fd, int(TYPEAHEAD_BYTES.value))
        termios.tcsetattr(fd, termios.TCSANOW, saved)  # not TCSAFLUSH: nothing typed is discarded
        typed.text, typed.dropped = edited(data.decode("utf-8", errors="replace")), dropped


def _drain(fd: int, limit: int) -> tuple[bytes, int]:
    """What is waiting on `fd`, up to `limit` bytes, and how many more there were."""
    kept, dropped = bytearray(), 0
    while select.select([fd], [], [], 0)[0]:
        chunk = os.read(fd, 4096)
        if not chunk:
            break
        room = max(0, limit - len(kept))
        kept += chunk[:room]
        dropped += len(chunk) - min(room, len(chunk))
    return bytes(kept), dropped


def edited(raw: str) -> str:
    """The text the keys in `raw` make: edits applied, control keys left out, trailing line ends dropped."""
    out: list[str] = []
    for char in _ESCAPES.sub("", raw.replace("\r\n", "\n").replace("\r", "\n")):
        if char in _BACKSPACES:
            if out and out[-1] != "\n":
                out.pop()
        elif char == _KILL_LINE:
            while out and out[-1] != "\n":
                out.pop()
        elif char in "\n\t" or char.isprintable():
            out.append(char)
    return "".join(out).strip("\n")
