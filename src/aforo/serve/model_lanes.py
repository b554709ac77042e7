"""The lane each model has on the upstream server, opened once per model a client names.

Opening one is what a run does for its lane (detection, the served window, the probe cache, the exact
counter, the provider: `cli.wiring.open_lane`); the CLI hands that in as `open_lane`, so the gateway
learns a model's window exactly as the assistant does. A lane is kept for the gateway's life, at most
`serve_models` of them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import replace

from aforo.errors import LimitExceeded
from aforo.limits import SERVE_MODELS
from aforo.messages import Message, Request
from aforo.protocols import TokenCounter
from aforo.servers.open_lane import OpenLane


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


class ModelLanes:
    def __init__(self, open_lane: Callable[[str], OpenLane]) -> None:
        self._open = open_lane
        self._lanes: dict[str, OpenLane] = {}
        self._lock = threading.Lock()

    def get(self, model: str) -> OpenLane:
        """The lane of `model`, opened on first use. Raises ConfigError (no such model, no server) or
        LimitExceeded (more models than `serve_models`)."""
        with self._lock:
            lane = self._lanes.get(model)
            if lane is not None:
                return lane
            if len(self._lanes) >= int(SERVE_MODELS.value):
                raise LimitExceeded(SERVE_MODELS, f"a request names a {len(self._lanes) + 1}th model")
            lane = self._open(model)
            if lane.counter is not None:
                lane = replace(lane, counter=LockedCounter(lane.counter))
            self._lanes[model] = lane
            return lane
