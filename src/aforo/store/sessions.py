"""Sessions: the conversation saved after every turn, so `aforo --resume` survives a crash or a kill.

One redacted JSON file per session (`root/<id>.json`), replaced atomically on each save: a kill at any
moment leaves the previous turn's state or the new one. Ids sort by creation time. Secrets never rest
on disk: a resumed conversation shows `[REDACTED:<kind>]` where one was. One process writes a session
at a time: `lock` takes it (an fcntl lock on `root/<id>.lock`, released by the kernel when the
process ends, however it ends), and a second process gets `SessionBusy` instead of silently
overwriting the other's turns.
"""

from __future__ import annotations

import builtins
import contextlib
import fcntl
import os
from collections.abc import Iterator
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from aforo.errors import SessionBusy, StoreError
from aforo.limits import SESSION_BYTES
from aforo.messages import Message, messages_from_list, messages_to_list
from aforo.store.atomic import (
    atomic_write,
    check_size,
    encode_json,
    is_temp_name,
    read_json,
    remove_stale_temps,
)
from aforo.store.ids import check_id, new_id, utc_now
from aforo.store.migrations import DocumentStep, Migrations, document_header, upgrade_document
from aforo.store.paths import FILE_MODE, ensure_dir
from aforo.store.redact import redact_obj, redacted_line

KIND = "aforo.session"
# Each takes a session dict one shape further (see store/migrations.py).
MIGRATIONS: Migrations[DocumentStep] = Migrations("session")


@MIGRATIONS
def m001_trail(data: dict[str, Any]) -> dict[str, Any]:
    # Issue 38: the session's trail (context/trail); a session saved before has none, rebuilt from its
    # messages when it is resumed.
    return {"trail": {}, **data}


TITLE_CHARS = 60
_STRUCTURAL = frozenset(
    {"kind", "schema_version", "id", "workspace", "model", "created_at", "updated_at", "window"}
)


@dataclass(kw_only=True)
class SessionRecord:
    id: str
    workspace: str  # the resolved workspace path
    model: str = ""
    base_url: str = ""
    created_at: str = field(default_factory=utc_now)
    updated_at: str = ""
    messages: list[Message] = field(default_factory=list)
    title: str = ""
    window: int = 0
    extra: dict[str, Any] = field(default_factory=dict)
    # What aforo keeps of the session beside its conversation (context/trail.Trail.to_dict); {}: none yet.
    trail: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        return {**document_header(KIND, MIGRATIONS), **data, "messages": messages_to_list(self.messages)}


def title_of(messages: list[Message]) -> str:
    """The first line of the first user text, redacted and then cut to fit a listing."""
    for m in messages:
        if m.role == "user" and m.text.strip():
            return redacted_line(m.text, TITLE_CHARS)
    return ""


@dataclass(frozen=True, kw_only=True)
class SessionSummary:
    """One line of `aforo sessions`. `error` is set (and the rest mostly empty) for an unreadable file."""

    id: str
    path: Path
    workspace: str = ""
    model: str = ""
    title: str = ""
    created_at: str = ""
    updated_at: str = ""
    n_messages: int = 0
    answered: bool = False  # the model answered at least once (a run that failed first never did)
    error: str | None = None


def _record_from(data: Any, where: str) -> SessionRecord:
    data = upgrade_document(data, KIND, MIGRATIONS, where)
    try:
        strings = {
            k: data[k] for k in ("id", "workspace", "model", "base_url", "created_at", "updated_at", "title")
        }
        if not all(isinstance(v, str) for v in strings.values()):
            raise ValueError(
                "id, workspace, model, base_url, created_at, updated_at and title must be strings"
            )
        window, extra, trail = data["window"], data["extra"], data["trail"]
        if not isinstance(window, int) or isinstance(window, bool) or not isinstance(extra, dict):
            raise ValueError("window must be an integer and extra an object")
        if not isinstance(trail, dict):
            raise ValueError("trail must be an object")
        return SessionRecord(
            **strings, window=window, extra=extra, trail=trail, messages=messages_from_list(data["messages"])
        )
    except KeyError as exc:
        raise StoreError(f"{where} is invalid: missing field {exc.args[0]!r}; it will not be used.") from exc
    except (ValueError, TypeError) as exc:
        raise StoreError(f"{where} is invalid: {exc}; it will not be used.") from exc


class SessionLock:
    """This process's hold on one session; `release` (or the end of the process) lets another take it."""

    def __init__(self, session_id: str, path: Path, fd: int) -> None:
        self.session_id = session_id
        self.path = path
        self._fd: int | None = fd

    @property
    def held(self) -> bool:
        return self._fd is not None

    def release(self) -> None:
        if self._fd is not None:
            # Closing the descriptor drops the lock; the file stays, so no other process is left
            # holding a lock on a name that was just unlinked.
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> SessionLock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


class SessionStore:
    def __init__(self, root: Path) -> None:
        self.root = root

    def lock(self, session_id: str) -> SessionLock:
        """Take `session_id` for this process; `SessionBusy` at once when another process holds it.

        No waiting: the other process may be an interactive session that stays open for hours, and
        a turn written over its turns would be lost without a word."""
        path = self.root / f"{check_id(session_id, 'session id')}.lock"
        ensure_dir(self.root)
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, FILE_MODE)
        except OSError as exc:
            raise StoreError(f"cannot lock session {session_id} ({path}): {exc.strerror or exc}") from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = _holder(fd)
            os.close(fd)
            raise SessionBusy(
                f"session {session_id} is open in another aforo process{holder}; wait for it to end, or "
                "start a new conversation (without --resume) or resume another (`aforo sessions`)"
            ) from None
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode())
        return SessionLock(session_id, path, fd)

    @staticmethod
    def new_id() -> str:
        return new_id()

    def path(self, session_id: str) -> Path:
        return self.root / f"{check_id(session_id, 'session id')}.json"

    def save(self, rec: SessionRecord) -> Path:
        """Persist `rec` (redacted) atomically; fills in its title and bumps `updated_at`.

        A session over `session_bytes` is not written (StateLimitExceeded): the previous save stays,
        and no file is made that could not be read back."""
        path = self.path(rec.id)
        rec.updated_at = utc_now()
        if not rec.title:
            rec.title = title_of(rec.messages)
        data = rec.to_dict()
        data.update(redact_obj({k: v for k, v in data.items() if k not in _STRUCTURAL}))
        encoded = encode_json(data)
        check_size(len(encoded), SESSION_BYTES, f"session {rec.id}")
        ensure_dir(self.root)
        remove_stale_temps(self.root)
        atomic_write(path, encoded)
        return path

    def load(self, session_id: str) -> SessionRecord:
        path = self.path(session_id)
        data = read_json(
            path,
            "session file",
            missing=f"no session {session_id!r} in {self.root}; `aforo sessions` lists them.",
            corrupt_advice="Move it aside, or resume another session (`aforo sessions` lists them).",
            max_bytes=SESSION_BYTES,
        )
        return _record_from(data, f"session file {path}")

    def remove(self, session_id: str) -> None:
        """Delete the session's file (a session already gone is not an error)."""
        self.path(session_id).unlink(missing_ok=True)

    def _files(self) -> builtins.list[Path]:
        """Session files, most recently written first (mtime follows every atomic save)."""
        if not self.root.is_dir():
            return []
        files = [p for p in self.root.glob("*.json") if not is_temp_name(p.name)]
        stamped = []
        for p in files:
            try:
                stamped.append((p.stat().st_mtime, p.name, p))
            except FileNotFoundError:
                continue
        return [p for _, _, p in sorted(stamped, reverse=True)]

    def _scan(self) -> Iterator[tuple[Path, SessionRecord | StoreError]]:
        """Every session file with its record, or with the error that makes it unreadable."""
        for path in self._files():
            try:
                yield path, self.load(path.stem)
            except StoreError as exc:
                yield path, exc

    def list(self, limit: int | None = None) -> builtins.list[SessionSummary]:
        """Summaries, newest first; a corrupt file appears with its `error` instead of vanishing."""
        out: builtins.list[SessionSummary] = []
        for path, rec in self._scan():
            if isinstance(rec, StoreError):
                out.append(SessionSummary(id=path.stem, path=path, error=str(rec)))
                continue
            out.append(
                SessionSummary(
                    id=rec.id,
                    path=path,
                    workspace=rec.workspace,
                    model=rec.model,
                    title=rec.title,
                    created_at=rec.created_at,
                    updated_at=rec.updated_at,
                    n_messages=len(rec.messages),
                    answered=any(m.role == "assistant" for m in rec.messages),
                )
            )
        out.sort(key=lambda s: (s.error is None, s.updated_at, s.id), reverse=True)
        return out[:limit] if limit is not None else out

    def latest(
        self, workspace: Path, *, exclude: str | None = None
    ) -> tuple[SessionRecord | None, builtins.list[str]]:
        """The most recently saved session of `workspace` (other than `exclude`), or None, and notes.

        An unreadable file is never resumed: it is skipped, and the notes say so (with one path and
        its error), so the user learns why a session they expected was not picked.
        """
        here = str(workspace.resolve())
        newest: SessionRecord | None = None
        unreadable: builtins.list[tuple[Path, StoreError]] = []
        for path, rec in self._scan():
            if isinstance(rec, StoreError):
                unreadable.append((path, rec))
            elif rec.workspace == here and rec.id != exclude:
                # Only the newest is kept: records hold whole conversations.
                newest = rec if newest is None else max(newest, rec, key=lambda r: (r.updated_at, r.id))
        notes = []
        if unreadable:
            path, error = unreadable[0]
            notes.append(f"skipped {len(unreadable)} unreadable session file(s), e.g. {path}: {error}")
        return newest, notes


def _holder(fd: int) -> str:
    """`" (pid N)"` from a lock file its holder wrote its pid into, else ""."""
    with contextlib.suppress(OSError, ValueError):
        pid = int(os.pread(fd, 32, 0).decode().strip())
        return f" (pid {pid})"
    return ""
