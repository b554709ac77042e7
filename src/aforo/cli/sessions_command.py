"""`aforo sessions`: the saved conversations of this workspace, newest first; `aforo sessions prune`.

The listing shows this workspace's sessions (the ones `--resume` picks from; `--all` for every
workspace) that got an answer (`--unanswered` adds the runs that never did, such as a first try without
a server), with when they were last used in words ("3 min ago"). On a terminal each line fits its width:
the title is cut, never the id. Pruning removes sessions and their checkpoints; it lists what it will
remove and asks first (`--yes` for scripts, `--dry-run` to only see). Telemetry rows stay, so `aforo
stats` keeps counting what the removed sessions cost.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import sys
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from aforo.cli.config import NOT_GIVEN, resolve_workspace
from aforo.cli.parsing import fail, subcommand_parser, terminal_width
from aforo.cli.sanitize import sanitize
from aforo.errors import ConfigError, StoreError
from aforo.store.checkpoints import CheckpointStore
from aforo.store.paths import checkpoints_dir, sessions_dir
from aforo.store.sessions import SessionStore, SessionSummary

AGE = re.compile(r"(\d+)\s*(m|min|h|d|w)")
_UNITS = {"m": "minutes", "min": "minutes", "h": "hours", "d": "days", "w": "weeks"}
_SHOWN_BEFORE_ASKING = 10


def age(text: str) -> timedelta:
    """`30d`, `12h`, `2w`, `90m` as a timedelta; argparse reports anything else."""
    match = AGE.fullmatch(text.strip())
    if match is None:
        raise argparse.ArgumentTypeError(f"{text!r} is not an age such as 30d, 12h, 2w or 90m")
    return timedelta(**{_UNITS[match.group(2)]: int(match.group(1))})


def sessions_parser() -> argparse.ArgumentParser:
    parser = subcommand_parser(
        "sessions",
        "Saved conversations of this workspace, newest first. `aforo sessions prune` removes old ones.",
        json_help="the listing as JSON",
    )
    _scope_flags(parser, default=None)
    parser.add_argument(
        "--unanswered", action="store_true", help="also list the sessions that never got an answer"
    )
    parser.add_argument("--limit", type=int, default=20, metavar="N", help="at most N sessions (20)")
    actions = parser.add_subparsers(dest="action", metavar="{prune}")
    prune = actions.add_parser(
        "prune",
        help="remove sessions and their checkpoints",
        description="Remove sessions (with their checkpoints) of this workspace, or of all with --all: "
        "those last used before --older-than, or that never got an answer with --unanswered, or both.",
    )
    # Given after `prune` or before it (`aforo sessions --all prune`): the same flags, the same meaning.
    _scope_flags(prune, default=argparse.SUPPRESS)
    prune.add_argument("--unanswered", action="store_true", help="only the sessions that never got an answer")
    prune.add_argument(
        "--older-than", type=age, metavar="AGE", help="last used more than AGE ago: 30d, 12h, 2w"
    )
    prune.add_argument("--yes", "-y", action="store_true", help="remove without asking")
    prune.add_argument("--dry-run", action="store_true", help="only list what would be removed")
    return parser


def _scope_flags(parser: argparse.ArgumentParser, default: object) -> None:
    """Whose sessions; `default` SUPPRESS on the prune parser keeps what was given before `prune`."""
    parser.add_argument(
        "--workspace",
        "-w",
        default=NOT_GIVEN if default is None else default,
        help="this workspace's sessions (default: the current directory)",
    )
    parser.add_argument(
        "--all",
        action="store_true",
        default=False if default is None else default,
        help="the sessions of every workspace",
    )


def sessions_run(args: argparse.Namespace) -> int:
    try:
        workspace = None if args.all else str(resolve_workspace(args.workspace))
        store = SessionStore(sessions_dir())
        listing = store.list()
    except ConfigError as exc:
        fail(exc)
        return 2
    except StoreError as exc:
        fail(exc)
        return 1
    now = datetime.now(UTC)
    if args.action == "prune":
        return _prune(args, store, listing, workspace, now)
    shown = [s for s in listing if _here(s, workspace) and (args.unanswered or s.answered or s.error)]
    if args.json:
        print(json.dumps([s.__dict__ for s in shown[: args.limit]], default=str, indent=2))
        return 0
    width = terminal_width()
    if not shown:
        print("no sessions yet" if not listing else "no sessions here")
    for s in shown[: args.limit]:
        print(fit(line_of(s, now, every_workspace=workspace is None), width))
    for note in _hidden(listing, shown, workspace, args):
        print(note)
    return 0


def _here(s: SessionSummary, workspace: str | None) -> bool:
    """In the listed workspace; an unreadable file has no workspace to tell, so it is always listed."""
    return workspace is None or s.error is not None or s.workspace == workspace


def _hidden(
    listing: list[SessionSummary],
    shown: list[SessionSummary],
    workspace: str | None,
    args: argparse.Namespace,
) -> Iterable[str]:
    more = len(shown) - args.limit
    if more > 0:
        yield f"… {more} older (--limit)"
    elsewhere = sum(1 for s in listing if not _here(s, workspace))
    unanswered = sum(1 for s in listing if _here(s, workspace) and not s.answered and not s.error)
    if elsewhere:
        yield f"{elsewhere} more in other workspaces (--all)"
    if unanswered and not args.unanswered:
        yield f"{unanswered} never answered (--unanswered)"


def ago(when: str, now: datetime) -> str:
    """`just now`, `3 min ago`, `5 h ago`, `yesterday`, `12 days ago`, then the date."""
    try:
        then = datetime.fromisoformat(when)
    except ValueError:
        return "?"
    seconds = (now - then).total_seconds()
    if seconds < 60:
        return "just now"
    if seconds < 3600:
        return f"{int(seconds // 60)} min ago"
    if seconds < 86400:
        return f"{int(seconds // 3600)} h ago"
    days = int(seconds // 86400)
    if days == 1:
        return "yesterday"
    return f"{days} days ago" if days < 30 else then.date().isoformat()


def line_of(s: SessionSummary, now: datetime, *, every_workspace: bool) -> str:
    if s.error:
        return sanitize(f"{s.id}  unreadable: {s.error}", one_line=True)
    cells = [s.id, f"{ago(s.updated_at or s.created_at, now):>12}", f"{s.n_messages:>3} msgs", s.model]
    if every_workspace:
        cells.append(_short_path(s.workspace))
    cells.append(s.title or "(no question)")
    return sanitize("  ".join(cells), one_line=True)


def _short_path(path: str) -> str:
    home = str(Path.home())
    return "~" + path[len(home) :] if home != "/" and (path == home or path.startswith(home + "/")) else path


def fit(line: str, width: int | None) -> str:
    """`line` cut to `width` with an ellipsis (the end holds the title, the least needed part)."""
    if width is None or len(line) <= width:
        return line
    return line[: max(width - 1, 0)] + "…"


# --- prune -----------------------------------------------------------------------------------------


def _prune(
    args: argparse.Namespace,
    store: SessionStore,
    listing: list[SessionSummary],
    workspace: str | None,
    now: datetime,
) -> int:
    if args.older_than is None and not args.unanswered:
        print(
            "aforo sessions prune: say which: --older-than AGE (e.g. 30d), --unanswered, or both",
            file=sys.stderr,
        )
        return 2
    doomed = [s for s in listing if s.error is None and _here(s, workspace) and _prunable(s, args, now)]
    if not doomed:
        print("nothing to remove")
        return 0
    where = "every workspace" if workspace is None else workspace
    print(sanitize(f"{len(doomed)} session(s) of {where} to remove, with their checkpoints:"))
    width = terminal_width()
    for s in doomed[:_SHOWN_BEFORE_ASKING]:
        print(fit("  " + line_of(s, now, every_workspace=workspace is None), width))
    if len(doomed) > _SHOWN_BEFORE_ASKING:
        print(f"  … and {len(doomed) - _SHOWN_BEFORE_ASKING} more")
    if args.dry_run:
        return 0
    if not args.yes:
        if not sys.stdin.isatty():
            print("aforo: not removed: pass --yes to remove without a terminal to ask on", file=sys.stderr)
            return 2
        if input(f"Remove {len(doomed)} session(s)? [y/N] ").strip().lower() not in ("y", "yes"):
            print("nothing removed")
            return 0
    checkpoints = CheckpointStore(checkpoints_dir())
    removed = 0
    try:
        for s in doomed:
            removed += _remove_checkpoints(checkpoints, s.id)
            store.remove(s.id)
    except (OSError, StoreError) as exc:
        fail(StoreError(f"pruning stopped: {exc}"))
        return 1
    print(f"removed {len(doomed)} session(s) and {removed} checkpoint(s)")
    return 0


def _prunable(s: SessionSummary, args: argparse.Namespace, now: datetime) -> bool:
    if args.unanswered and s.answered:
        return False
    if args.older_than is None:
        return True
    try:
        used = datetime.fromisoformat(s.updated_at or s.created_at)
    except ValueError:
        return False  # when it was used is unknown: not old enough to remove without asking
    return now - used > args.older_than


def _remove_checkpoints(checkpoints: CheckpointStore, session_id: str) -> int:
    """Delete the session's checkpoint files, then its directory if nothing else is in it."""
    entries = checkpoints.list(session_id)
    for entry in entries:
        entry.path.unlink(missing_ok=True)
    with contextlib.suppress(OSError):  # absent, or holds files aforo did not write: left as it is
        (checkpoints.root / session_id).rmdir()
    return len(entries)
