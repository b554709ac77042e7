"""A lane, opened: the one record of a model on its server that both front doors use, the assistant
(`cli.wiring.open_lane` makes it) and the gateway (one per model a client names), and the one way a
governor is built from it. As a compaction lane it is the summary lane the governor takes (`summary_lane`).
"""

from __future__ import annotations

from dataclasses import dataclass

from aforo.context.budget import Budget
from aforo.context.counting import Meter
from aforo.context.governor import Governor
from aforo.context.lanes import Lane
from aforo.context.policy import Policy
from aforo.events import EventSink
from aforo.protocols import Journal, Provider, TokenCounter
from aforo.servers.kind import ServerInfo, ServerKind


@dataclass(frozen=True, kw_only=True)
class OpenLane:
    """One lane, wired: its server, model, window, provider and counter."""

    name: str  # the lane's name (`default`, or one the configuration defines)
    server: ServerInfo
    kind: ServerKind
    model: str
    budget: Budget
    window_source: str
    provider: Provider  # for the conversation's calls, and the governor's side calls (measuring, summaries)
    counter: TokenCounter | None
    window_known: bool  # the window came from the server or a probe, not a default

    def summary_lane(self, meter: Meter) -> Lane:
        """This lane as the one another conversation's summaries go to, counted by `meter`."""
        return Lane(
            name=self.name,
            model=self.model,
            server=self.server.kind,
            provider=self.provider,
            budget=self.budget,
            meter=meter,
        )


def governor_for(
    lane: OpenLane, policy: Policy, journal: Journal, emit: EventSink, compaction: Lane | None = None
) -> Governor:
    """The governor of a conversation on `lane`; summaries go to `compaction` when it is another lane."""
    return Governor(
        budget=lane.budget,
        policy=policy,
        journal=journal,
        emit=emit,
        counter=lane.counter,
        model=lane.model,
        server=lane.server.kind,
        window_known=lane.window_known,
        lane=lane.name,
        compaction=compaction,
    )
