"""`aforo`: parse flags, build the configuration, run one prompt, the interactive session or a subcommand.

Thin by design: configuration in `config`, wiring in `wiring`, output in `render`, the conversation on
disk in `session_keeper`, the interactive session in `repl`. Every run is a saved session.
"""

from __future__ import annotations

import argparse
import io
import os
import re
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from aforo import __version__
from aforo.cli.config import NOT_GIVEN, SERVER_KINDS, Config, load_config
from aforo.cli.first_contact import no_server_message, unreachable
from aforo.cli.render import HumanRenderer, JsonRenderer
from aforo.cli.sanitize import sanitize
from aforo.cli.session_keeper import LATEST, SessionKeeper, find_session, mismatch_warnings
from aforo.cli.status import stderr_status
from aforo.errors import AforoError, ConfigError, LimitExceeded, StoreError
from aforo.events import EventSink, Info, Result, RunEnd, RunResult, Warning, phase
from aforo.limits import ANSWER_TIMEOUT, READ_TIMEOUT
from aforo.store.checkpoints import CheckpointStore, MiB
from aforo.store.journal import StoreJournal
from aforo.store.paths import checkpoints_dir, sessions_dir
from aforo.store.sessions import SessionRecord, SessionStore
from aforo.store.telemetry import Telemetry

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
SESSION_ID = re.compile(r"\d{8}-\d{6}-[0-9a-f]{8}")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="aforo",
        description="A local, read-only coding assistant that always knows how much of the window it uses.",
        epilog="Subcommands: aforo probe | stats | sessions | trust | engine (each takes --help).",
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
        "--local", action="store_true", help="answer with aforo's own engine (installed on first use)"
    )
    parser.add_argument("--yes", "-y", action="store_true", help="with --local: install without asking")
    parser.add_argument(
        "--context-window", type=int, default=NOT_GIVEN, help="the server's real window in tokens"
    )
    parser.add_argument("--max-tokens", type=int, default=NOT_GIVEN, help="cap of the answer reserve")
    parser.add_argument("--max-turns", type=int, default=NOT_GIVEN, help="model calls per prompt (25)")
    parser.add_argument(
        "--temperature", type=float, default=NOT_GIVEN, help="sampling temperature (default: the server's)"
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
    parser.add_argument("--server", choices=SERVER_KINDS, default=NOT_GIVEN, help="skip server detection")
    parser.add_argument("--tokenizer", default=NOT_GIVEN, help="a local tokenizer.json for exact counts")
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
    return parser


def _flags(args: argparse.Namespace) -> dict[str, Any]:
    keys = (
        "workspace",
        "base_url",
        "model",
        "context_window",
        "max_tokens",
        "max_turns",
        "temperature",
        "server",
        "tokenizer",
        "read_timeout",
        "answer_timeout",
    )
    flags = {k: getattr(args, k) for k in keys}
    flags["json"] = args.json
    flags["trust_workspace"] = args.trust_workspace
    flags["engine"] = "local" if args.local else NOT_GIVEN
    return flags


def renderer(as_json: bool, plain: bool = False) -> EventSink:
    return JsonRenderer() if as_json else HumanRenderer(plain=plain, status=stderr_status())


def run_once(argv: list[str]) -> int:
    started = time.monotonic()
    args = build_parser().parse_args(argv)
    try:
        cfg = load_config(_flags(args))
    except (ConfigError, LimitExceeded, StoreError) as exc:  # StoreError: --trust-workspace failed
        _fail(exc)
        return EXIT_USAGE
    resume, words = _split_resume(args.resume, list(args.prompt))
    prompt = " ".join(words).strip()
    interactive = not prompt and sys.stdin.isatty()
    if not prompt and not interactive:
        prompt = sys.stdin.read().strip()
        if not prompt:
            print('aforo: no prompt given. Usage: aforo [--workspace DIR] "question"', file=sys.stderr)
            return EXIT_USAGE
    if interactive and cfg.json:
        print("aforo: --json needs a prompt (the interactive session renders for people)", file=sys.stderr)
        return EXIT_USAGE
    if cfg.engine == "local":
        from aforo.engine.local import attach_local_engine

        try:
            engine = attach_local_engine(cfg.context_window, assume_yes=args.yes)
        except AforoError as exc:
            print(f"aforo: {exc}", file=sys.stderr)
            return EXIT_CODES["error"]
        cfg = replace(cfg, base_url=engine.url, model=engine.model)
    try:
        store = SessionStore(sessions_dir())
        record, notes = _open_record(store, resume, cfg.workspace)
        checkpoints = CheckpointStore(
            checkpoints_dir(),
            session_quota_bytes=int(cfg.checkpoint_session_quota_mb * MiB),
            total_quota_bytes=int(cfg.checkpoint_total_quota_mb * MiB),
        )
    except StoreError as exc:
        _fail(exc)
        return EXIT_USAGE
    if resume and cfg.model is None and record.model:
        cfg = replace(cfg, model=record.model)  # continue with the model the conversation was held with
    emit = renderer(cfg.json, args.plain)
    for note in cfg.notes:
        emit(Info({"trust": note}))
    for warning in cfg.warnings:
        emit(Warning(warning))
    with phase(emit, "connecting", cfg.base_url):
        why = unreachable(cfg.base_url)
    if why is not None:
        # Before any session exists: a run that could not reach a server leaves nothing behind.
        message = no_server_message(cfg.base_url, cfg.base_url_source, why)
        print(f"aforo: {sanitize(message)}", file=sys.stderr)
        emit(Result("error", EXIT_CODES["error"], error=message, duration_ms=_since(started)))
        return EXIT_CODES["error"]
    telemetry = _open_telemetry(emit)
    try:
        code, result, session = _start(
            cfg, emit, store, record, notes, checkpoints, telemetry, prompt, interactive
        )
    finally:
        if telemetry is not None:
            telemetry.close()
    if result is not None:
        r = result
        ms = _since(started)
        emit(
            Result(
                r.reason,
                code,
                r.answer,
                r.turns,
                r.tool_calls,
                r.input_tokens,
                r.output_tokens,
                ms,
                r.error,
                session,
            )
        )
    return code


def _since(started: float) -> float:
    return round((time.monotonic() - started) * 1000, 1)


def _start(
    cfg: Config,
    emit: EventSink,
    store: SessionStore,
    record: SessionRecord,
    notes: list[str],
    checkpoints: CheckpointStore,
    telemetry: Telemetry | None,
    prompt: str,
    interactive: bool,
) -> tuple[int, RunResult | None, str | None]:
    """The exit code, the run's result for the final `result` event (None: interactive) and the saved
    session's id (None: none was saved)."""
    try:
        keeper = SessionKeeper(store, record, emit)
    except StoreError as exc:  # SessionBusy: another aforo has this session open (or it went bad)
        _fail(exc)
        return EXIT_USAGE, RunResult("error", error=str(exc)), None
    try:
        return _run(cfg, emit, keeper, notes, checkpoints, telemetry, prompt, interactive)
    finally:
        keeper.close()


def _run(
    cfg: Config,
    emit: EventSink,
    keeper: SessionKeeper,
    notes: list[str],
    checkpoints: CheckpointStore,
    telemetry: Telemetry | None,
    prompt: str,
    interactive: bool,
) -> tuple[int, RunResult | None, str | None]:
    from aforo.cli.wiring import build_runtime

    record, store = keeper.record, keeper.store
    journal = StoreJournal(keeper.session_id, checkpoints, telemetry, emit)
    try:
        with phase(emit, "connecting", cfg.base_url):
            runtime = build_runtime(cfg, keeper, journal)
    except ConfigError as exc:
        _fail(exc)
        return EXIT_USAGE, RunResult("error", error=str(exc)), None
    except AforoError as exc:
        failed = RunResult("error", error=str(exc))
        emit(RunEnd(failed))
        return EXIT_CODES["error"], failed, None
    for note in notes + mismatch_warnings(record, cfg.workspace, runtime.model):
        emit(Warning(note))
    keeper.attach(runtime.agent, workspace=cfg.workspace, model=runtime.model, base_url=cfg.base_url)
    resumed = f" (resumed: {len(runtime.agent.messages)} messages)" if record.messages else ""
    emit(Info({"session": record.id + resumed}))
    if interactive:
        from aforo.cli.repl import start_repl

        return start_repl(keeper, runtime.provider, store, cfg.workspace, runtime.model), None, record.id
    keeper.begin(prompt)
    result = runtime.agent.run(prompt)
    keeper.save()
    return EXIT_CODES[result.reason], result, record.id


def _fail(exc: Exception) -> None:
    """An error for the user; its text may quote a server or a file, so it is sanitized."""
    print(f"aforo: {sanitize(str(exc))}", file=sys.stderr)


def _split_resume(value: str | None, words: list[str]) -> tuple[str | None, list[str]]:
    """`--resume` takes an optional ID: a value that is no session id is the prompt's first word."""
    if value is None or value == LATEST or SESSION_ID.fullmatch(value):
        return value, words
    return LATEST, [value, *words]


def _open_record(store: SessionStore, resume: str | None, workspace: Path) -> tuple[SessionRecord, list[str]]:
    if resume is None:
        return SessionRecord(id=store.new_id(), workspace=str(workspace)), []
    return find_session(store, resume, workspace)


def _open_telemetry(emit: EventSink) -> Telemetry | None:
    """Telemetry is a record, not the work: when its database cannot be opened the run goes on."""
    try:
        return Telemetry()
    except StoreError as exc:
        emit(Warning(f"Telemetry is off for this run: {exc}"))
        return None


def _lossless_stdio() -> None:
    """A byte that is not UTF-8 in a prompt, a file name or a path is held as a lone surrogate, as in
    argv: read from stdin the same way, and printed as its escape (`\\udcfe`), never a traceback."""
    if isinstance(sys.stdin, io.TextIOWrapper):
        sys.stdin.reconfigure(errors="surrogateescape")
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="backslashreplace")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    _lossless_stdio()
    from aforo.cli.subcommands import SUBCOMMANDS

    try:
        if argv and argv[0] in SUBCOMMANDS:
            return SUBCOMMANDS[argv[0]](argv[1:])
        return run_once(argv)
    except KeyboardInterrupt:
        return EXIT_CODES["aborted"]
    except BrokenPipeError:
        # `aforo stats | head`: the reader left; nothing is wrong with aforo's work.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
