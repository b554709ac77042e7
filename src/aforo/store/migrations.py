"""One way to upgrade what aforo stores (simonw/llm `migrations.py`): an ordered list of named
migration functions, each applied once and recorded as applied. Never edit, rename or reorder one that
shipped: append a new one.

Where the record lives depends on the store. A SQLite database (telemetry) keeps the names applied in
its `_migrations` table. A JSON document (a checkpoint, a session) is always written in the newest
shape, so its applied migrations are a prefix of the list and it records how long that prefix is:
`schema_version` is 1 for the first shape plus one per migration applied. A record naming more than
this aforo knows was written by a newer aforo: a StoreError that says to upgrade, never a guess.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable
from typing import Any, Generic, TypeVar

from aforo.errors import StoreError
from aforo.store.ids import utc_now

Document = dict[str, Any]
DocumentStep = Callable[[Document], Document]
SqlStep = Callable[[sqlite3.Connection], None]
Step = TypeVar("Step", DocumentStep, SqlStep)

APPLIED_TABLE = "_migrations"


class Migrations(Generic[Step]):
    """The migrations of one store, in order; `@migrations` appends a function to them."""

    def __init__(self, what: str, steps: Iterable[Step] = ()) -> None:
        self.what = what  # names the store in messages: "checkpoint", "session", "telemetry"
        self.steps: list[Step] = list(steps)

    def __call__(self, fn: Step) -> Step:
        if fn.__name__ in self.names:
            raise ValueError(f"{self.what} migration {fn.__name__!r} is already registered")
        self.steps.append(fn)
        return fn

    @property
    def names(self) -> list[str]:
        return [fn.__name__ for fn in self.steps]

    @property
    def version(self) -> int:
        """The `schema_version` a document written now carries."""
        return len(self.steps) + 1


def _newer(where: str, detail: str) -> StoreError:
    return StoreError(f"{where} was written by a newer aforo ({detail}). Upgrade aforo to use it.")


def document_header(kind: str, migrations: Migrations[DocumentStep]) -> Document:
    """What a JSON document is, and how far its migrations got: the first fields of every one written."""
    return {"kind": kind, "schema_version": migrations.version}


def upgrade_document(data: Any, kind: str, migrations: Migrations[DocumentStep], where: str) -> Document:
    """`data` brought to the newest shape by the migrations it has not had, or StoreError saying why not."""
    if not isinstance(data, dict) or data.get("kind") != kind:
        what = migrations.what
        raise StoreError(f'{where} is not an aforo {what} (no "kind": {kind!r}); it will not be used.')
    version = data.get("schema_version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise StoreError(f"{where} has an invalid schema_version {version!r}; it will not be used.")
    if version > migrations.version:
        what = migrations.what
        raise _newer(where, f"{what} schema {version}; this aforo reads up to {migrations.version}")
    for step in migrations.steps[version - 1 :]:
        data = step(dict(data))
    return {**data, "schema_version": migrations.version}


def migrate_database(
    db: sqlite3.Connection, migrations: Migrations[SqlStep], upto: int | None = None
) -> list[str]:
    """Apply the pending migrations (only the first `upto` when given); return the names applied now.

    The write lock is taken first (`BEGIN IMMEDIATE`), so two processes opening an old database never
    migrate it twice.
    """
    db.execute(
        f"CREATE TABLE IF NOT EXISTS {APPLIED_TABLE} (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)"
    )
    applied_now: list[str] = []
    db.execute("BEGIN IMMEDIATE")
    try:
        done = {row[0] for row in db.execute(f"SELECT name FROM {APPLIED_TABLE}")}
        unknown = sorted(done - set(migrations.names))
        if unknown:
            where = f"the {migrations.what} database {db.execute('PRAGMA database_list').fetchone()[2]}"
            raise _newer(where, f"{migrations.what} migrations unknown here: {', '.join(unknown)}")
        for fn in migrations.steps[:upto]:
            if fn.__name__ in done:
                continue
            fn(db)
            db.execute(
                f"INSERT INTO {APPLIED_TABLE} (name, applied_at) VALUES (?, ?)", (fn.__name__, utc_now())
            )
            applied_now.append(fn.__name__)
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    return applied_now
