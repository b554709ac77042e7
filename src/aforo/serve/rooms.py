"""The room each model has on the upstream server, opened once per model a client names.

Opening a room is what a run does for its lane (detection, the served window, the probe cache, the
exact counter, the provider: `cli.wiring.open_lane`); the CLI hands that in as `open_room`, so the
gateway learns a model's window exactly as the assistant does. A room is kept for the gateway's life,
at most `serve_models` of them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, replace

from aforo.context.budget import Budget
from aforo.errors import LimitExceeded
from aforo.limits import SERVE_MODELS
from aforo.messages import Message, Request
from aforo.protocols import Provider, TokenCounter
from aforo.servers.kind import ServerInfo, ServerKind


@dataclass(frozen=True)
class Room:
    """One model on the upstream server: its window, how its prompts are counted, who talks to it."""

    model: str
    kind: ServerKind
    server: ServerInfo
    budget: Budget
    provider: Provider  # for the governor's side calls: measuring new content, summaries
    counter: TokenCounter | None
    window_known: bool  # the window came from the server or a probe, not a default

    @property
    def live(self) -> bool:
        """Whether an answer may stream as it arrives: a loud server refuses what does not fit, so its
        answers cannot be silently truncated (the assistant's rule for streaming live, `cli.wiring`)."""
        return self.kind.loud


class LockedCounter:
    """A counter shared by every conversation of one model: its cache is not made for two threads."""

    def __init__(self, counter: TokenCounter) -> None:
        self._counter, self._lock = counter, threading.Lock()
        self.name, self.exact = counter.name, counter.exact

    def count(self, request: Request) -> int:
        with self._lock:
            return self._counter.count(request)

    def count_messages(self, messages: tuple[Message, ...] | list[Message]) -> int:
        with self._lock:
            return self._counter.count_messages(messages)


class Rooms:
    def __init__(self, open_room: Callable[[str], Room]) -> None:
        self._open = open_room
        self._rooms: dict[str, Room] = {}
        self._lock = threading.Lock()

    def get(self, model: str) -> Room:
        """The room of `model`, opened on first use. Raises ConfigError (no such model, no server) or
        LimitExceeded (more models than `serve_models`)."""
        with self._lock:
            room = self._rooms.get(model)
            if room is not None:
                return room
            if len(self._rooms) >= int(SERVE_MODELS.value):
                raise LimitExceeded(SERVE_MODELS, f"a request names a {len(self._rooms) + 1}th model")
            room = self._open(model)
            if room.counter is not None:
                room = replace(room, counter=LockedCounter(room.counter))
            self._rooms[model] = room
            return room
