"""What every subcommand's parsing shares: the parser whose errors say how to ask instead, the
`Subcommand` entry of the table in `subcommands`, and the configuration its flags give (`configured`)."""

from __future__ import annotations

import argparse
import shutil
import sys
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NoReturn

from aforo.cli.config import Config, load_config
from aforo.cli.flags import ASK, UNRECOGNIZED, FlagParser
from aforo.cli.sanitize import sanitize
from aforo.errors import ConfigError, LimitExceeded


class SubcommandParser(FlagParser):
    """A parse error also names the way to ask a question that starts with the subcommand's name: `aforo
    stats of the repo?` is the `stats` subcommand, refusing `of the repo?`."""

    def error(self, message: str) -> NoReturn:
        if message.startswith(UNRECOGNIZED) and message.removeprefix(UNRECOGNIZED).startswith("-"):
            super().error(message)  # a flag mistyped, not words of a question
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


def configured(flags: dict[str, Any], warn: Callable[[str], None]) -> Config | None:
    """The configuration a subcommand's flags give, its warnings (an untrusted project file's ignored
    keys) handed to `warn`; None when it cannot be loaded, said why (the subcommand exits 2)."""
    try:
        cfg = load_config(flags)
    except (ConfigError, LimitExceeded) as exc:
        fail(exc)
        return None
    for warning in cfg.warnings:
        warn(warning)
    return cfg


def fail(exc: Exception) -> None:
    say(f"aforo: {exc}")


def say(text: str) -> None:
    """One of aforo's own messages, on stderr. On a terminal it is wrapped at word boundaries to the
    terminal's width (the terminal itself breaks words where the line reaches its edge); in a pipe or a
    file each line stays one line. Its text may quote a server or a file, so it is sanitized."""
    text = sanitize(text)
    if sys.stderr.isatty():
        width = shutil.get_terminal_size().columns
        text = "\n".join(_wrap(line, width) for line in text.splitlines())
    print(text, file=sys.stderr)


def _wrap(line: str, width: int) -> str:
    indent = " " * (len(line) - len(line.lstrip(" ")) + 2)  # a continued line is indented under its first
    wrapped = textwrap.fill(
        line, width, subsequent_indent=indent, break_long_words=False, break_on_hyphens=False
    )
    return wrapped or line


def terminal_width() -> int | None:
    """The terminal's width when stdout is one; None for a pipe (nothing is cut there)."""
    return shutil.get_terminal_size().columns if sys.stdout.isatty() else None
