"""A lane, opened: the one record of a model on its server that both front doors use, the assistant
(`cli.wiring.open_lane` makes it) and the gateway (one per model a client names). It is the lane a
governor is built on (`Governor(lane, ...)`: a `GovernedLane` with its server and provider besides), and
as a compaction lane the summary lane another conversation's governor takes (`summary_lane`).
"""

from __future__ import annotations

from dataclasses import dataclass

from aforo.context.counting import Meter
from aforo.context.governor import GovernedLane
from aforo.context.lanes import Lane
from aforo.protocols import Provider
from aforo.servers.kind import ServerInfo, ServerKind


@dataclass(frozen=True, kw_only=True)
class OpenLane(GovernedLane):
    """One lane, wired: besides what its governor knows, its server and the provider that talks to it."""

    server: ServerInfo  # its `kind` is the lane's `server_kind`
    kind: ServerKind
    provider: Provider  # for the conversation's calls, and the governor's side calls (measuring, summaries)

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
