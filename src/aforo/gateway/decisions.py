"""The gateway's decisions, through the governor's own entry points: before a request, `Governor.admit`;
after its answer, `Governor.observe`. Nothing here decides what fits or what was dropped.

Each model a client names has its lane (`model_lanes`), each conversation its governor (`conversations`).
Without `--compact` admission runs no stage: the client's conversation is the client's, and what does
not fit is refused before it is sent. With it, the stages run as in the loop (clear, then compact, each
checkpointed first) and the request goes out with the conversation they made.

Blocking: admission may ask the server to count or to summarize, and observation to measure; the HTTP
side runs these in a worker thread.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Literal

from aforo.context.governor import Governor
from aforo.context.plan import Admitted
from aforo.context.policy import Policy
from aforo.context.watch import Observation
from aforo.errors import ProviderError, RejectedError
from aforo.events import EventSink, Info, Warning
from aforo.gateway.conversations import Conversations, Slot
from aforo.gateway.inbound import Inbound
from aforo.gateway.model_lanes import ModelLanes
from aforo.messages import MessageEnd
from aforo.protocols import Journal
from aforo.records import Stamp, TelemetryRecord
from aforo.servers.open_lane import OpenLane
from aforo.stream import collect

# What became of a request: what `x-aforo-verdict` says. admitted: it fit and went out (a loud
# server's stream, passed on live); clean: the answer was checked and the server read the whole
# prompt; refused: it cannot fit, nothing was sent; truncated: the server answered without part of
# the prompt, the answer was withheld; overflow: the server itself refused it as too long; unchecked:
# the server reported no usage to judge by; failed: the server failed otherwise; abandoned: the client
# hung up before its answer was whole (the row's only: nobody reads its headers).
Outcome = Literal["admitted", "clean", "unchecked", "refused", "truncated", "overflow", "failed", "abandoned"]


class Refused(Exception):
    """The request cannot fit, even after the stages: nothing was sent."""

    def __init__(self, message: str, used: int, window: int) -> None:
        super().__init__(message)
        self.used, self.window = used, window


@dataclass
class Ticket:
    """One request on its way: where it goes, what the governor admitted, when it began."""

    inbound: Inbound
    lane: OpenLane
    slot: Slot
    admitted: Admitted
    client: str
    started: float

    @property
    def used(self) -> int:
        return self.admitted.count.tokens

    @property
    def transformed(self) -> bool:
        return self.admitted.request.messages != self.inbound.request.messages


class Gateway:
    def __init__(
        self, lanes: ModelLanes, journal: Journal, policy: Policy, emit: EventSink, *, compact: bool = False
    ) -> None:
        self.lanes, self.journal, self.policy, self.emit = lanes, journal, policy, emit
        self.compact = compact
        self.conversations = Conversations(self._governor)

    def _governor(self, model: str) -> Governor:
        return Governor(self.lanes.opened(model), policy=self.policy, journal=self.journal, emit=self.emit)

    def admit(self, inbound: Inbound, client: str) -> Ticket:
        """Admit `inbound` on its conversation's governor. Raises Refused (nothing sent), ConfigError
        (no such model or server) or LimitExceeded. The model's lane is in use until `finish`."""
        started = time.monotonic()
        lane = self.lanes.take(inbound.model)
        try:
            return self._admit_on(lane, inbound, client, started)
        except BaseException:
            self.lanes.give_back(inbound.model)
            raise

    def _admit_on(self, lane: OpenLane, inbound: Inbound, client: str, started: float) -> Ticket:
        slot, request = self.conversations.take(inbound.request)
        governor = slot.governor
        try:
            admitted = governor.admit(request, lane.provider, transform=self.compact)
        except RejectedError as exc:
            self.conversations.forget(slot)
            used = governor.count(request).tokens
            self._record_run(slot, "refused", None, started, client, inbound.model)
            self.emit(
                Info(
                    fields={"serve": f"{inbound.model}: {used}/{governor.window} tokens, refused ({client})"}
                )
            )
            raise Refused(str(exc), used, governor.window) from exc
        except BaseException:
            self.conversations.forget(slot)
            raise
        if not slot.sent and len(admitted.request.messages) > 1 and not lane.kind.loud and not lane.counter:
            self._baseline(governor, admitted, lane)
        return Ticket(inbound, lane, slot, admitted, client, started)

    def _baseline(self, governor: Governor, admitted: Admitted, lane: OpenLane) -> None:
        """A conversation first seen already long, on a server that may drop part of it without a word
        and cannot count: the watch has nothing to compare its report with (in the loop a conversation
        starts small). So the server first reads it without its newest message (one token asked for),
        and the watch takes that as its first sample: the request itself is then judged by its growth,
        the first crossing of a window included. The server keeps that prompt in its cache."""
        prefix = admitted.request.with_messages(admitted.request.messages[:-1])
        measuring = replace(prefix, max_tokens=1)
        try:
            end = collect(lane.provider, measuring).end
        except ProviderError as exc:
            self.emit(Warning(message=f"Could not measure the start of the conversation: {exc}"))
            return
        governor.observe(Admitted(request=measuring, count=governor.count(measuring)), end, lane.provider)

    def observe(self, ticket: Ticket, end: MessageEnd) -> Observation:
        """Did the server read the whole prompt? The governor's watch decides, as after a loop's call."""
        return ticket.slot.governor.observe(ticket.admitted, end, ticket.lane.provider)

    def finish(self, ticket: Ticket, verdict: Outcome, end: MessageEnd | None) -> None:
        """The request is over: its telemetry row, and the conversation kept for its next request only
        when its answer went to the client."""
        if verdict in ("admitted", "clean", "unchecked"):
            self.conversations.give_back(ticket.slot, ticket.inbound.request.messages)
        else:
            self.conversations.forget(ticket.slot)
        self._record_run(ticket.slot, verdict, end, ticket.started, ticket.client, ticket.inbound.model)
        done = f"{ticket.inbound.model}: {ticket.used}/{ticket.lane.budget.window} tokens, {verdict}"
        if ticket.admitted.checkpoint:
            done += f", conversation changed after checkpoint {ticket.admitted.checkpoint}"
        self.emit(Info(fields={"serve": f"{done} ({ticket.client})"}))
        self.lanes.give_back(ticket.inbound.model)

    def _record_run(
        self, slot: Slot, verdict: Outcome, end: MessageEnd | None, started: float, client: str, asked: str
    ) -> None:
        governor = slot.governor
        stamp = Stamp(where=governor.where(), lane=governor.lane, served=end.model if end else "")
        self.journal.record(
            TelemetryRecord(
                event="run",
                stamp=stamp,
                usage=end.usage if end else None,
                duration_ms=round((time.monotonic() - started) * 1000, 3),
                cause=f"serve {verdict}; asked for {asked}",
                client=client,
            )
        )
