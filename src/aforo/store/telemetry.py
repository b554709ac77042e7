"""Telemetry: one SQLite row for every admission, rejection, clearing, compaction, recovery, overflow
and warning, so `aforo stats` can say what the governor did and what it saved; and one row per run (a
prompt to its ending: tokens the server reported, wall time), so it can say what each session cost.

The schema grows by the migrations in `MIGRATIONS` (the scheme of store/migrations.py, shared with
checkpoints and sessions). WAL mode and a busy timeout let two aforo processes write the same database.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import threading
from pathlib import Path
from typing import Any, TextIO

from aforo.closing import Closing
from aforo.errors import StoreError
from aforo.limits import RECORD_CHARS, clipped
from aforo.store.ids import utc_now
from aforo.store.migrations import Migrations, SqlStep, migrate_database
from aforo.store.paths import FILE_MODE, ensure_dir, telemetry_path
from aforo.store.redact import redact
from aforo.store.telemetry_summary import format_summary as format_summary
from aforo.store.telemetry_summary import summarize

GOVERNOR_EVENTS = (
    "admission",
    "rejection",
    "clearing",
    "compaction",
    "recovery",
    "overflow",
    "warning",
    # The first answer on the conversation's lane after a summary on another lane: its model checked.
    "model_restored",
    "model_mismatch",
)
EVENTS = (*GOVERNOR_EVENTS, "run")
INT_FIELDS = (
    "tokens_estimated",
    "tokens_exact",
    "bytes_before",
    "bytes_after",
    "tokens_before",
    "tokens_after",
    "window",
    "summary_tokens",
    "input_tokens",
    "output_tokens",
    "cached_tokens",
)
TEXT_FIELDS = (
    "counter",
    "cause",
    "model",
    "server",
    "window_source",
    "checkpoint",
    "lane",
    "model_served",
    "client",
)
# What a record fills; every other column (id, ts, session, event) the store fills itself.
RECORD_FIELDS = (*INT_FIELDS, "duration_ms", *TEXT_FIELDS)
COLUMNS = ("id", "ts", "session", "event", *RECORD_FIELDS)
# Error texts and URLs can carry credentials, and what a server says is untrusted text: redacted like
# everything else on disk.
REDACTED = ("cause", "server", "model_served", "client")

MIGRATIONS: Migrations[SqlStep] = Migrations("telemetry")


@MIGRATIONS
def m001_events(db: sqlite3.Connection) -> None:
    # The record of SPEC §5: time, session, event, tokens (estimated, exact, counter), bytes, duration,
    # cause, model served.
    db.execute(
        """CREATE TABLE events (
            id INTEGER PRIMARY KEY,
            ts TEXT NOT NULL,
            session TEXT NOT NULL,
            event TEXT NOT NULL,
            tokens_estimated INTEGER,
            tokens_exact INTEGER,
            counter TEXT,
            bytes_before INTEGER,
            bytes_after INTEGER,
            duration_ms REAL,
            cause TEXT,
            model TEXT
        )"""
    )


@MIGRATIONS
def m002_server_window_tokens(db: sqlite3.Connection) -> None:
    # Issue 7 adds where the window came from, token counts around a transformation and its checkpoint.
    for column, sql_type in (
        ("server", "TEXT"),
        ("window", "INTEGER"),
        ("window_source", "TEXT"),
        ("tokens_before", "INTEGER"),
        ("tokens_after", "INTEGER"),
        ("checkpoint", "TEXT"),
    ):
        db.execute(f'ALTER TABLE events ADD COLUMN "{column}" {sql_type}')
    db.execute("CREATE INDEX events_by_session ON events (session, id)")


@MIGRATIONS
def m003_summary_tokens(db: sqlite3.Connection) -> None:
    # Issue 16: the size of the summary a compaction wrote, which the journal used to drop.
    db.execute('ALTER TABLE events ADD COLUMN "summary_tokens" INTEGER')


@MIGRATIONS
def m004_run_usage(db: sqlite3.Connection) -> None:
    # Issue 14: what a run cost, as the server reported it. `input_tokens` counts every prompt token the
    # server read (cached ones too), `cached_tokens` those it took from its prompt cache.
    for column in ("input_tokens", "output_tokens", "cached_tokens"):
        db.execute(f'ALTER TABLE events ADD COLUMN "{column}" INTEGER')


@MIGRATIONS
def m005_lane_model_served(db: sqlite3.Connection) -> None:
    # Issue 17: which lane a record is about and the model its server said it served (SPEC §9); the
    # `model` column keeps the configured name, which a server may serve under another.
    db.execute('ALTER TABLE events ADD COLUMN "lane" TEXT')
    db.execute('ALTER TABLE events ADD COLUMN "model_served" TEXT')


@MIGRATIONS
def m006_client(db: sqlite3.Connection) -> None:
    # Issue 30: the client a request `aforo serve` passed on came from, beside the model it asked for.
    db.execute('ALTER TABLE events ADD COLUMN "client" TEXT')


def migrate(db: sqlite3.Connection, upto: int | None = None) -> list[str]:
    """Apply the pending migrations (the first `upto` of them when given); return their names."""
    return migrate_database(db, MIGRATIONS, upto)


def connect(path: Path) -> sqlite3.Connection:
    """An autocommit connection in WAL mode; the file is created 0600 (its -wal/-shm follow it)."""
    ensure_dir(path.parent)
    if not path.exists():
        with contextlib.suppress(FileExistsError):
            os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, FILE_MODE))
    db = sqlite3.connect(path, timeout=10.0, isolation_level=None, check_same_thread=False)
    # Text that is not UTF-8 (written by another program) reads escaped instead of failing the query.
    db.text_factory = lambda raw: raw.decode("utf-8", "backslashreplace")
    try:
        db.execute("PRAGMA journal_mode=WAL")
        # NORMAL is durable across process crashes in WAL mode; only a power loss may drop the last rows.
        db.execute("PRAGMA synchronous=NORMAL")
    except BaseException:
        db.close()
        raise
    return db


class Telemetry(Closing):
    """One connection per object, shared by the threads of one process under a lock."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or telemetry_path()
        self._lock = threading.Lock()
        try:
            self._db = connect(self.path)
            try:
                migrate(self._db)
                self._check_shape()
            except BaseException:
                self._db.close()
                raise
        except sqlite3.Error as exc:
            raise StoreError(
                f"cannot open the telemetry database {self.path}: {exc}. Move the file aside to start afresh."
            ) from exc

    def _check_shape(self) -> None:
        """The events table has every column aforo writes: a table replaced by hand or by another
        program is named here, once, instead of failing every query later."""
        have = {row[1] for row in self._db.execute('PRAGMA table_info("events")')}
        missing = [c for c in COLUMNS if c not in have]
        if missing:
            what = "has no events table" if not have else f"has an events table without {', '.join(missing)}"
            raise StoreError(
                f"the telemetry database {self.path} {what}: it was changed outside aforo. "
                "Move the file aside to start afresh."
            )

    def close(self) -> None:
        self._db.close()

    def record(self, event: str, *, session: str, **columns: object) -> None:
        """Write one row: `columns` is the flattened record, each value under its column's name. A name
        with no column (misspelt, or a field added without its migration) is a TypeError, never dropped."""
        if event not in EVENTS:
            raise ValueError(f"unknown telemetry event {event!r}; expected one of {', '.join(EVENTS)}")
        unknown = sorted(set(columns) - set(RECORD_FIELDS))
        if unknown:
            raise TypeError(f"the telemetry store has no column for {', '.join(unknown)}")
        row: dict[str, Any] = {"ts": utc_now(), "session": session, "event": event, **columns}
        for name in REDACTED:
            if row.get(name):
                row[name] = redact(str(row[name]))
        # A text comes from a client or a server as often as from aforo: a row holds `record_chars` of
        # it, so that a request naming a 1 MB model does not write 1 MB (cut after redaction, which a cut
        # secret would pass).
        for name in TEXT_FIELDS:
            if isinstance(row.get(name), str):
                row[name] = clipped(row[name], int(RECORD_CHARS.value))
        if row.get("checkpoint") is not None:
            row["checkpoint"] = str(row["checkpoint"])
        # A path or a name with a byte that is not UTF-8 holds a lone surrogate, which SQLite's UTF-8
        # cannot take: stored as its escape (`\\udcfe`).
        row = {k: _encodable(v) for k, v in row.items()}
        names = ", ".join(f'"{k}"' for k in row)
        marks = ", ".join("?" for _ in row)
        try:
            with self._lock:
                self._db.execute(f"INSERT INTO events ({names}) VALUES ({marks})", tuple(row.values()))
        except sqlite3.Error as exc:
            raise StoreError(f"cannot write telemetry to {self.path}: {exc}") from exc

    def rows(self, session: str | None = None) -> list[dict[str, Any]]:
        """Every record (of one session), oldest first; a value of the wrong type reads as NULL."""
        where, params = ("WHERE session = ?", (_encodable(session),)) if session else ("", ())
        cols = ", ".join(f'"{c}"' for c in COLUMNS)
        try:
            with self._lock:
                cur = self._db.execute(f"SELECT {cols} FROM events {where} ORDER BY id", params)
                return [_typed(dict(zip(COLUMNS, r, strict=True))) for r in cur.fetchall()]
        except sqlite3.Error as exc:
            raise StoreError(
                f"cannot read the telemetry database {self.path}: {exc}. Move the file aside to start afresh."
            ) from exc

    def export_jsonl(self, out: TextIO, session: str | None = None) -> int:
        """Write every record (of one session) as a JSON line; return how many."""
        rows = self.rows(session)
        for row in rows:
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
        return len(rows)

    def summary(self, session: str | None = None) -> dict[str, Any]:
        return summarize(self.rows(session), GOVERNOR_EVENTS)


def _encodable(value: Any) -> Any:
    if isinstance(value, str):
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    return value


_NUMBERS = frozenset(INT_FIELDS) | {"duration_ms"}


def _typed(row: dict[str, Any]) -> dict[str, Any]:
    """A row as the summary expects it. SQLite keeps whatever was written, and a file edited by hand
    may hold text where a count belongs: such a value is dropped (None), not a crash of `aforo stats`."""
    for key, value in row.items():
        if key in _NUMBERS:
            ok = isinstance(value, int | float) and not isinstance(value, bool)
        elif key == "id":
            ok = isinstance(value, int)
        else:
            ok = isinstance(value, str)
        if not ok:
            row[key] = None
    for key, default in (("ts", ""), ("session", ""), ("event", "unknown")):
        if row[key] is None:
            row[key] = default
    return row
