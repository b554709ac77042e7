"""`aforo`: parse flags, build the configuration, run one prompt, the interactive session or a subcommand.

Thin by design: flags in `flags`, configuration in `config`, wiring in `wiring`, output in `render`, the
conversation on disk in `session_keeper`, a prompt's run in `runs`, the interactive session in `repl`.
Every run is a saved session.

The question comes from the arguments, from piped standard input, or both: with both, the piped text
(at most `stdin_bytes`) is framed as what the question is about (`piped`), so `git diff | aforo "review
this"` asks about the diff. Standard input is read only when it is not a terminal; the interactive
session starts when there is neither.
"""

from __future__ import annotations

import io
import os
import re
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import BinaryIO

from aforo.cli.config import Config, load_config
from aforo.cli.first_contact import no_server_message, unreachable
from aforo.cli.flags import ASK, build_parser, config_flags
from aforo.cli.parsing import say
from aforo.cli.piped import Prompt
from aforo.cli.render import HumanRenderer, JsonRenderer
from aforo.cli.runs import RunLog, ask
from aforo.cli.session_keeper import LATEST, SessionKeeper, find_session, mismatch_warnings
from aforo.cli.status import stderr_status
from aforo.errors import AforoError, ConfigError, LimitExceeded, StoreError
from aforo.events import EventSink, Info, Result, RunEnd, RunResult, Warning, phase
from aforo.limits import STDIN_BYTES
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
    "no_progress": 4,
    "time_budget": 4,
    "max_tokens": 5,
    "refusal": 5,
    "empty_answer": 6,
    "aborted": 130,
}
EXIT_USAGE = 2
SESSION_ID = re.compile(r"\d{8}-\d{6}-[0-9a-f]{8}")


def renderer(as_json: bool, plain: bool = False) -> EventSink:
    return JsonRenderer() if as_json else HumanRenderer(plain=plain, status=stderr_status())


def run_once(argv: list[str], prog: str = "aforo") -> int:
    from aforo.cli.subcommands import summaries

    started = time.monotonic()
    args = build_parser(prog, summaries()).parse_args(argv)
    try:
        cfg = load_config(config_flags(args))
    except (ConfigError, LimitExceeded, StoreError) as exc:  # StoreError: --trust-workspace failed
        _fail(exc)
        return EXIT_USAGE
    resume, words = _split_resume(args.resume, list(args.prompt))
    try:
        piped = None if sys.stdin.isatty() else read_piped(sys.stdin.buffer)
    except LimitExceeded as exc:
        _fail(exc)
        return EXIT_USAGE
    prompt = _prompt(piped, " ".join(words))
    interactive = not prompt.question and piped is None
    if not prompt.question and not interactive:
        say('aforo: no prompt given. Usage: aforo [--workspace DIR] "question"')
        return EXIT_USAGE
    if interactive and cfg.json:
        say("aforo: --json needs a prompt (the interactive session renders for people)")
        return EXIT_USAGE
    if cfg.engine == "local":
        from aforo.engine.errors import UnknownModel
        from aforo.engine.local import attach_local_engine

        try:
            engine = attach_local_engine(cfg.context_window, cfg.model, assume_yes=args.yes)
        except UnknownModel as exc:  # a usage error: -m names no model of the engine's
            say(f"aforo: {exc}")
            return EXIT_USAGE
        except AforoError as exc:  # may quote the engine's log (a path, a compiler line)
            say(f"aforo: {exc}")
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
        emit(Info(fields={"trust": note}))
    for warning in cfg.warnings:
        emit(Warning(message=warning))
    if not _reached(cfg, emit, started):
        return EXIT_CODES["error"]
    start = _Start(
        cfg=cfg, emit=emit, notes=notes, checkpoints=checkpoints, prompt=prompt, interactive=interactive
    )
    code, result, session = _start(start, store, record)
    if result is not None:
        emit(Result(run=result, exit_code=code, duration_ms=_since(started), session=session))
    return code


def _reached(cfg: Config, emit: EventSink, started: float) -> bool:
    """Whether the server answers; if not, the run ends here with the error and its final `result`,
    before any session exists: a run that could not reach a server leaves nothing behind."""
    with phase(emit, "connecting", cfg.base_url):
        why = unreachable(cfg.base_url)
    if why is None:
        return True
    message = no_server_message(cfg.base_url, cfg.base_url_source, why)
    say(f"aforo: {message}")
    failed = RunResult(reason="error", error=message)
    emit(Result(run=failed, exit_code=EXIT_CODES["error"], duration_ms=_since(started)))
    return False


def _since(started: float) -> float:
    return round((time.monotonic() - started) * 1000, 1)


def read_piped(stdin: BinaryIO) -> str:
    """Piped standard input as text, bounded by `stdin_bytes` (checked before it is read whole)."""
    limit = int(STDIN_BYTES.value)
    data = stdin.read(limit + 1)
    if len(data) > limit:
        raise LimitExceeded(
            STDIN_BYTES,
            "the piped input is too large to send with a question; pipe the part that matters "
            "(head, sed -n, git diff -- PATH), or mention the file with @path so Read takes what fits",
        )
    # Lossless, like argv: a byte that is not UTF-8 is held as a lone surrogate (shown escaped).
    return data.decode("utf-8", errors="surrogateescape")


def _prompt(piped: str | None, words: str) -> Prompt:
    """The typed words and the piped text (kept as it is, indentation included; None when blank)."""
    kept = piped.rstrip() if piped and piped.strip() else None
    return Prompt(words.strip(), kept)


@dataclass(frozen=True, kw_only=True)
class _Start:
    """What a run starts from once the flags are read and the stores are open."""

    cfg: Config
    emit: EventSink
    notes: list[str]  # about the session resumed, said once the runtime is up
    checkpoints: CheckpointStore
    prompt: Prompt
    interactive: bool


def _start(
    start: _Start, store: SessionStore, record: SessionRecord
) -> tuple[int, RunResult | None, str | None]:
    """The exit code, the run's result for the final `result` event (None: interactive) and the saved
    session's id (None: none was saved)."""
    telemetry = _open_telemetry(start.emit)
    try:
        try:
            keeper = SessionKeeper(store, record, start.emit)
        except StoreError as exc:  # SessionBusy: another aforo has this session open (or it went bad)
            _fail(exc)
            return EXIT_USAGE, RunResult(reason="error", error=str(exc)), None
        try:
            return _run(start, keeper, telemetry)
        finally:
            keeper.close()
    finally:
        if telemetry is not None:
            telemetry.close()


def _run(
    start: _Start, keeper: SessionKeeper, telemetry: Telemetry | None
) -> tuple[int, RunResult | None, str | None]:
    from aforo.cli.wiring import build_runtime

    cfg, emit, record, store = start.cfg, start.emit, keeper.record, keeper.store
    journal = StoreJournal(keeper.session_id, start.checkpoints, telemetry, emit)
    log = RunLog(keeper, journal)
    try:
        with phase(emit, "connecting", cfg.base_url):
            runtime = build_runtime(cfg, log, journal)
    except ConfigError as exc:
        _fail(exc)
        return EXIT_USAGE, RunResult(reason="error", error=str(exc)), None
    except AforoError as exc:
        failed = RunResult(reason="error", error=str(exc))
        emit(RunEnd(result=failed))
        return EXIT_CODES["error"], failed, None
    for note in start.notes + mismatch_warnings(record, cfg.workspace, runtime.model):
        emit(Warning(message=note))
    keeper.attach(runtime.agent, workspace=cfg.workspace, model=runtime.model, base_url=cfg.base_url)
    log.where = runtime.agent.governor.where()
    resumed = f" (resumed: {len(runtime.agent.messages)} messages)" if record.messages else ""
    emit(Info(fields={"session": record.id + resumed}))
    if start.interactive:
        from aforo.cli.repl import start_repl

        repl = start_repl(keeper, log, runtime.provider, store, cfg.workspace, runtime.model)
        return repl, None, record.id
    result = ask(runtime.agent, keeper, log, start.prompt)
    keeper.save()
    return EXIT_CODES[result.reason], result, record.id


def _fail(exc: Exception) -> None:
    """An error for the user; its text may quote a server or a file, so it is sanitized."""
    say(f"aforo: {exc}")


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
        emit(Warning(message=f"Telemetry is off for this run: {exc}"))
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
        # Only the first argument can be a subcommand (flags.FIRST_WORD_RULE); `--` before it or `ask`
        # makes every word part of the question.
        if argv and argv[0] == ASK:
            return run_once(argv[1:], prog=f"aforo {ASK}")
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
