"""One aforo run, wired as `aforo --resume` wires it, with the fake provider: for the kill -9 loop.

    python tests/faults/kill_worker.py WORKSPACE N

State goes where AFORO_HOME says. The newest session of WORKSPACE is resumed (a new one the first
time) and run N reads its own twelve files, one per turn in a 4096-token window, so it clears and
compacts on the way; the session keeper, checkpoints and telemetry are on disk exactly as the CLI has
them. "started" is printed once the session is open.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from aforo.cli.session_keeper import LATEST, SessionKeeper, find_session
from aforo.context.budget import Budget
from aforo.context.governor import GovernedLane, Governor
from aforo.context.policy import Policy
from aforo.errors import StoreError
from aforo.events import Event
from aforo.loop.agent import Agent
from aforo.messages import SystemPart
from aforo.providers.fake import FakeProvider
from aforo.store.checkpoints import CheckpointStore
from aforo.store.journal import StoreJournal
from aforo.store.paths import checkpoints_dir, sessions_dir
from aforo.store.sessions import SessionRecord, SessionStore
from aforo.store.telemetry import Telemetry
from aforo.tools.registry import default_registry
from support.scenario import TASK_KEY, make_files, reader_model

PROMPT = f"Task {TASK_KEY}: read every file of this run and tell me which one is the longest."


def quiet(event: Event) -> None:
    pass


def main(workspace: Path, run: int) -> int:
    files = make_files(workspace, 12, 2400, prefix=f"run{run:03d}_")
    store = SessionStore(sessions_dir())
    try:
        record, _ = find_session(store, LATEST, workspace)
    except StoreError:
        record = SessionRecord(id=store.new_id(), workspace=str(workspace.resolve()))
    telemetry = Telemetry()
    keeper = SessionKeeper(store, record, quiet)
    journal = StoreJournal(keeper.session_id, CheckpointStore(checkpoints_dir()), telemetry, quiet)
    governor = Governor(
        GovernedLane(budget=Budget(4096, 8192, "test")), policy=Policy(), journal=journal, emit=keeper
    )
    agent = Agent(
        provider=FakeProvider(reader_model(files, batch=False)),
        tools=default_registry(workspace),
        governor=governor,
        system=(SystemPart("You are a test assistant.", "system prompt"),),
        emit=keeper,
    )
    keeper.attach(agent, workspace=workspace, model="fake", base_url="fake://")
    print("started", flush=True)
    keeper.begin(PROMPT)
    result = agent.run(PROMPT)
    keeper.save()
    print(result.reason, flush=True)
    return 0 if result.reason == "end_turn" else 1


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), int(sys.argv[2])))
