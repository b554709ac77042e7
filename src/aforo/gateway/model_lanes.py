"""The lane each model has on the upstream server, opened once per model a client names.

Opening one is what a run does for its lane (detection, the served window, the probe cache, the exact
counter, the provider: `cli.wiring.open_lane`); the CLI hands that in as `open_lane`, so the gateway
learns a model's window exactly as the assistant does. At most `serve_models` lanes are kept: past
them, the one used least recently that no request uses is freed, so a new model always finds room
unless every lane is answering. A lane opens without holding up the others: only the requests for
that model wait for it.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from aforo.closing import Closing
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


@dataclass
class _Entry:
    """A model's lane while it opens and once it is open, with how many requests use it now."""

    opened: threading.Event = field(default_factory=threading.Event)
    lane: OpenLane | None = None
    failed: BaseException | None = None
    busy: int = 0


class ModelLanes:
    def __init__(self, open_lane: Callable[[str], OpenLane]) -> None:
        self._open = open_lane
        self._entries: OrderedDict[str, _Entry] = OrderedDict()  # least recently used first
        self._lock = threading.Lock()  # held for bookkeeping only, never while a lane opens

    def take(self, model: str) -> OpenLane:
        """The lane of `model`, opened on first use, in use until `give_back`. Raises ConfigError (no
        such model, no server) or LimitExceeded (`serve_models` lanes, every one in use)."""
        freed: list[OpenLane] = []
        with self._lock:
            entry = self._entries.get(model)
            opens = entry is None
            if entry is None:
                freed = self._free_one()
                entry = self._entries[model] = _Entry()
            self._entries.move_to_end(model)
            entry.busy += 1
        _close(freed)
        if opens:
            return self._open_lane(model, entry)
        # Another request opens it: wait for that one, while requests for other models go on.
        entry.opened.wait()
        if entry.lane is None:
            with self._lock:
                entry.busy -= 1  # this entry's, which is gone: a new one may stand under the name
            raise entry.failed or LookupError(model)
        return entry.lane

    def opened(self, model: str) -> OpenLane:
        """The lane of `model`, which a request has taken."""
        with self._lock:
            lane = self._entries[model].lane
        if lane is None:
            raise LookupError(f"no lane open for {model!r}")
        return lane

    def give_back(self, model: str) -> None:
        """A request that took `model`'s lane is over."""
        with self._lock:
            entry = self._entries.get(model)
            if entry is not None:
                entry.busy -= 1

    def _open_lane(self, model: str, entry: _Entry) -> OpenLane:
        try:
            lane = self._open(model)
            if lane.counter is not None:
                lane = replace(lane, counter=LockedCounter(lane.counter))
            entry.lane = lane
            return lane
        except BaseException as exc:
            entry.failed = exc
            with self._lock:  # not kept: the next request for this model tries again
                if self._entries.get(model) is entry:
                    del self._entries[model]
            raise
        finally:
            entry.opened.set()

    def _free_one(self) -> list[OpenLane]:
        """At `serve_models` lanes, the one used least recently that no request uses goes (its
        conversations, idle too, keep their governors and go when the conversations' limit says)."""
        most = int(SERVE_MODELS.value)
        if len(self._entries) < most:
            return []
        for model, entry in self._entries.items():
            if entry.busy == 0 and entry.lane is not None:
                del self._entries[model]
                return [entry.lane]
        raise LimitExceeded(SERVE_MODELS, f"all {len(self._entries)} models' lanes are in use by requests")


def _close(lanes: list[OpenLane]) -> None:
    for lane in lanes:
        if isinstance(lane.provider, Closing):
            lane.provider.close()  # its HTTP client; the counter's is the gateway's, shared
