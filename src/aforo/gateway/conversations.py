"""Which governor follows which conversation, when every request carries the whole conversation.

The assistant's governor owns one conversation that only grows (or is replaced by a transformation), and
its watch compares each answer with the last good one of that same conversation. A client resends its
whole history with every request, so the gateway finds the conversation a request continues: the one
whose messages, as the client last sent them, are a prefix of this request's. The new messages are
appended to that governor's conversation (which, after `--compact`, is the compacted one), so growth
detection sees what it would in the loop. A request that continues none starts a new conversation.

A conversation serves one request at a time: two requests that continue the same one at once (two
clients that began alike) get a governor each, so no watch ever compares two branches. At most
`serve_conversations` are kept; the one idle the longest is forgotten first.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

from aforo.context.governor import Governor
from aforo.limits import SERVE_CONVERSATIONS
from aforo.messages import Message, Request


@dataclass
class Slot:
    """One conversation: its governor, and its messages as the client sent them last."""

    model: str
    governor: Governor
    sent: tuple[Message, ...] = ()
    busy: bool = field(default=False)

    def continued_by(self, model: str, messages: tuple[Message, ...]) -> bool:
        n = len(self.sent)
        return model == self.model and n <= len(messages) and messages[:n] == self.sent


class Conversations:
    def __init__(
        self, make_governor: Callable[[str], Governor], most: int = int(SERVE_CONVERSATIONS.value)
    ) -> None:
        self._make = make_governor
        self._most = most
        self._slots: OrderedDict[int, Slot] = OrderedDict()
        self._lock = threading.Lock()
        self._next = 0

    def take(self, request: Request) -> tuple[Slot, Request]:
        """The conversation `request` continues (or a new one), now busy; and the request to admit: the
        governor's conversation with this request's new messages appended."""
        messages = request.messages
        with self._lock:
            best: Slot | None = None
            for slot in self._slots.values():
                longer = best is None or len(slot.sent) > len(best.sent)
                if longer and not slot.busy and slot.continued_by(request.model, messages):
                    best = slot
            if best is None:
                best = Slot(request.model, self._make(request.model))
                self._next += 1
                self._slots[self._next] = best
                self._forget_idle()
            best.busy = True
        conversation = best.governor.conversation
        for message in messages[len(best.sent) :]:
            conversation.append(message)
        return best, request.with_messages(conversation.messages)

    def give_back(self, slot: Slot, sent: tuple[Message, ...]) -> None:
        """The request is answered (or refused): `sent` is what the client sent, the prefix of its next."""
        with self._lock:
            slot.sent, slot.busy = sent, False
            key = next((k for k, s in self._slots.items() if s is slot), None)
            if key is not None:
                self._slots.move_to_end(key)

    def forget(self, slot: Slot) -> None:
        """The request was refused or its answer withheld: the client will not continue what it sent."""
        with self._lock:
            key = next((k for k, s in self._slots.items() if s is slot), None)
            if key is not None:
                del self._slots[key]

    def __len__(self) -> int:
        return len(self._slots)

    def _forget_idle(self) -> None:
        while len(self._slots) > self._most:
            idle = next((k for k, s in self._slots.items() if not s.busy), None)
            if idle is None:
                return  # every one is answering a request: none can go before it is given back
            del self._slots[idle]
