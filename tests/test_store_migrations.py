"""One migration scheme for checkpoints, sessions and telemetry; files and databases in the format
aforo wrote before it (schema 1, telemetry m001+m002) still load."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from aforo.errors import StoreError
from aforo.messages import Message, ToolResult, ToolUse
from aforo.store import checkpoints, sessions
from aforo.store import telemetry as telemetry_module
from aforo.store.checkpoints import encode_checkpoint, load_checkpoint
from aforo.store.migrations import DocumentStep, Migrations, SqlStep, migrate_database, upgrade_document
from aforo.store.sessions import SessionStore
from aforo.store.telemetry import Telemetry

# The messages of the files below, as the files spell them.
WIRE_MESSAGES = [
    {"role": "user", "content": [{"type": "text", "text": "Find the retry policy."}]},
    {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "c1", "name": "Read", "input": {"file_path": "net.py"}}],
    },
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c1", "content": "RETRIES = 3"}]},
]
MESSAGES = [
    Message.user("Find the retry policy."),
    Message("assistant", (ToolUse("c1", "Read", {"file_path": "net.py"}),)),
    Message("user", (ToolResult("c1", "RETRIES = 3"),)),
]

# Written out by hand, field by field, as aforo wrote them before the shared scheme: a change to the
# writers cannot silently change what these tests load.
CHECKPOINT_V1: dict[str, Any] = {
    "kind": "aforo.checkpoint",
    "schema_version": 1,
    "id": "cp1",
    "session_id": "s1",
    "created_at": "2025-01-01T00:00:00.000000+00:00",
    "reason": "compact",
    "model": "qwen",
    "server": "llama-server",
    "window": 4096,
    "window_source": "props",
    "tokens_before": 3120,
    "counter": "llama-server/tokenize",
    "goal": "Find the retry policy.",
    "constraints": {"hard": [], "soft": []},
    "decisions": [{"decision": "read net.py", "why": "it names retries"}],
    "evidence": [{"source": "Read net.py", "detail": "c1"}],
    "next_action": "answer",
    "messages": WIRE_MESSAGES,
}
SESSION_V1: dict[str, Any] = {
    "kind": "aforo.session",
    "schema_version": 1,
    "id": "20250101-000000-0000abcd",
    "workspace": "/w",
    "model": "qwen",
    "base_url": "http://127.0.0.1:8080/v1",
    "created_at": "2025-01-01T00:00:00.000000+00:00",
    "updated_at": "2025-01-01T00:01:00.000000+00:00",
    "title": "Find the retry policy.",
    "window": 4096,
    "extra": {"max_tokens": 1024},
    "messages": WIRE_MESSAGES,
}


def tag_goal(data: dict[str, Any]) -> dict[str, Any]:
    data["goal"] = "[2] " + data["goal"]
    return data


def tag_goal_again(data: dict[str, Any]) -> dict[str, Any]:
    data["goal"] = "[3] " + data["goal"]
    return data


def test_a_document_gets_only_the_migrations_it_lacks_in_order() -> None:
    steps: Migrations[DocumentStep] = Migrations("checkpoint", [tag_goal, tag_goal_again])
    assert steps.version == 3
    from_v1 = upgrade_document({"kind": "k", "schema_version": 1, "goal": "g"}, "k", steps, "f")
    assert from_v1 == {"kind": "k", "schema_version": 3, "goal": "[3] [2] g"}
    assert (
        upgrade_document({"kind": "k", "schema_version": 2, "goal": "g"}, "k", steps, "f")["goal"] == "[3] g"
    )
    assert upgrade_document({"kind": "k", "schema_version": 3, "goal": "g"}, "k", steps, "f")["goal"] == "g"


@pytest.mark.parametrize(
    ("version", "message"),
    [
        (4, r"f was written by a newer aforo \(checkpoint schema 4; this aforo reads up to 3\)\. Upgrade"),
        (0, "invalid schema_version 0"),
        ("2", "invalid schema_version '2'"),
        (True, "invalid schema_version True"),
        (None, "invalid schema_version None"),
    ],
)
def test_a_newer_or_invalid_document_is_refused(version: object, message: str) -> None:
    steps: Migrations[DocumentStep] = Migrations("checkpoint", [tag_goal, tag_goal_again])
    with pytest.raises(StoreError, match=message):
        upgrade_document({"kind": "k", "schema_version": version, "goal": "g"}, "k", steps, "f")


def test_a_name_is_registered_once() -> None:
    steps: Migrations[DocumentStep] = Migrations("session", [tag_goal])
    with pytest.raises(ValueError, match="tag_goal"):
        steps(tag_goal)


def test_todays_checkpoint_file_loads(tmp_path: Path) -> None:
    path = tmp_path / "20250101T000000000000Z-cp1.json"
    path.write_text(json.dumps(CHECKPOINT_V1))
    cp = load_checkpoint(path)
    assert (cp.id, cp.session_id, cp.goal, cp.window, cp.messages) == (
        "cp1",
        "s1",
        "Find the retry policy.",
        4096,
        MESSAGES,
    )
    assert cp.decisions == [{"decision": "read net.py", "why": "it names retries"}]


def test_a_checkpoint_migration_runs_on_load_and_the_file_is_rewritten_newest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "20250101T000000000000Z-cp1.json"
    path.write_text(json.dumps(CHECKPOINT_V1))
    shipped = checkpoints.MIGRATIONS.steps
    monkeypatch.setattr(checkpoints, "MIGRATIONS", Migrations("checkpoint", [*shipped, tag_goal]))
    cp = load_checkpoint(path)
    assert cp.goal == "[2] Find the retry policy."
    assert json.loads(encode_checkpoint(cp))["schema_version"] == len(shipped) + 2


def test_todays_session_file_loads_and_a_newer_one_says_upgrade(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    store.path(SESSION_V1["id"]).write_text(json.dumps(SESSION_V1))
    rec = store.load(SESSION_V1["id"])
    assert (rec.workspace, rec.title, rec.extra, rec.messages) == (
        "/w",
        "Find the retry policy.",
        {"max_tokens": 1024},
        MESSAGES,
    )
    assert rec.trail == {}  # m001: a session saved before the trail has none
    newer = {**SESSION_V1, "id": "20250101-000000-0000ffff", "schema_version": 3}
    store.path(newer["id"]).write_text(json.dumps(newer))
    with pytest.raises(StoreError, match=r"newer aforo \(session schema 3; .*Upgrade aforo"):
        store.load(newer["id"])


def test_a_session_migration_runs_on_load(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def rename_title(data: dict[str, Any]) -> dict[str, Any]:
        data["title"] = data["title"].upper()
        return data

    store = SessionStore(tmp_path)
    store.path(SESSION_V1["id"]).write_text(json.dumps(SESSION_V1))
    shipped = sessions.MIGRATIONS.steps
    monkeypatch.setattr(sessions, "MIGRATIONS", Migrations("session", [*shipped, rename_title]))
    assert store.load(SESSION_V1["id"]).title == "FIND THE RETRY POLICY."
    saved = json.loads(store.save(store.load(SESSION_V1["id"])).read_text())
    assert saved["schema_version"] == len(shipped) + 2


def todays_telemetry_db(path: Path) -> None:
    """A database as aforo left it before m003: the events table of m001+m002 and its record."""
    db = sqlite3.connect(path)
    db.executescript(
        """
        CREATE TABLE _migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL);
        CREATE TABLE events (
            id INTEGER PRIMARY KEY, ts TEXT NOT NULL, session TEXT NOT NULL, event TEXT NOT NULL,
            tokens_estimated INTEGER, tokens_exact INTEGER, counter TEXT, bytes_before INTEGER,
            bytes_after INTEGER, duration_ms REAL, cause TEXT, model TEXT, server TEXT, window INTEGER,
            window_source TEXT, tokens_before INTEGER, tokens_after INTEGER, checkpoint TEXT
        );
        CREATE INDEX events_by_session ON events (session, id);
        INSERT INTO _migrations VALUES ('m001_events', '2025-01-01T00:00:00+00:00');
        INSERT INTO _migrations VALUES ('m002_server_window_tokens', '2025-01-01T00:00:00+00:00');
        INSERT INTO events (ts, session, event, tokens_before, tokens_after, window)
            VALUES ('2025-01-01T00:00:00+00:00', 'old', 'compaction', 3000, 800, 4096);
        """
    )
    db.commit()
    db.close()


def test_todays_telemetry_database_gains_summary_tokens_and_keeps_its_rows(tmp_path: Path) -> None:
    path = tmp_path / "telemetry.db"
    todays_telemetry_db(path)
    with Telemetry(path) as t:
        t.record("compaction", session="new", tokens_before=5000, tokens_after=900, summary_tokens=612)
        rows = t.rows()
    assert [(r["session"], r["tokens_after"], r["summary_tokens"]) for r in rows] == [
        ("old", 800, None),
        ("new", 900, 612),
    ]
    applied = {r[0] for r in sqlite3.connect(path).execute("SELECT name FROM _migrations")}
    assert applied == set(telemetry_module.MIGRATIONS.names)  # every later migration too


def test_a_database_migrated_by_a_newer_aforo_says_upgrade_and_is_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "telemetry.db"
    todays_telemetry_db(path)
    db = sqlite3.connect(path)
    db.execute("INSERT INTO _migrations VALUES ('m999_from_the_future', '2030-01-01T00:00:00+00:00')")
    db.commit()
    db.close()
    with pytest.raises(StoreError, match=rf"{path} was written by a newer aforo .*m999.*Upgrade aforo"):
        Telemetry(path)
    columns = {r[1] for r in sqlite3.connect(path).execute("PRAGMA table_info(events)")}
    assert "summary_tokens" not in columns  # nothing migrated under the newer aforo's feet


def test_database_migrations_apply_once_each(tmp_path: Path) -> None:
    calls: list[str] = []

    def m1(db: sqlite3.Connection) -> None:
        calls.append("m1")
        db.execute("CREATE TABLE t (a INTEGER)")

    def m2(db: sqlite3.Connection) -> None:
        calls.append("m2")
        db.execute("ALTER TABLE t ADD COLUMN b TEXT")

    steps: Migrations[SqlStep] = Migrations("test", [m1, m2])
    db = sqlite3.connect(tmp_path / "x.db", isolation_level=None)
    assert migrate_database(db, steps, upto=1) == ["m1"]
    assert migrate_database(db, steps) == ["m2"]
    assert migrate_database(db, steps) == []
    assert calls == ["m1", "m2"]
    db.execute("INSERT INTO t (a, b) VALUES (1, 'x')")


def test_a_failing_database_migration_leaves_nothing_half_done(tmp_path: Path) -> None:
    def m1(db: sqlite3.Connection) -> None:
        db.execute("CREATE TABLE t (a INTEGER)")

    def m2(db: sqlite3.Connection) -> None:
        db.execute("ALTER TABLE nowhere ADD COLUMN b TEXT")

    db = sqlite3.connect(tmp_path / "x.db", isolation_level=None)
    with pytest.raises(sqlite3.OperationalError):
        migrate_database(db, Migrations("test", [m1, m2]))
    assert db.execute("SELECT name FROM sqlite_master WHERE name = 't'").fetchone() is None
    assert db.execute("SELECT count(*) FROM _migrations").fetchone() == (0,)
