"""`aforo probe`, `aforo stats`, `aforo sessions`, `aforo engine`: each parses its own flags and delegates."""

from __future__ import annotations

import argparse
import json
import os
import sys

from aforo.cli.config import DEFAULT_BASE_URL, SERVER_KINDS
from aforo.engine.cli import engine_main
from aforo.errors import StoreError
from aforo.servers.probe import run_probe_command
from aforo.store.paths import sessions_dir
from aforo.store.sessions import SessionStore
from aforo.store.telemetry import Telemetry
from aforo.store.telemetry_summary import format_summary


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
    return run_probe_command(args.base_url, args.model, args.server, args.json, sys.stdout)


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
                telemetry.export_jsonl(sys.stdout, args.session)
                return 0
            summary = telemetry.summary(args.session)
    except StoreError as exc:
        print(f"aforo: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(summary, indent=2) if args.json else format_summary(summary))
    return 0


def sessions_main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="aforo sessions", description="Saved conversations, newest first.")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--limit", type=int, default=20)
    args = parser.parse_args(argv)
    try:
        listing = SessionStore(sessions_dir()).list(args.limit)
    except StoreError as exc:
        print(f"aforo: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps([s.__dict__ for s in listing], default=str, indent=2))
        return 0
    if not listing:
        print("no sessions yet")
    for s in listing:
        if s.error:
            print(f"{s.id}  unreadable: {s.error}")
        else:
            print(f"{s.id}  {s.updated_at}  {s.n_messages:>4} msgs  {s.model}  {s.workspace}  {s.title}")
    return 0


SUBCOMMANDS = {
    "probe": probe_main,
    "stats": stats_main,
    "sessions": sessions_main,
    "engine": engine_main,
}
