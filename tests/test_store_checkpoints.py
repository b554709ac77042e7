"""Checkpoints: exact round trip, redaction on disk, permissions, quotas and refusal of bad files."""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path
from typing import Any

import pytest

from aforo.errors import QuotaExceeded, StoreError
from aforo.messages import Message, TextBlock, ToolResult, ToolUse
from aforo.store.checkpoints import Checkpoint, CheckpointStore, encode_checkpoint
from aforo.store.journal import StoreJournal

FAKE_KEY = "sk-proj-" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z" * 2


def conversation() -> list[Message]:
    return [
        Message.user("Find where the retry policy lives. Do not touch tests/."),
        Message(
            "assistant",
            (TextBlock("Searching."), ToolUse("call_1", "Grep", {"pattern": "retry", "path": "src"})),
        ),
        Message("user", (ToolResult("call_1", "src/net.py:12: RETRIES = 3\nsrc/net.py:40: def retry(fn):"),)),
        Message("assistant", (ToolUse("call_2", "Read", {"file_path": "missing.py"}),)),
        Message(
            "user", (ToolResult("call_2", "no such file", is_error=True), ToolResult("x", "", cleared=True))
        ),
        Message.assistant("The policy is in src/net.py lines 12-40. Ünïcödé and emoji 🚀 survive too."),
    ]


def make(session: str = "s1", *, messages: list[Message] | None = None, **kw: Any) -> Checkpoint:
    fields: dict[str, Any] = {
        "reason": "compact",
        "goal": "Find the retry policy",
        "constraints": {"hard": ["Do not touch tests/."], "soft": ["Prefer short answers"]},
        "decisions": [{"decision": "Search src/ only", "why": "tests/ is off limits"}],
        "evidence": [{"source": "src/net.py:12-40 (Grep call_1)", "detail": "RETRIES = 3; def retry(fn)"}],
        "next_action": "Explain the retry policy",
        "model": "qwen2.5-coder:0.5b",
        "server": "llama-server",
        "window": 4096,
        "window_source": "props",
        "tokens_before": 3120,
        "counter": "llama-server/tokenize",
    }
    fields.update(kw)
    return Checkpoint(session_id=session, messages=conversation() if messages is None else messages, **fields)


def newest(store: CheckpointStore, session_id: str) -> Checkpoint | None:
    """The newest checkpoint of a session, read the way the journal reads them: listed, then loaded."""
    entries = store.list(session_id)
    return store.load(entries[0].path) if entries else None


@pytest.fixture
def store(tmp_path: Path) -> CheckpointStore:
    return CheckpointStore(tmp_path / "checkpoints")


def test_round_trip_is_exact(store: CheckpointStore) -> None:
    cp = make()
    path = store.write(cp)
    assert store.load(path) == cp
    assert newest(store, "s1") == cp


def test_files_are_0600_in_0700_dirs(store: CheckpointStore) -> None:
    old = os.umask(0o022)
    try:
        path = store.write(make())
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(store.root.stat().st_mode) == 0o700
    assert path.parent == store.root / "s1"
    assert re.fullmatch(r"\d{8}T\d{12}Z-[\w.-]+\.json", path.name)


def test_secrets_never_reach_disk(store: CheckpointStore) -> None:
    leaky = [
        Message.user(f"my key is {FAKE_KEY}"),
        Message("assistant", (ToolUse("c1", "Read", {"file_path": ".env"}),)),
        Message("user", (ToolResult("c1", "DB_PASSWORD=Tr0ub4dor&3\nDEBUG=1\n"),)),
    ]
    cp = make(messages=leaky, server="http://admin:s3cr3tpass@10.0.0.5:8080")
    cp.goal = f"use {FAKE_KEY} to call the API"
    path = store.write(cp)
    raw = path.read_bytes()
    for secret in (FAKE_KEY.encode(), b"Tr0ub4dor&3", b"s3cr3tpass"):
        assert secret not in raw
    assert b"[REDACTED:openai-key]" in raw and b"DEBUG=1" in raw and b"admin:" in raw
    back = store.load(path)
    assert back.messages[0].text == "my key is [REDACTED:openai-key]"
    assert back.messages[1] == leaky[1]  # the call itself is intact


def test_listed_newest_first(store: CheckpointStore) -> None:
    a = store.write(make(created_at="2025-01-01T10:00:00+00:00", id="a"))
    b = store.write(make(created_at="2025-01-01T11:00:00+00:00", id="b"))
    c = store.write(make("s2", created_at="2025-01-01T10:30:00+00:00", id="c"))
    assert [e.path for e in store.list("s1")] == [b, a]
    assert [e.id for e in store.list()] == ["b", "c", "a"]
    latest = newest(store, "s1")
    assert latest is not None and latest.id == "b"
    assert newest(store, "nobody") is None
    assert c.exists()


def test_session_quota_evicts_oldest_of_that_session(tmp_path: Path) -> None:
    size = len(encode_checkpoint(make(id="x0", created_at="2025-01-01T00:00:00+00:00")))
    store = CheckpointStore(tmp_path, session_quota_bytes=int(size * 2.5), total_quota_bytes=size * 100)
    other = store.write(make("other", id="o", created_at="2024-12-31T00:00:00+00:00"))
    written = [store.write(make(id=f"x{i}", created_at=f"2025-01-01T0{i}:00:00+00:00")) for i in range(4)]
    assert [e.id for e in store.list("s1")] == ["x3", "x2"]
    assert not written[0].exists() and not written[1].exists()
    assert other.exists()  # another session's checkpoints do not pay for this one


def test_total_quota_evicts_oldest_overall(tmp_path: Path) -> None:
    size = len(encode_checkpoint(make(id="x0", created_at="2025-01-01T00:00:00+00:00")))
    store = CheckpointStore(tmp_path, session_quota_bytes=size * 10, total_quota_bytes=int(size * 3.5))
    store.write(make("a", id="a1", created_at="2025-01-01T01:00:00+00:00"))
    store.write(make("b", id="b1", created_at="2025-01-01T02:00:00+00:00"))
    store.write(make("a", id="a2", created_at="2025-01-01T03:00:00+00:00"))
    store.write(make("c", id="c1", created_at="2025-01-01T04:00:00+00:00"))
    assert sorted(e.id for e in store.list()) == ["a2", "b1", "c1"]
    assert sum(e.size_bytes for e in store.list()) <= store.total_quota_bytes


@pytest.mark.parametrize("scope", ["session", "total"])
def test_a_checkpoint_bigger_than_the_quota_writes_nothing(tmp_path: Path, scope: str) -> None:
    small = make(messages=[Message.user("hi")], id="small")
    quota = len(encode_checkpoint(small)) + 100
    kwargs = {"session_quota_bytes": quota} if scope == "session" else {"total_quota_bytes": quota}
    store = CheckpointStore(tmp_path, **kwargs)
    kept = store.write(small)
    big = make(messages=[Message.user("x" * 5000)], id="big")
    with pytest.raises(
        QuotaExceeded,
        match=r"quota of \d+ bytes; nothing was written. Raise the quota \(config key `checkpoint_",
    ):
        store.write(big)
    assert [e.path for e in store.list()] == [kept]
    assert kept.exists()


def write_raw(store: CheckpointStore, data: bytes, name: str = "20250101T000000000000Z-bad.json") -> Path:
    path = store.root / "s1" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def good_dict() -> dict[str, Any]:
    return json.loads(encode_checkpoint(make()))


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        (b'{"kind": "aforo.checkpoint", "schema_version": 1, "id": "tru', "not valid JSON"),
        (b"\xff\xfe garbage", "not valid JSON"),
        (b"", "not valid JSON"),
        (b'{"name": "some other tool", "version": 3}', "not an aforo checkpoint"),
        (b"[1, 2, 3]", "not an aforo checkpoint"),
        (json.dumps({**good_dict(), "schema_version": 99}).encode(), "newer aforo"),
        (json.dumps({**good_dict(), "schema_version": "1"}).encode(), "invalid schema_version"),
        (json.dumps({k: v for k, v in good_dict().items() if k != "goal"}).encode(), "missing field 'goal'"),
        (json.dumps({**good_dict(), "window": "4096"}).encode(), "field 'window' must be int"),
        (json.dumps({**good_dict(), "decisions": [{"decision": "x"}]}).encode(), r"decisions\[0\]"),
        (json.dumps({**good_dict(), "messages": [{"role": "system", "content": []}]}).encode(), "role"),
    ],
)
def test_bad_files_are_refused_with_path_and_reason(
    store: CheckpointStore, payload: bytes, message: str
) -> None:
    path = write_raw(store, payload)
    with pytest.raises(StoreError, match=message) as info:
        store.load(path)
    assert str(path) in str(info.value)


def test_a_corrupt_newest_checkpoint_is_never_silently_skipped(store: CheckpointStore) -> None:
    store.write(make(created_at="2024-01-01T00:00:00+00:00"))
    write_raw(store, b'{"kind": "aforo.check', name="20990101T000000000000Z-torn.json")
    history = StoreJournal(lambda: "s1", store, None, lambda _event: None).checkpoint_history()
    with pytest.raises(StoreError, match="torn"):
        next(history)  # what /undo and /dropped read first


def test_foreign_and_temp_files_are_not_listed(store: CheckpointStore) -> None:
    path = store.write(make())
    (path.parent / "notes.txt").write_text("mine")
    (path.parent / f".{path.name}.x1y2.tmp").write_text('{"kind": "aforo.checkpoint"')
    assert [e.path for e in store.list()] == [path]


def test_invalid_ids_are_refused(store: CheckpointStore) -> None:
    with pytest.raises(StoreError, match="invalid session id"):
        store.write(make("../escape"))
    assert not (store.root.parent / "escape").exists()
