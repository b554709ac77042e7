"""The README's flag table has a row for every flag of `aforo` (and no row for a flag it lacks), and its
sentence on subcommands names every subcommand."""

from __future__ import annotations

import re
from pathlib import Path

from aforo.cli.flags import build_parser
from aforo.cli.subcommands import SUBCOMMANDS

README = Path(__file__).resolve().parents[1] / "README.md"
# What argparse or the table's own prose covers: not rows of the table.
NOT_ROWS = {"--help", "--version"}


def table_flags() -> set[str]:
    """The flags the rows of the table after `| flag | default | meaning |` name in their first cell."""
    text = README.read_text(encoding="utf-8")
    table = text.split("| flag | default | meaning |\n", 1)[1].split("\n\n", 1)[0]
    firsts = [row.strip("|").split(" | ")[0] for row in table.splitlines() if row.startswith("| `")]
    return {flag for cell in firsts for flag in re.findall(r"`(--[a-z-]+)", cell)}


def parser_flags() -> set[str]:
    return {
        option
        for action in build_parser()._actions
        for option in action.option_strings
        if option.startswith("--")
    }


def test_the_flag_table_has_a_row_for_every_flag_and_only_those() -> None:
    flags = table_flags()
    assert {"--local", "--yes", "--plain"} <= flags
    assert flags == parser_flags() - NOT_ROWS


def test_the_subcommands_sentence_names_every_subcommand() -> None:
    text = README.read_text(encoding="utf-8")
    sentence = re.search(r"\*\*Subcommands\*\* \(([^)]*)\)", text)
    assert sentence is not None
    assert sorted(re.findall(r"`([a-z]+)`", sentence.group(1))) == sorted(SUBCOMMANDS)
