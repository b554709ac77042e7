"""The governor's Journal on disk: checkpoints through CheckpointStore, telemetry through SQLite.

A telemetry write that fails must not stop the user's run (it is a record, not the work), so it
becomes a warning once; a checkpoint that fails raises, so the transformation is not applied. Every
field of a TelemetryRecord goes to the column of its name: a field the store has no column for is a
TypeError at the first record, never a silent drop.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import asdict, fields
from pathlib import Path
from typing import Any

from aforo.errors import StoreError
from aforo.events import EventSink, Warning
from aforo.messages import Message
from aforo.records import CheckpointFacts, TelemetryRecord
from aforo.store.checkpoints import Checkpoint, CheckpointStore
from aforo.store.telemetry import Telemetry


class StoreJournal:
    def __init__(
        self,
        session: Callable[[], str],
        checkpoints: CheckpointStore,
        telemetry: Telemetry | None,
        emit: EventSink,
    ) -> None:
        # Asked at every write: the session can change under a running REPL (/resume).
        self.session = session
        self.checkpoints = checkpoints
        self.telemetry = telemetry
        self.emit = emit
        self.last_path: Path | None = None

    def checkpoint(self, messages: tuple[Message, ...], facts: CheckpointFacts) -> str:
        stamp = facts.stamp
        cp = Checkpoint(
            session_id=self.session(),
            reason=facts.reason,
            messages=list(messages),
            goal=facts.goal,
            constraints={"hard": list(facts.hard), "soft": list(facts.soft)},
            decisions=[{"decision": d.decision, "why": d.why} for d in facts.decisions],
            evidence=[{"source": e.source, "detail": e.detail} for e in facts.evidence],
            next_action=facts.next_action,
            tokens_before=facts.tokens_before,
            # Where it was made, in the columns a telemetry row has (`record`): the Where's own names.
            **asdict(stamp.where),
            lane=stamp.lane,
            model_served=stamp.served,
        )
        self.last_path = self.checkpoints.write(cp)
        return cp.id

    def checkpoint_history(self) -> Iterator[tuple[str, str, list[Message]]]:
        # Loaded one by one: an undo usually needs only the newest; a corrupt file raises, never skipped.
        for entry in self.checkpoints.list(self.session()):
            cp = self.checkpoints.load(entry.path)
            yield cp.id, cp.reason, list(cp.messages)

    def record(self, record: TelemetryRecord) -> None:
        if self.telemetry is None:
            return
        stamp, usage = record.stamp, record.usage
        columns: dict[str, Any] = asdict(stamp.where)
        columns.update(
            (f.name, getattr(record, f.name))
            for f in fields(record)
            if f.name not in ("event", "stamp", "usage")
        )
        columns.update(lane=stamp.lane or None, model_served=stamp.served or None)
        if usage is not None:
            # Every prompt token the server read (cached ones included), the answer's, and the cached.
            columns.update(
                input_tokens=usage.prompt_tokens,
                output_tokens=usage.output_tokens,
                cached_tokens=usage.cache_read_tokens,
            )
        cp = record.checkpoint
        if cp and self.last_path is not None and cp in self.last_path.name:
            columns["checkpoint"] = self.last_path  # the file, so `aforo stats` points at it
        try:
            self.telemetry.record(record.event, session=self.session(), **columns)
        except StoreError as exc:
            self.emit(Warning(message=f"Telemetry is off for this run: {exc}"))
            self.telemetry = None
