"""Checkpoints: the state saved before every clearing or compaction, so it can be checked and undone.

A checkpoint is a structured artifact (goal, constraints, decisions with their why, evidence with its
source, next action) plus the full message history `/undo` restores. On disk it is redacted, written
atomically as a 0600 file under `root/<session>/<timestamp>-<id>.json`, and kept under two quotas
(per session, total) by evicting the oldest checkpoints. Loading never returns a half-parsed object:
a corrupt, foreign or newer-schema file is a `StoreError` naming the file and what is wrong with it.
"""

from __future__ import annotations

import builtins
import contextlib
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from aforo.errors import QuotaExceeded, StoreError
from aforo.limits import CHECKPOINT_BYTES
from aforo.messages import Message, messages_from_list, messages_to_list
from aforo.store.atomic import atomic_write, check_size, encode_json, read_json, remove_stale_temps
from aforo.store.ids import check_id, new_id, utc_now
from aforo.store.migrations import DocumentStep, Migrations, document_header, upgrade_document
from aforo.store.paths import ensure_dir
from aforo.store.redact import redact_obj

KIND = "aforo.checkpoint"
# Each takes a checkpoint dict one shape further (see store/migrations.py).
MIGRATIONS: Migrations[DocumentStep] = Migrations("checkpoint")


@MIGRATIONS
def m001_lane_model_served(data: dict[str, Any]) -> dict[str, Any]:
    # Issue 17: the conversation's lane and the model its server said it served; unknown before.
    return {"lane": "", "model_served": "", **data}


MiB = 1024 * 1024
# Fields that describe the record rather than the conversation: never secrets, kept verbatim so the
# file stays addressable even when redaction is aggressive.
_STRUCTURAL = frozenset(
    {"kind", "schema_version", "id", "session_id", "created_at", "reason", "window", "window_source"}
    | {"tokens_before", "counter", "lane"}
)
# The fields that are one string or number, in the file's order: written and checked from this one list.
_SCALARS: tuple[tuple[str, type], ...] = (
    *((name, str) for name in ("id", "session_id", "created_at", "reason", "model", "server")),
    ("window", int),
    ("window_source", str),
    ("tokens_before", int),
    *((name, str) for name in ("counter", "lane", "model_served", "goal", "next_action")),
)
_NAME = re.compile(r"(\d{8}T\d{12}Z)-([A-Za-z0-9][A-Za-z0-9._-]*)\.json")


@dataclass(kw_only=True)
class Checkpoint:
    session_id: str
    reason: str  # "clear" | "compact" | "manual_clear" | "manual_compact" | …
    messages: list[Message] = field(default_factory=list)
    goal: str = ""
    constraints: dict[str, list[str]] = field(default_factory=lambda: {"hard": [], "soft": []})
    decisions: list[dict[str, str]] = field(default_factory=list)  # {"decision", "why"}
    evidence: list[dict[str, str]] = field(default_factory=list)  # {"source", "detail"}
    next_action: str = ""
    model: str = ""
    server: str = ""
    window: int = 0
    window_source: str = ""
    tokens_before: int = 0
    counter: str = ""
    lane: str = ""
    model_served: str = ""
    id: str = field(default_factory=new_id)
    created_at: str = field(default_factory=utc_now)

    def to_dict(self) -> dict[str, Any]:
        return {
            **document_header(KIND, MIGRATIONS),
            **{name: getattr(self, name) for name, _ in _SCALARS},
            "constraints": {
                "hard": list(self.constraints.get("hard", [])),
                "soft": list(self.constraints.get("soft", [])),
            },
            "decisions": [dict(d) for d in self.decisions],
            "evidence": [dict(e) for e in self.evidence],
            "messages": messages_to_list(self.messages),
        }

    @staticmethod
    def from_dict(data: dict[str, Any]) -> Checkpoint:
        """Build from a current-schema dict; ValueError says which field is missing or wrong."""
        constraints = _get(data, "constraints", dict)
        return Checkpoint(
            **{name: _get(data, name, kind) for name, kind in _SCALARS},
            constraints={k: _str_list(constraints, k, "constraints") for k in ("hard", "soft")},
            decisions=_records(data, "decisions", ("decision", "why")),
            evidence=_records(data, "evidence", ("source", "detail")),
            messages=messages_from_list(_get(data, "messages", list)),
        )


def _get(data: dict[str, Any], name: str, kind: type) -> Any:
    if name not in data:
        raise ValueError(f"missing field {name!r}")
    value = data[name]
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise ValueError(f"field {name!r} must be {kind.__name__}, got {type(value).__name__}")
    return value


def _str_list(data: dict[str, Any], name: str, where: str) -> list[str]:
    value = _get(data, name, list)
    if not all(isinstance(v, str) for v in value):
        raise ValueError(f"{where}.{name} must be a list of strings")
    return list(value)


def _records(data: dict[str, Any], name: str, keys: tuple[str, str]) -> list[dict[str, str]]:
    out = []
    for i, item in enumerate(_get(data, name, list)):
        if not isinstance(item, dict) or not all(isinstance(item.get(k), str) for k in keys):
            raise ValueError(f"{name}[{i}] must be an object with string fields {' and '.join(keys)}")
        out.append({k: str(v) for k, v in item.items()})
    return out


def encode_checkpoint(cp: Checkpoint) -> bytes:
    """The on-disk bytes of a checkpoint: every conversational field redacted."""
    data = cp.to_dict()
    data.update(redact_obj({k: v for k, v in data.items() if k not in _STRUCTURAL}))
    return encode_json(data, indent=1)


def load_checkpoint(path: Path) -> Checkpoint:
    """Read, check, migrate and build a checkpoint, or raise StoreError saying why not."""
    data = read_json(
        path,
        "checkpoint",
        missing=f"checkpoint {path} does not exist",
        corrupt_advice="Move it aside to continue.",
        max_bytes=CHECKPOINT_BYTES,
    )
    data = upgrade_document(data, KIND, MIGRATIONS, f"checkpoint {path}")
    try:
        return Checkpoint.from_dict(data)
    except (ValueError, TypeError, KeyError) as exc:
        raise StoreError(f"checkpoint {path} is invalid: {exc}; it will not be used.") from exc


def _stamp(created_at: str) -> str:
    try:
        moment = datetime.fromisoformat(created_at)
    except ValueError as exc:
        raise StoreError(f"checkpoint created_at {created_at!r} is not an ISO 8601 timestamp") from exc
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y%m%dT%H%M%S%fZ")


@dataclass(frozen=True)
class CheckpointEntry:
    """A checkpoint file as listed, without reading it."""

    path: Path
    session_id: str
    id: str
    created_at: str
    size_bytes: int


def _size(n: int) -> str:
    return f"{n / MiB:.1f} MiB" if n >= MiB else f"{n} bytes"


class CheckpointStore:
    def __init__(
        self, root: Path, *, session_quota_bytes: int = 20 * MiB, total_quota_bytes: int = 200 * MiB
    ) -> None:
        self.root = root
        self.session_quota_bytes = session_quota_bytes
        self.total_quota_bytes = total_quota_bytes

    def write(self, cp: Checkpoint) -> Path:
        """Redact and store `cp` atomically; evict the oldest checkpoints to stay within the quotas."""
        check_id(cp.session_id, "session id")
        check_id(cp.id, "checkpoint id")
        data = encode_checkpoint(cp)
        check_size(len(data), CHECKPOINT_BYTES, f"checkpoint {cp.id}")
        for scope, quota, key in (
            ("per-session", self.session_quota_bytes, "checkpoint_session_quota_mb"),
            ("total", self.total_quota_bytes, "checkpoint_total_quota_mb"),
        ):
            if len(data) > quota:
                raise QuotaExceeded(
                    f"a checkpoint of {_size(len(data))} does not fit the {scope} checkpoint quota of "
                    f"{_size(quota)}; nothing was written. Raise the quota (config key `{key}`) to keep "
                    "checkpoints of conversations this long."
                )
        session_dir = ensure_dir(ensure_dir(self.root) / cp.session_id)
        remove_stale_temps(session_dir)
        path = session_dir / f"{_stamp(cp.created_at)}-{cp.id}.json"
        doomed = self._eviction_plan(cp.session_id, len(data), replacing=path)
        # The new checkpoint lands before the old ones go: a failed write never costs the user the
        # checkpoints they already had, at the price of exceeding the quota by one file for a moment.
        atomic_write(path, data)
        for entry in doomed:
            with contextlib.suppress(FileNotFoundError):
                entry.path.unlink()
        return path

    def _eviction_plan(
        self, session_id: str, incoming: int, *, replacing: Path
    ) -> builtins.list[CheckpointEntry]:
        entries = [e for e in self._entries(None) if e.path != replacing]  # oldest first
        doomed: builtins.list[CheckpointEntry] = []
        session_used = sum(e.size_bytes for e in entries if e.session_id == session_id)
        total_used = sum(e.size_bytes for e in entries)
        for e in entries:
            if session_used + incoming <= self.session_quota_bytes:
                break
            if e.session_id == session_id:
                doomed.append(e)
                session_used -= e.size_bytes
                total_used -= e.size_bytes
        for e in entries:
            if total_used + incoming <= self.total_quota_bytes:
                break
            if e not in doomed:
                doomed.append(e)
                total_used -= e.size_bytes
        return doomed

    def load(self, path: Path) -> Checkpoint:
        return load_checkpoint(path)

    def _entries(self, session_id: str | None) -> builtins.list[CheckpointEntry]:
        if not self.root.is_dir():
            return []
        dirs = [self.root / check_id(session_id, "session id")] if session_id else sorted(self.root.iterdir())
        out: builtins.list[CheckpointEntry] = []
        for directory in dirs:
            if not directory.is_dir():
                continue
            for path in directory.iterdir():
                m = _NAME.fullmatch(path.name)
                if m is None:
                    continue  # temp files, foreign files: never taken as checkpoints
                with contextlib.suppress(FileNotFoundError):
                    size = path.stat().st_size
                    created = datetime.strptime(m.group(1), "%Y%m%dT%H%M%S%fZ").replace(tzinfo=UTC)
                    out.append(CheckpointEntry(path, directory.name, m.group(2), created.isoformat(), size))
        out.sort(key=lambda e: (e.created_at, e.path.name))
        return out

    def list(self, session_id: str | None = None) -> builtins.list[CheckpointEntry]:
        """Checkpoints of one session (or all), newest first."""
        return self._entries(session_id)[::-1]
