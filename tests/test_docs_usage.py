"""docs/usage.md documents every flag: its flag table has a row for every flag of `aforo` (and no row for a
flag it lacks), its sentence on subcommands names every subcommand, and each subcommand's flags are named
where its own command line (`aforo NAME ...`) is (a flag's short form, `-w DIR`, counts)."""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterator
from pathlib import Path

from aforo.cli.flags import build_parser
from aforo.cli.subcommands import SUBCOMMANDS, parsers

USAGE = Path(__file__).resolve().parents[1] / "docs" / "usage.md"
# What argparse or the table's own prose covers: not rows of the table.
NOT_ROWS = {"--help", "--version"}


def table_flags() -> set[str]:
    """The flags the rows of the table after `| flag | default | meaning |` name in their first cell."""
    text = USAGE.read_text(encoding="utf-8")
    table = text.split("| flag | default | meaning |\n", 1)[1].split("\n\n", 1)[0]
    firsts = [row.strip("|").split(" | ")[0] for row in table.splitlines() if row.startswith("| `")]
    return {flag for cell in firsts for flag in re.findall(r"`(--[a-z-]+)", cell)}


def spellings(parser: argparse.ArgumentParser) -> dict[str, list[str]]:
    """Each long flag -> all the ways to write it (`--workspace` -> `--workspace`, `-w`)."""
    return {
        option: action.option_strings
        for action in parser._actions
        for option in action.option_strings
        if option.startswith("--")
    }


def test_the_flag_table_has_a_row_for_every_flag_and_only_those() -> None:
    flags = table_flags()
    assert {"--local", "--yes", "--plain"} <= flags
    assert flags == set(spellings(build_parser())) - NOT_ROWS


def test_the_subcommands_sentence_names_every_subcommand() -> None:
    text = USAGE.read_text(encoding="utf-8")
    sentence = re.search(r"\*\*Subcommands\*\* \(([^)]*)\)", text)
    assert sentence is not None
    assert sorted(re.findall(r"`([a-z]+)`", sentence.group(1))) == sorted(SUBCOMMANDS)


def commands() -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """Each subcommand's parser, and those of its own subcommands (`sessions prune`, `engine start`)."""
    todo = [(name, parser) for name, parser in parsers().items() if parser is not None]
    while todo:
        name, parser = todo.pop()
        yield name, parser
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                todo += [(f"{name} {sub}", subparser) for sub, subparser in action.choices.items()]


def blocks(text: str) -> list[str]:
    """The page's paragraphs, bullets and table rows, each with its wrapped lines joined."""
    return [block.replace("\n", " ") for block in re.split(r"\n\s*\n|\n(?=- |\| )", text)]


def test_every_flag_of_every_subcommand_is_named_beside_its_command_line() -> None:
    text = USAGE.read_text(encoding="utf-8")
    missing = []
    seen = set()
    for name, parser in commands():
        seen.add(name)
        named_there = [block for block in blocks(text) if f"aforo {name}" in block]
        for flag, ways in sorted(spellings(parser).items()):
            written = [rf"(?<![\w-]){way}\b" for way in ways]
            if flag not in NOT_ROWS and not any(re.search(w, b) for w in written for b in named_there):
                missing.append(f"aforo {name} {flag}")
    assert {"sessions prune", "engine start"} <= seen
    assert missing == []
