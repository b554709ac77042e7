"""Sessions: saved after every turn, loaded back exactly, listed newest first, corrupt files named."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from aforo.errors import StoreError
from aforo.messages import Message, TextBlock, ToolResult, ToolUse
from aforo.store.sessions import SessionRecord, SessionStore


@pytest.fixture
def store(tmp_path: Path) -> SessionStore:
    return SessionStore(tmp_path / "sessions")


def record(store: SessionStore, workspace: Path, text: str = "Explain src/net.py") -> SessionRecord:
    return SessionRecord(
        id=store.new_id(),
        workspace=str(workspace.resolve()),
        model="qwen2.5-coder:0.5b",
        base_url="http://127.0.0.1:8080/v1",
        messages=[Message.user(text)],
        window=4096,
        extra={"max_tokens": 1024},
    )


def test_save_load_round_trip_and_title(store: SessionStore, tmp_path: Path) -> None:
    rec = record(
        store, tmp_path, "Explain the retry policy in src/net.py, please, in plenty of detail thanks\nmore"
    )
    rec.messages += [
        Message("assistant", (TextBlock("Reading."), ToolUse("c1", "Read", {"file_path": "src/net.py"}))),
        Message("user", (ToolResult("c1", "1\tRETRIES = 3"),)),
        Message.assistant("It retries 3 times."),
    ]
    path = store.save(rec)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert (
        rec.title.startswith("Explain the retry policy") and rec.title.endswith("…") and len(rec.title) == 60
    )
    back = store.load(rec.id)
    assert back == rec
    assert rec.updated_at >= rec.created_at


def test_every_turn_overwrites_the_same_file(store: SessionStore, tmp_path: Path) -> None:
    rec = record(store, tmp_path)
    store.save(rec)
    rec.messages.append(Message.assistant("done"))
    store.save(rec)
    assert len(store.load(rec.id).messages) == 2
    assert [p.name for p in store.root.iterdir()] == [f"{rec.id}.json"]


def test_new_ids_sort_by_time_and_are_unique(store: SessionStore) -> None:
    ids = [store.new_id() for _ in range(50)]
    assert len(set(ids)) == 50
    assert ids[0][:15] <= ids[-1][:15]


def test_list_newest_first_and_latest_per_workspace(store: SessionStore, tmp_path: Path) -> None:
    ws_a, ws_b = tmp_path / "a", tmp_path / "b"
    ws_a.mkdir()
    ws_b.mkdir()
    first = record(store, ws_a, "first")
    second = record(store, ws_b, "second")
    third = record(store, ws_a, "third")
    for i, rec in enumerate((first, second, third)):
        store.save(rec)
        # File times decide the scan order; make them distinct without sleeping.
        os.utime(store.path(rec.id), (1_700_000_000 + i, 1_700_000_000 + i))
    listed = store.list()
    assert [s.title for s in listed] == ["third", "second", "first"]
    assert listed[0].n_messages == 1 and listed[0].workspace == str(ws_a.resolve())
    assert [s.title for s in store.list(limit=1)] == ["third"]


def saved_at(store: SessionStore, rec: SessionRecord, updated_at: str) -> None:
    store.save(rec)
    # `save` stamps the time; rewrite it so the order is fixed without sleeping.
    path = store.path(rec.id)
    path.write_text(json.dumps({**json.loads(path.read_text()), "updated_at": updated_at}))


def test_latest_is_the_newest_session_of_the_workspace(store: SessionStore, tmp_path: Path) -> None:
    ws_a, ws_b = tmp_path / "a", tmp_path / "b"
    ws_a.mkdir()
    ws_b.mkdir()
    old_a, new_b, new_a = (
        record(store, ws_a, "old a"),
        record(store, ws_b, "new b"),
        record(store, ws_a, "new a"),
    )
    # Written in an order unlike their save times: the newest save wins, not the newest file.
    saved_at(store, new_a, "2025-01-03T00:00:00+00:00")
    saved_at(store, new_b, "2025-01-04T00:00:00+00:00")
    saved_at(store, old_a, "2025-01-01T00:00:00+00:00")
    assert store.latest(ws_a) == (store.load(new_a.id), [])
    assert store.latest(ws_b)[0] == store.load(new_b.id)
    # The same workspace spelled another way is the same workspace.
    assert store.latest(ws_b / ".." / "a")[0] == store.load(new_a.id)
    assert store.latest(tmp_path / "elsewhere") == (None, [])


def test_latest_can_leave_out_the_open_session(store: SessionStore, tmp_path: Path) -> None:
    only = record(store, tmp_path, "only")
    older = record(store, tmp_path, "older")
    saved_at(store, only, "2025-01-02T00:00:00+00:00")
    assert store.latest(tmp_path, exclude=only.id) == (None, [])
    saved_at(store, older, "2025-01-01T00:00:00+00:00")
    assert store.latest(tmp_path, exclude=only.id)[0] == store.load(older.id)


def test_corrupt_session_file_gives_clear_error_and_is_listed_as_such(
    store: SessionStore, tmp_path: Path
) -> None:
    good = record(store, tmp_path)
    store.save(good)
    bad_id = "20250101-000000-deadbeef"
    store.path(bad_id).write_text('{"kind": "aforo.session", "messages": [')
    with pytest.raises(StoreError, match=r"corrupt .*aforo sessions") as info:
        store.load(bad_id)
    assert str(store.path(bad_id)) in str(info.value)
    listed = {s.id: s for s in store.list()}
    assert listed[bad_id].error and listed[good.id].error is None
    latest, notes = store.latest(tmp_path)
    assert latest is not None and latest.id == good.id  # a corrupt file is never resumed
    assert len(notes) == 1 and "skipped 1 unreadable" in notes[0] and str(store.path(bad_id)) in notes[0]


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ({"kind": "something-else"}, "not an aforo session"),
        ({"kind": "aforo.session", "schema_version": 7}, "Upgrade aforo"),
        ({"kind": "aforo.session", "schema_version": 1, "id": "x"}, "missing field"),
    ],
)
def test_foreign_newer_or_incomplete_session_files(
    store: SessionStore, payload: dict[str, object], message: str
) -> None:
    store.root.mkdir(parents=True)
    store.path("odd").write_text(json.dumps(payload))
    with pytest.raises(StoreError, match=message):
        store.load("odd")


def test_missing_session_says_how_to_find_one(store: SessionStore) -> None:
    with pytest.raises(StoreError, match="aforo sessions"):
        store.load("20250101-000000-00000000")


def test_sessions_are_redacted_on_disk(store: SessionStore, tmp_path: Path) -> None:
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0" * 2
    rec = record(store, tmp_path, f"use GITHUB_TOKEN={token}")
    rec.base_url = "https://user:hunter2hunter2@proxy.example.com/v1"
    rec.extra = {"api_key": "plaintext-but-named-as-a-key"}
    path = store.save(rec)
    raw = path.read_bytes()
    for secret in (token, "hunter2hunter2", "plaintext-but-named-as-a-key"):
        assert secret.encode() not in raw
    back = store.load(rec.id)
    assert back.messages[0].text == "use GITHUB_TOKEN=[REDACTED:github-token]"
    assert back.base_url == "https://user:[REDACTED:url-password]@proxy.example.com/v1"
