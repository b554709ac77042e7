"""Keys typed while a run works (aforo.cli.typeahead): on a real pseudo-terminal, not echoed while held,
kept with their edits applied, the terminal's modes put back after."""

from __future__ import annotations

import os
import termios
from collections.abc import Iterator

import pytest

from aforo.cli.typeahead import _drain, edited, held


@pytest.fixture
def terminal() -> Iterator[tuple[int, int]]:
    """(the side a user types into, the side aforo reads) of a fresh pseudo-terminal."""
    keys, tty = os.openpty()
    try:
        yield keys, tty
    finally:
        os.close(keys)
        os.close(tty)


class Stream:
    def __init__(self, fd: int) -> None:
        self.fd = fd

    def fileno(self) -> int:
        return self.fd


def test_keys_typed_while_held_are_kept_unechoed_and_the_modes_restored(terminal: tuple[int, int]) -> None:
    keys, tty = terminal
    before = termios.tcgetattr(tty)
    assert before[3] & termios.ECHO and before[3] & termios.ICANON
    with held(Stream(tty)) as typed:
        quiet = termios.tcgetattr(tty)
        assert not quiet[3] & termios.ECHO and not quiet[3] & termios.ICANON
        assert quiet[3] & termios.ISIG  # Ctrl-C still interrupts the run
        os.write(keys, b"/contexx\x7ft")  # no Enter: a line buffer would have kept it from aforo
    assert typed.text == "/context" and typed.dropped == 0
    assert termios.tcgetattr(tty) == before


def test_nothing_typed_is_nothing_kept(terminal: tuple[int, int]) -> None:
    with held(Stream(terminal[1])) as typed:
        pass
    assert typed.text == ""


def test_not_a_terminal_is_left_alone(tmp_path: object) -> None:
    read, write = os.pipe()
    try:
        with held(Stream(read)) as typed:
            os.write(write, b"piped")
        assert typed.text == "" and os.read(read, 10) == b"piped"  # not read, not taken
    finally:
        os.close(read)
        os.close(write)


def test_over_the_limit_the_rest_is_counted_not_kept(terminal: tuple[int, int]) -> None:
    keys, tty = terminal
    with held(Stream(tty)):
        os.write(keys, b"x" * 300)
        assert _drain(tty, 100) == (b"x" * 100, 200)


@pytest.mark.parametrize(
    ("raw", "text"),
    [
        ("abc\x7f\x7fxy", "axy"),  # backspace
        ("first line\x15second", "second"),  # Ctrl-U kills the line
        ("a\x1b[Ab\x1b[1;5Cc\x1bOd", "abc"),  # arrows (CSI and SS3) and a stray escape are left out
        ("one\r\ntwo\r", "one\ntwo"),  # Enter: a line break, the last one dropped
        ("tab\there\x04\x01", "tab\there"),  # Ctrl-D and Ctrl-A are keys, not text
        ("caf\u00e9 \u2713", "caf\u00e9 \u2713"),
        ("a\n\x7fb", "a\nb"),  # a backspace does not reach into the line before
    ],
)
def test_edits_are_applied_and_control_keys_left_out(raw: str, text: str) -> None:
    assert edited(raw) == text
