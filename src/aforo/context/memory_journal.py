"""A Journal kept in memory: for tests, demos and runs that must leave nothing on disk."""

from __future__ import annotations

from collections.abc import Iterator

from aforo.messages import Message
from aforo.records import CheckpointFacts, TelemetryRecord


class MemoryJournal:
    def __init__(self) -> None:
        # (id, reason, messages, facts), oldest first
        self.checkpoints: list[tuple[str, str, list[Message], CheckpointFacts]] = []
        self.records: list[TelemetryRecord] = []

    def checkpoint(self, messages: tuple[Message, ...], facts: CheckpointFacts) -> str:
        cp_id = f"mem-{len(self.checkpoints) + 1}"
        self.checkpoints.append((cp_id, facts.reason, list(messages), facts))
        return cp_id

    def checkpoint_history(self) -> Iterator[tuple[str, str, list[Message]]]:
        for cp_id, reason, messages, _facts in reversed(self.checkpoints):
            yield cp_id, reason, list(messages)

    def record(self, record: TelemetryRecord) -> None:
        self.records.append(record)

    def events(self, name: str) -> list[TelemetryRecord]:
        return [r for r in self.records if r.event == name]
