"""What every subcommand's parsing shares: the parser whose errors say how to ask instead, and the
`Subcommand` entry of the table in `subcommands`."""

from __future__ import annotations

import argparse
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import NoReturn

from aforo.cli.flags import ASK
from aforo.cli.sanitize import sanitize


class SubcommandParser(argparse.ArgumentParser):
    """A parse error also names the way to ask a question that starts with the subcommand's name: `aforo
    stats of the repo?` is the `stats` subcommand, refusing `of the repo?`."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        word = self.prog.split()[1] if len(self.prog.split()) > 1 else self.prog
        hint = f"To ask a question that starts with {word!r}: aforo {ASK} {word} … (or aforo -- {word} …)"
        self.exit(2, f"{self.prog}: error: {message}\n{hint}\n")


def subcommand_parser(name: str, description: str, *, json_help: str = "") -> SubcommandParser:
    """The parser of `aforo NAME`; with `json_help`, its `--json` flag (every listing has one)."""
    parser = SubcommandParser(prog=f"aforo {name}", description=description)
    if json_help:
        parser.add_argument("--json", action="store_true", help=json_help)
    return parser


@dataclass(frozen=True)
class Subcommand:
    """One entry of the table: its parser (help, completion) and what runs on the parsed flags."""

    parser: Callable[[], argparse.ArgumentParser]
    run: Callable[[argparse.Namespace], int]

    def __call__(self, argv: list[str]) -> int:
        return self.run(self.parser().parse_args(argv))


def fail(exc: Exception) -> None:
    print(f"aforo: {sanitize(str(exc))}", file=sys.stderr)


def terminal_width() -> int | None:
    """The terminal's width when stdout is one; None for a pipe (nothing is cut there)."""
    return shutil.get_terminal_size().columns if sys.stdout.isatty() else None
