"""The flags of a run (`aforo [flags] question`, `aforo ask [flags] question`) and how they reach the config.

Its own module so that `aforo completion` and the subcommands' help can read the parser without
importing the entry point that dispatches to them.
"""

from __future__ import annotations

import argparse
import difflib
import textwrap
from typing import Any, NoReturn

from aforo import __version__
from aforo.cli.config_values import NOT_GIVEN, SERVER_KINDS, TOOL_MODES
from aforo.cli.session_keeper import LATEST
from aforo.limits import ANSWER_TIMEOUT, READ_TIMEOUT, RUN_SECONDS

ASK = "ask"
HELP_WIDTH = 78
# When the first word is a subcommand (docs/usage.md, "Subcommands"): only the first argument is looked at,
# and only a word that is exactly a subcommand's name is one.
FIRST_WORD_RULE = (
    "A first word that names a subcommand runs it; to ask a question that starts with one, write "
    "`aforo ask stats of the repo?` or `aforo -- stats of the repo?`."
)


UNRECOGNIZED = "unrecognized arguments: "


class FlagParser(argparse.ArgumentParser):
    """A flag's error is one line, not the whole usage: an unknown flag names the closest known one (a
    typo such as `--workspce` printed twelve lines of usage and never said which flag was meant)."""

    def error(self, message: str) -> NoReturn:
        words = message.removeprefix(UNRECOGNIZED).split() if message.startswith(UNRECOGNIZED) else []
        flags = [w.partition("=")[0] for w in words if w.startswith("-") and w != "-"]
        if not flags:  # a value refused: the message names the flag, the usage would bury it
            self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")
        known = [o for o in self._option_string_actions if o.startswith("--")]
        close = difflib.get_close_matches(flags[0], known, n=1, cutoff=0.6)
        hint = f"; did you mean {close[0]}?" if close else ""
        self.exit(2, f"{self.prog}: unknown flag {flags[0]}{hint} ({self.prog} --help lists them)\n")


def build_parser(prog: str = "aforo", subcommands: dict[str, str] | None = None) -> argparse.ArgumentParser:
    """The parser of a run; `subcommands` (name -> what it does) are listed in the help."""
    listed = "".join(
        "\n" + textwrap.fill(f"  {name:<11} {what}", HELP_WIDTH, subsequent_indent=" " * 14)
        for name, what in (subcommands or {}).items()
    )
    parser = FlagParser(
        prog=prog,
        description="A local, read-only coding assistant that always knows how much of the window it uses.",
        epilog=(
            f"subcommands (each takes --help):{listed}\n\n"
            + textwrap.fill(
                f"{FIRST_WORD_RULE} Piped input is what the question is about; @path in a question "
                "attaches that workspace file.",
                HELP_WIDTH,
            )
        )
        if subcommands
        else None,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "prompt",
        nargs="*",
        help="the question (about piped standard input, when there is some); without one, an "
        "interactive session starts",
    )
    _server_flags(parser)
    _answer_flags(parser)
    _context_flags(parser)
    _session_flags(parser)
    return parser


# The flags by group, in the order `--help` lists them.
def _server_flags(parser: argparse.ArgumentParser) -> None:
    """Which workspace is read and which server and model answer."""
    parser.add_argument("--workspace", "-w", default=NOT_GIVEN, help="directory to read (default: cwd)")
    parser.add_argument(
        "--base-url",
        default=NOT_GIVEN,
        help="OpenAI-compatible base URL (default Ollama's; env AFORO_BASE_URL)",
    )
    parser.add_argument(
        "--model", "-m", default=NOT_GIVEN, help="model name or an alias from the config (env AFORO_MODEL)"
    )
    parser.add_argument(
        "--local", action="store_true", help="answer with aforo's own engine (installed on first use)"
    )
    parser.add_argument("--yes", "-y", action="store_true", help="with --local: install without asking")
    parser.add_argument(
        "--context-window", type=int, default=NOT_GIVEN, help="the server's real window in tokens"
    )


def _answer_flags(parser: argparse.ArgumentParser) -> None:
    """How long and how much one answer and one question may take."""
    parser.add_argument("--max-tokens", type=int, default=NOT_GIVEN, help="cap of the answer reserve")
    parser.add_argument("--max-turns", type=int, default=NOT_GIVEN, help="model calls per prompt (25)")
    parser.add_argument(
        "--temperature", type=float, default=NOT_GIVEN, help="sampling temperature (default: 0)"
    )
    parser.add_argument(
        "--read-timeout",
        type=float,
        default=NOT_GIVEN,
        metavar="SECONDS",
        help=f"how long the server may stay silent while it answers ({READ_TIMEOUT.value:g})",
    )
    parser.add_argument(
        "--answer-timeout",
        type=float,
        default=NOT_GIVEN,
        metavar="SECONDS",
        help=f"how long one answer may take in all ({ANSWER_TIMEOUT.value:g})",
    )
    parser.add_argument(
        "--time-budget",
        type=float,
        default=NOT_GIVEN,
        metavar="SECONDS",
        help=f"how long one question may take before the model is asked to answer ({RUN_SECONDS.value:g})",
    )


def _context_flags(parser: argparse.ArgumentParser) -> None:
    """How the server is taken, what is searched and counted, and the lanes a conversation uses."""
    parser.add_argument("--server", choices=SERVER_KINDS, default=NOT_GIVEN, help="skip server detection")
    parser.add_argument(
        "--tool-mode",
        choices=TOOL_MODES,
        default=NOT_GIVEN,
        help="constrained: each answer is one JSON step the server's schema forces; native: tool "
        "definitions (auto: constrained where the server can)",
    )
    parser.add_argument(
        "--no-search",
        dest="presearch",
        action="store_const",
        const=False,
        default=NOT_GIVEN,
        help="do not search the workspace for what the question names before the first model call",
    )
    parser.add_argument("--tokenizer", default=NOT_GIVEN, help="a local tokenizer.json for exact counts")
    parser.add_argument("--lane", default=NOT_GIVEN, help="the [lanes.NAME] the conversation runs on")
    parser.add_argument(
        "--compact-lane", default=NOT_GIVEN, help="the [lanes.NAME] summary requests go to (compaction)"
    )
    parser.add_argument(
        "--compact-model",
        default=NOT_GIVEN,
        help="the model summary requests ask for, on the compaction lane's server (default: this one's)",
    )


def _session_flags(parser: argparse.ArgumentParser) -> None:
    """How the run is shown, what it trusts, and which conversation it continues."""
    parser.add_argument(
        "--json", action="store_true", help="print the event stream as JSON lines (docs/json-events.md)"
    )
    parser.add_argument(
        "--plain", action="store_true", help="the answer as plain text on a terminal too (no Markdown)"
    )
    parser.add_argument(
        "--trust-workspace",
        action="store_true",
        help="trust the workspace's .aforo.toml as it is now, like `aforo trust`, so it may set the server",
    )
    parser.add_argument(
        "--resume",
        nargs="?",
        const=LATEST,
        default=None,
        metavar="ID",
        help="continue a saved conversation (default: the latest of this workspace); "
        "with a prompt it answers it, without one it opens the interactive session",
    )
    parser.add_argument("--version", action="version", version=f"aforo {__version__}")


CONFIG_FLAGS = (
    "workspace",
    "base_url",
    "model",
    "context_window",
    "max_tokens",
    "max_turns",
    "temperature",
    "server",
    "tool_mode",
    "presearch",
    "tokenizer",
    "read_timeout",
    "answer_timeout",
    "time_budget",
    "lane",
    "compact_lane",
    "compact_model",
)


def config_flags(args: argparse.Namespace) -> dict[str, Any]:
    """What `load_config` takes from the parsed flags."""
    flags = {k: getattr(args, k) for k in CONFIG_FLAGS}
    flags["json"] = args.json
    flags["trust_workspace"] = args.trust_workspace
    flags["engine"] = "local" if args.local else NOT_GIVEN
    return flags
