"""A Journal kept in memory: for tests, demos and runs that must leave nothing on disk."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from aforo.messages import Message


class MemoryJournal:
    def __init__(self) -> None:
        self.checkpoints: list[tuple[str, str, list[Message], dict[str, Any]]] = []
        self.records: list[dict[str, Any]] = []

    def checkpoint(self, *, reason: str, messages: list[Message], facts: dict[str, Any]) -> str:
        cp_id = f"mem-{len(self.checkpoints) + 1}"
        self.checkpoints.append((cp_id, reason, list(messages), dict(facts)))
        return cp_id

    def checkpoint_history(self) -> Iterator[tuple[str, str, list[Message]]]:
        for cp_id, reason, messages, _facts in reversed(self.checkpoints):
            yield cp_id, reason, list(messages)

    def record(self, event: str, **fields: Any) -> None:
        self.records.append({"event": event, **fields})

    def events(self, name: str) -> list[dict[str, Any]]:
        return [r for r in self.records if r["event"] == name]
