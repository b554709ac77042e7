"""The subcommands: one table, `SUBCOMMANDS`, name -> a callable taking the words after the name.

Each entry is a `Subcommand`: a parser (whose description is its line in `aforo --help`, and whose
flags `aforo completion` offers) and the function that runs on the parsed flags. The commands that talk
to a server read the config files and conventions the way a run does (`load_config`).

What they print can hold a server's or a model's words (model names, session titles, error bodies): it
is sanitized like the event stream (`cli.sanitize`); `--json` output is JSON with ASCII escapes.
"""

from __future__ import annotations

import argparse
import functools
import json
import shlex
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from aforo.cli.completion import completion_parser, completion_run
from aforo.cli.config import NOT_GIVEN, Config, resolve_workspace
from aforo.cli.engine_command import build_parser as engine_parser
from aforo.cli.engine_command import engine_run
from aforo.cli.first_contact import not_an_llm_server, not_llm_message
from aforo.cli.flags import ASK
from aforo.cli.parsing import Subcommand, configured, fail, say, subcommand_parser, terminal_width
from aforo.cli.project_file import PROJECT_FILE, ROUTING_KEYS, load_project_file
from aforo.cli.project_file import trust_project as trust_project_file
from aforo.cli.routes import lane_settings
from aforo.cli.sanitize import SafeWriter, sanitize
from aforo.cli.serve_command import serve_parser, serve_run
from aforo.cli.sessions_command import sessions_parser, sessions_run
from aforo.cli.status import StatusWriter, stderr_status
from aforo.errors import ConfigError, LimitExceeded, StoreError
from aforo.events import Progress
from aforo.server_kinds import KINDS, SERVER_KINDS
from aforo.servers.detect import detect_server
from aforo.servers.kind import kind_named
from aforo.servers.probe import run_probe_command
from aforo.store.telemetry import Telemetry
from aforo.store.telemetry_summary import format_summary
from aforo.store.trust import TrustStore, digest
from aforo.wire.http import reach

MODELS_TIMEOUT = httpx.Timeout(10.0, connect=5.0)


def _server_parser(name: str, description: str, json_help: str, *, model: bool) -> argparse.ArgumentParser:
    """The parser of a subcommand that talks to the server a run would, with the flags that choose that
    server as a run has them; unset ones come from the config."""
    parser = subcommand_parser(name, description, json_help=json_help)
    parser.add_argument(
        "--workspace",
        "-w",
        default=NOT_GIVEN,
        help="whose .aforo.toml applies (default: the current directory)",
    )
    parser.add_argument(
        "--base-url",
        default=NOT_GIVEN,
        help="the server (default: from the config and conventions, as a run)",
    )
    if model:
        parser.add_argument(
            "--model", "-m", default=NOT_GIVEN, help="model name or alias (default: the config's)"
        )
    parser.add_argument("--server", choices=SERVER_KINDS, default=NOT_GIVEN, help="skip server detection")
    return parser


def _configured(run: Callable[[argparse.Namespace, Config], int]) -> Callable[[argparse.Namespace], int]:
    """`run` with the configuration a run with these flags would have; its warnings (an untrusted
    project file's ignored keys) go to stderr. A config that cannot be loaded is exit 2, saying why."""

    def with_config(args: argparse.Namespace) -> int:
        flags = {k: getattr(args, k, NOT_GIVEN) for k in ("workspace", "base_url", "model", "server")}
        cfg = configured(flags, lambda warning: say(f"aforo: ! {warning}"))
        return 2 if cfg is None else run(args, cfg)

    return with_config


def _server_command(
    json_help: str, *, model: bool
) -> Callable[[Callable[[argparse.Namespace, Config], int]], Subcommand]:
    """A subcommand that talks to the server a run would, named after the function it decorates and
    described by its docstring: `_server_parser`'s flags, then the function with their `_configured`."""

    def command(run: Callable[[argparse.Namespace, Config], int]) -> Subcommand:
        description = " ".join((run.__doc__ or "").split())
        parser = functools.partial(_server_parser, run.__name__, description, json_help, model=model)
        return Subcommand(parser, _configured(run))

    return command


# --- probe -----------------------------------------------------------------------------------------


@_server_command("print {window, overflow, source} as JSON", model=True)
def probe(args: argparse.Namespace, cfg: Config) -> int:
    """Measure the window a server really serves, and how it overflows. Later runs use what it found;
    the server and model come from the config files and conventions, as for a run."""
    # A probe takes minutes: on a terminal the status line says it is still at work between its lines.
    status = stderr_status(args.json)
    screen = StatusWriter(sys.stdout, status) if status else sys.stdout
    out = sys.stdout if args.json else SafeWriter(screen)  # type: ignore[arg-type]
    if status:
        status.show(Progress(phase="probing", detail="the window"))
    try:
        return run_probe_command(cfg.base_url, cfg.model, cfg.server, args.json, out, kinds=KINDS)  # type: ignore[arg-type]
    finally:
        if status:
            status.close()


# --- models ----------------------------------------------------------------------------------------


@_server_command("print {server, base_url, models, aliases} as JSON", model=False)
def models(args: argparse.Namespace, cfg: Config) -> int:
    """List the models the server offers. Each kind of server is asked its own way; the config's
    aliases are shown next to the models they name."""
    # The key goes where the user pointed aforo, as for a run (config.py: never to the default URL).
    headers = {"Authorization": f"Bearer {cfg.api_key}"} if cfg.api_key else {}
    with httpx.Client(timeout=MODELS_TIMEOUT, headers=headers) as client:
        try:
            info = detect_server(client, cfg.base_url, cfg.server, kinds=KINDS)
        except ConfigError as exc:
            fail(exc)
            return 2
        unreachable = None if info.models else _unreachable(client, f"{info.v1_url}/models")
        fallback = cfg.server is None and kind_named(KINDS, info.kind).check is None
        odd = not_an_llm_server(client, info.v1_url, MODELS_TIMEOUT.read or 10.0) if fallback else None
    if odd and not info.models and not unreachable:
        fail(ConfigError(not_llm_message(cfg.base_url, cfg.base_url_source, odd)))
        return 1
    if unreachable:
        fail(
            ConfigError(f"no server answered at {info.v1_url} ({unreachable}); start one or pass --base-url")
        )
        return 1
    if args.json:
        doc = {"server": info.kind, "base_url": info.root_url, "models": info.models, "aliases": cfg.aliases}
        print(json.dumps(doc, indent=2))
        return 0
    print(sanitize(f"{info.kind} at {info.root_url}: {len(info.models)} model(s)"), file=sys.stderr)
    by_model: dict[str, list[str]] = {}
    for alias, model in cfg.aliases.items():
        by_model.setdefault(model, []).append(alias)
    for model in info.models:
        aliases = by_model.pop(model, [])
        print(sanitize(model + (f"  (alias: {', '.join(aliases)})" if aliases else ""), one_line=True))
    for model, aliases in by_model.items():
        print(sanitize(f"{', '.join(aliases)} -> {model} (not listed by this server)", one_line=True))
    return 0


def _unreachable(client: httpx.Client, url: str) -> str | None:
    """Why nothing answered at `url`, or None when something did (it just lists no models)."""
    try:
        reach(client, url)
    except httpx.HTTPError as exc:
        return str(exc) or type(exc).__name__
    return None


# --- stats -----------------------------------------------------------------------------------------


def stats_parser() -> argparse.ArgumentParser:
    parser = subcommand_parser(
        "stats",
        "What each session cost and what the governor did. Per session: its runs, tokens in and out, "
        "the cached share, wall time and model; admissions, clearings, compactions and what they saved.",
        json_help="the summary as JSON",
    )
    parser.add_argument("--session", metavar="ID", help="only this session")
    parser.add_argument("--export", action="store_true", help="every record as JSON lines")
    return parser


def stats_run(args: argparse.Namespace) -> int:
    try:
        with Telemetry() as telemetry:
            if args.export:
                telemetry.export_jsonl(SafeWriter(sys.stdout, json=True), args.session)  # type: ignore[arg-type]
                return 0
            summary = telemetry.summary(args.session)
    except StoreError as exc:
        fail(exc)
        return 1
    print(json.dumps(summary, indent=2) if args.json else sanitize(format_summary(summary, terminal_width())))
    return 0


# --- trust -----------------------------------------------------------------------------------------


def trust_parser() -> argparse.ArgumentParser:
    parser = subcommand_parser(
        "trust",
        f"Trust a workspace's {PROJECT_FILE} to choose the server. Until you do, its "
        f"{', '.join(ROUTING_KEYS)}, lanes with a base_url and a tokenizer outside the workspace are "
        "ignored. Remembered by path and content: an edited file must be trusted again.",
    )
    parser.add_argument("workspace", nargs="?", help="the workspace (default: the current directory)")
    action = parser.add_mutually_exclusive_group()
    action.add_argument(
        "--list", action="store_true", help="the trusted workspaces and whether their file changed"
    )
    action.add_argument(
        "--revoke", action="store_true", help="forget the workspace: its file is untrusted again"
    )
    return parser


def trust_run(args: argparse.Namespace) -> int:
    store = TrustStore()
    try:
        if args.list:
            return _list_trusted(store)
        if args.revoke:
            workspace = Path(args.workspace or ".").expanduser().resolve()
            done = store.revoke(workspace)
            print(sanitize(f"{'revoked' if done else 'not trusted'}: {workspace}"))
            return 0
        workspace = resolve_workspace(args.workspace)
        project = trust_project_file(workspace, store)
    except (ConfigError, LimitExceeded) as exc:
        fail(exc)
        return 2
    except StoreError as exc:
        fail(exc)
        return 1
    print(sanitize(f"trusted {project.path} (sha256 {digest(project.raw)[:12]})"))
    settings = [(key, project.values[key]) for key in (*ROUTING_KEYS, "tokenizer") if key in project.values]
    for key, raw in settings + lane_settings(project.values):
        value = "(hidden)" if key == "api_key" else json.dumps(raw, ensure_ascii=False)
        print(sanitize(f"  it sets {key} = {value}", one_line=True))
    forget = f"aforo trust --revoke {shlex.quote(str(workspace))}"
    print(sanitize(f"Once edited, it must be trusted again; `{forget}` forgets it."))
    return 0


def _list_trusted(store: TrustStore) -> int:
    trusted = store.list()
    if not trusted:
        print("no trusted workspaces")
    for entry in trusted:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(entry.trusted_at))
        try:
            project, _ = load_project_file(Path(entry.workspace))
        except (ConfigError, LimitExceeded):
            project = None
        if project is None:
            state = f"no usable {PROJECT_FILE} now"
        else:
            state = (
                "unchanged"
                if digest(project.raw) == entry.sha256
                else "changed since: untrusted until trusted again"
            )
        print(sanitize(f"{entry.workspace}  trusted {when}  {state}", one_line=True))
    return 0


# --- the table -------------------------------------------------------------------------------------


SUBCOMMANDS: dict[str, Callable[[list[str]], int]] = {
    "probe": probe,
    "models": models,
    "stats": Subcommand(stats_parser, stats_run),
    "sessions": Subcommand(sessions_parser, sessions_run),
    "trust": Subcommand(trust_parser, trust_run),
    "engine": Subcommand(engine_parser, engine_run),
    "serve": Subcommand(serve_parser, serve_run),
    "completion": Subcommand(completion_parser, lambda args: completion_run(args, parsers())),
}


def parser_of(name: str) -> argparse.ArgumentParser | None:
    """The parser of a subcommand, for help and completion (None for an entry that has none)."""
    entry: Any = SUBCOMMANDS[name]
    return entry.parser() if isinstance(entry, Subcommand) else None


def parsers() -> dict[str, argparse.ArgumentParser | None]:
    return {name: parser_of(name) for name in SUBCOMMANDS}


def first_sentence(text: str) -> str:
    return text.split(". ")[0].strip().rstrip(".")


def summaries() -> dict[str, str]:
    """Each subcommand's first sentence, for `aforo --help`."""
    out = {}
    for name, entry in SUBCOMMANDS.items():
        parser = parser_of(name)
        text = (parser.description if parser else entry.__doc__) or ""
        out[name] = first_sentence(text)
    out[ASK] = "Ask a question: every word after it is the question (the explicit form)"
    return out
