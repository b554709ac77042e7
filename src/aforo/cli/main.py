"""`aforo`: parse flags, build the configuration, run one prompt (or a subcommand), exit with the ending.

Thin by design: configuration in `config`, wiring in `wiring`, output in `render`.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from aforo import __version__
from aforo.cli.config import NOT_GIVEN, SERVER_KINDS, load_config
from aforo.cli.render import HumanRenderer, JsonRenderer
from aforo.context.memory_journal import MemoryJournal
from aforo.errors import AforoError, ConfigError
from aforo.events import EventSink, RunEnd, RunResult

EXIT_CODES = {
    "end_turn": 0,
    "error": 1,
    "context_overflow": 3,
    "max_turns": 4,
    "max_tokens": 5,
    "refusal": 5,
    "aborted": 130,
}
EXIT_USAGE = 2


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="aforo",
        description="A local, read-only coding assistant that always knows how much of the window it uses.",
        epilog="Subcommands: aforo probe | aforo stats | aforo sessions (each takes --help).",
    )
    parser.add_argument("prompt", nargs="*", help="the question; without one, an interactive session starts")
    parser.add_argument("--workspace", "-w", default=NOT_GIVEN, help="directory to read (default: cwd)")
    parser.add_argument(
        "--base-url",
        default=NOT_GIVEN,
        help="OpenAI-compatible base URL (default Ollama's; env AFORO_BASE_URL)",
    )
    parser.add_argument("--model", "-m", default=NOT_GIVEN, help="model name (env AFORO_MODEL)")
    parser.add_argument(
        "--context-window", type=int, default=NOT_GIVEN, help="the server's real window in tokens"
    )
    parser.add_argument("--max-tokens", type=int, default=NOT_GIVEN, help="cap of the answer reserve")
    parser.add_argument("--max-turns", type=int, default=NOT_GIVEN, help="model calls per prompt (25)")
    parser.add_argument("--server", choices=SERVER_KINDS, default=NOT_GIVEN, help="skip server detection")
    parser.add_argument("--tokenizer", default=NOT_GIVEN, help="a local tokenizer.json for exact counts")
    parser.add_argument("--json", action="store_true", help="print the event stream as JSON lines")
    parser.add_argument("--version", action="version", version=f"aforo {__version__}")
    return parser


def _flags(args: argparse.Namespace) -> dict[str, Any]:
    keys = (
        "workspace",
        "base_url",
        "model",
        "context_window",
        "max_tokens",
        "max_turns",
        "server",
        "tokenizer",
    )
    flags = {k: getattr(args, k) for k in keys}
    flags["json"] = args.json
    return flags


def renderer(as_json: bool) -> EventSink:
    return JsonRenderer() if as_json else HumanRenderer()


def run_once(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    try:
        cfg = load_config(_flags(args))
    except ConfigError as exc:
        print(f"aforo: {exc}", file=sys.stderr)
        return EXIT_USAGE
    prompt = " ".join(args.prompt).strip()
    if not prompt and not sys.stdin.isatty():
        prompt = sys.stdin.read().strip()
    if not prompt:
        print('aforo: no prompt given. Usage: aforo [--workspace DIR] "question"', file=sys.stderr)
        return EXIT_USAGE
    emit = renderer(cfg.json)
    from aforo.cli.wiring import build_runtime

    try:
        runtime = build_runtime(cfg, emit, MemoryJournal())
    except ConfigError as exc:
        print(f"aforo: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except AforoError as exc:
        emit(RunEnd(RunResult("error", error=str(exc))))
        return EXIT_CODES["error"]
    result = runtime.agent.run(prompt)
    return EXIT_CODES[result.reason]


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    from aforo.cli.subcommands import SUBCOMMANDS

    if argv and argv[0] in SUBCOMMANDS:
        return SUBCOMMANDS[argv[0]](argv[1:])
    try:
        return run_once(argv)
    except KeyboardInterrupt:
        return EXIT_CODES["aborted"]


if __name__ == "__main__":
    sys.exit(main())
