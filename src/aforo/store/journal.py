"""The governor's Journal on disk: checkpoints through CheckpointStore, telemetry through SQLite.

A telemetry write that fails must not stop the user's run (it is a record, not the work), so it
becomes a warning once; a checkpoint that fails raises, so the transformation is not applied.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from aforo.errors import StoreError
from aforo.events import EventSink, Warning
from aforo.messages import Message
from aforo.store.checkpoints import Checkpoint, CheckpointStore
from aforo.store.telemetry import Telemetry

_TELEMETRY_FIELDS = frozenset(inspect.signature(Telemetry.record).parameters) - {"self", "event"}


class StoreJournal:
    def __init__(
        self, session: str, checkpoints: CheckpointStore, telemetry: Telemetry | None, emit: EventSink
    ) -> None:
        self.session = session
        self.checkpoints = checkpoints
        self.telemetry = telemetry
        self.emit = emit
        self.last_path: Path | None = None

    def checkpoint(self, *, reason: str, messages: list[Message], facts: dict[str, Any]) -> str:
        cp = Checkpoint(
            session_id=self.session,
            reason=reason,
            messages=list(messages),
            goal=str(facts.get("goal", "")),
            constraints=facts.get("constraints") or {"hard": [], "soft": []},
            decisions=list(facts.get("decisions", [])),
            evidence=[
                {"source": e["source"], "detail": e.get("tool_use_id", "")} for e in facts.get("evidence", [])
            ],
            next_action=str(facts.get("next_action", "")),
            model=str(facts.get("model", "")),
            server=str(facts.get("server", "")),
            window=int(facts.get("window", 0)),
            window_source=str(facts.get("window_source", "")),
            tokens_before=int(facts.get("tokens_before", 0)),
            counter=str(facts.get("counter", "")),
        )
        self.last_path = self.checkpoints.write(cp)
        return cp.id

    def checkpoint_history(self) -> Iterator[tuple[str, str, list[Message]]]:
        # Loaded one by one: an undo usually needs only the newest; a corrupt file raises, never skipped.
        for entry in self.checkpoints.list(self.session):
            cp = self.checkpoints.load(entry.path)
            yield cp.id, cp.reason, list(cp.messages)

    def record(self, event: str, **fields: Any) -> None:
        if self.telemetry is None:
            return
        known = {k: v for k, v in fields.items() if k in _TELEMETRY_FIELDS}
        known.setdefault("session", self.session)
        cp = known.get("checkpoint")
        if cp and self.last_path is not None and str(cp) in self.last_path.name:
            known["checkpoint"] = self.last_path  # the file, so `aforo stats` points at it
        try:
            self.telemetry.record(event, **known)
        except StoreError as exc:
            self.emit(Warning(f"Telemetry is off for this run: {exc}"))
            self.telemetry = None
