"""`aforo probe`, `stats`, `sessions`, `trust`, `engine`: each parses its own flags and delegates.

What they print can hold a server's or a model's words (model names, session titles, error bodies): it
is sanitized like the event stream (`cli.sanitize`); `--json` output is JSON with ASCII escapes.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import time
from pathlib import Path

from aforo.cli.config import (
    DEFAULT_BASE_URL,
    PROJECT_FILE,
    ROUTING_KEYS,
    load_project_file,
    resolve_workspace,
)
from aforo.cli.config import trust_project as trust_project_file
from aforo.cli.sanitize import SafeWriter, sanitize
from aforo.cli.status import StatusWriter, stderr_status
from aforo.engine.cli import engine_main
from aforo.errors import ConfigError, LimitExceeded, StoreError
from aforo.events import Progress
from aforo.server_kinds import KINDS, SERVER_KINDS
from aforo.servers.probe import run_probe_command
from aforo.store.paths import sessions_dir
from aforo.store.sessions import SessionStore
from aforo.store.telemetry import Telemetry
from aforo.store.telemetry_summary import format_summary
from aforo.store.trust import TrustStore, digest


def fail(exc: Exception) -> None:
    print(f"aforo: {sanitize(str(exc))}", file=sys.stderr)


def probe_main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="aforo probe",
        description="Measure the window a server really serves and how it overflows; remember it.",
    )
    parser.add_argument("--base-url", default=os.environ.get("AFORO_BASE_URL", DEFAULT_BASE_URL))
    parser.add_argument("--model", "-m", default=os.environ.get("AFORO_MODEL"))
    parser.add_argument("--server", choices=SERVER_KINDS, default=None)
    parser.add_argument("--json", action="store_true", help="print {window, overflow, source} as JSON")
    args = parser.parse_args(argv)
    # A probe takes minutes: on a terminal the status line says it is still at work between its lines.
    status = stderr_status(args.json)
    screen = StatusWriter(sys.stdout, status) if status else sys.stdout
    out = sys.stdout if args.json else SafeWriter(screen)  # type: ignore[arg-type]
    if status:
        status.show(Progress("probing", "the window"))
    try:
        return run_probe_command(args.base_url, args.model, args.server, args.json, out, kinds=KINDS)  # type: ignore[arg-type]
    finally:
        if status:
            status.close()


def stats_main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="aforo stats", description="What the governor did: admissions, clearings, compactions..."
    )
    parser.add_argument("--session", help="only this session")
    parser.add_argument("--json", action="store_true", help="the summary as JSON")
    parser.add_argument("--export", action="store_true", help="every record as JSON lines")
    args = parser.parse_args(argv)
    try:
        with Telemetry() as telemetry:
            if args.export:
                telemetry.export_jsonl(SafeWriter(sys.stdout, json=True), args.session)  # type: ignore[arg-type]
                return 0
            summary = telemetry.summary(args.session)
    except StoreError as exc:
        fail(exc)
        return 1
    print(json.dumps(summary, indent=2) if args.json else sanitize(format_summary(summary)))
    return 0


def sessions_main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="aforo sessions", description="Saved conversations, newest first.")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--limit", type=int, default=20)
    args = parser.parse_args(argv)
    try:
        listing = SessionStore(sessions_dir()).list(args.limit)
    except StoreError as exc:
        fail(exc)
        return 1
    if args.json:
        print(json.dumps([s.__dict__ for s in listing], default=str, indent=2))
        return 0
    if not listing:
        print("no sessions yet")
    for s in listing:
        if s.error:
            line = f"{s.id}  unreadable: {s.error}"
        else:
            line = f"{s.id}  {s.updated_at}  {s.n_messages:>4} msgs  {s.model}  {s.workspace}  {s.title}"
        print(sanitize(line, one_line=True))
    return 0


def trust_main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="aforo trust",
        description=(
            f"Trust a workspace's {PROJECT_FILE} to choose the server: its {', '.join(ROUTING_KEYS)} and a "
            "tokenizer outside the workspace are ignored until you do. Remembered by path and content: "
            "an edited file must be trusted again."
        ),
    )
    parser.add_argument("workspace", nargs="?", help="the workspace (default: the current directory)")
    action = parser.add_mutually_exclusive_group()
    action.add_argument(
        "--list", action="store_true", help="the trusted workspaces and whether their file changed"
    )
    action.add_argument(
        "--revoke", action="store_true", help="forget the workspace: its file is untrusted again"
    )
    args = parser.parse_args(argv)
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
    for key in (*ROUTING_KEYS, "tokenizer"):
        if key in project.values:
            value = "(hidden)" if key == "api_key" else json.dumps(project.values[key], ensure_ascii=False)
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


SUBCOMMANDS = {
    "probe": probe_main,
    "stats": stats_main,
    "sessions": sessions_main,
    "trust": trust_main,
    "engine": engine_main,
}
