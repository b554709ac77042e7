"""Building blocks for loop and governor tests: a workspace of files, an agent wired to a fake provider,
and a scripted "reader" model that behaves like a small model doing a reading task."""

from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from aforo.context.budget import Budget
from aforo.context.governor import GovernedLane, Governor
from aforo.context.ledger import is_compacted
from aforo.context.memory_journal import MemoryJournal
from aforo.context.policy import Policy
from aforo.context.summary_request import SUMMARY_ASK
from aforo.events import Event, RunResult
from aforo.loop.agent import Agent
from aforo.loop.budgets import RunBudget
from aforo.messages import Request, SystemPart, ToolResult
from aforo.protocols import Provider, TokenCounter
from aforo.providers.fake import FakeProvider, FakeTurn
from aforo.tools.registry import default_registry

TASK_KEY = "BRAVO-2718"


def make_files(root: Path, count: int, chars: int, prefix: str = "mod") -> list[str]:
    names = []
    for i in range(count):
        name = f"{prefix}{i:02d}.py"
        body = "".join(f"def f_{i}_{n}(x):\n    return x * {n}  # line {n}\n" for n in range(chars // 40))
        (root / name).write_text(body[:chars] + f"\n# end of {name}\n")
        names.append(name)
    return names


@dataclass
class Recorder:
    events: list[Event] = field(default_factory=list)

    def __call__(self, event: Event) -> None:
        self.events.append(event)

    def of(self, kind: str) -> list[Event]:
        return [e for e in self.events if e.type == kind]


def make_agent(
    workspace: Path,
    provider: Provider,
    *,
    window: int = 4096,
    max_tokens: int = 8192,
    policy: Policy | None = None,
    max_turns: int = 25,
    journal: MemoryJournal | None = None,
    counter: TokenCounter | None = None,
    constrained: bool = False,
) -> tuple[Agent, Recorder, MemoryJournal]:
    rec = Recorder()
    journal = journal or MemoryJournal()
    governor = Governor(
        GovernedLane(budget=Budget(window, max_tokens, "test"), counter=counter),
        policy=policy or Policy(),
        journal=journal,
        emit=rec,
    )
    agent = Agent(
        provider=provider,
        tools=default_registry(workspace),
        governor=governor,
        system=(SystemPart("You are a test assistant.", "system prompt"),),
        emit=rec,
        run_budget=RunBudget(turns=max_turns),
        constrained=constrained,
    )
    return agent, rec, journal


def is_summary_request(request: Request) -> bool:
    """A compaction's summary request: the transcript under its own system prompt, or the conversation
    with the summary asked as one more turn (on the conversation's own server)."""
    last = request.messages[-1].text if request.messages else ""
    return any(p.name == "compaction" for p in request.system) or last.startswith(SUMMARY_ASK)


def read_so_far(request: Request) -> set[str]:
    """Files whose Read results are in the request, or named as evidence by a compaction."""
    seen: set[str] = set()
    ids = {}
    for message in request.messages:
        for use in message.tool_uses:
            ids[use.id] = use
        for block in message.content:
            if isinstance(block, ToolResult) and block.tool_use_id in ids:
                use = ids[block.tool_use_id]
                if use.name == "Read":
                    seen.add(str(use.input["file_path"]))
        if is_compacted(message):
            seen |= set(re.findall(r"<evidence>Read (\S+)</evidence>", message.text))
    return seen


def reader_model(files: list[str], *, batch: bool | int | tuple[int, ...], task_key: str = TASK_KEY):
    """A scripted model: reads `files` (all at once, one per turn, `batch` at a time, or as many per turn
    as each number of a tuple says, then the rest at once), then answers with the task key.

    It only 'knows' the task while the user's request (with the key) is visible in the request, as a
    real model would; a summary request gets a structured summary that names what was read.
    """

    def respond(request: Request) -> FakeTurn:
        text = json.dumps([m.to_dict() for m in request.messages], ensure_ascii=False)
        if is_summary_request(request):
            done = sorted(read_so_far(request) | set(re.findall(r"mod\d\d\.py", text)))
            return FakeTurn(
                f"Goal: find the longest file for task {task_key if task_key in text else '?'}.\n"
                f"Decisions: read files one by one because the window is small.\n"
                f"Evidence: read {', '.join(done)}.\nNext action: read the remaining files."
            )
        if task_key not in text:
            return FakeTurn("Ready to continue or answer any specific questions about the code.")
        done = read_so_far(request)
        todo = [f for f in files if f not in done]
        if not todo:
            return FakeTurn(f"Task {task_key}: all {len(files)} files read; the longest is {files[-1]}.")
        if isinstance(batch, tuple):
            step = len(files) - len(todo)
            sizes = [sum(batch[:i]) for i in range(len(batch) + 1)]
            size = batch[sizes.index(step)] if step in sizes[:-1] else len(todo)
        else:
            size = len(todo) if batch is True else max(1, int(batch))
        return FakeTurn("", [("Read", {"file_path": f}) for f in todo[:size]])

    return respond


def cleared_then_compacted(workspace: Path, prompt: str) -> tuple[Agent, Recorder, MemoryJournal]:
    """A run that clears (four files at once with three results kept: the first is cleared once the model
    has read them), then a /compact. A batch of reads no longer fills the window past compaction (each
    call is counted at the cap), so a run that both clears and compacts takes an explicit compaction."""
    files = make_files(workspace, 4, 3000)
    provider = FakeProvider(reader_model(files, batch=True))
    agent, rec, journal = make_agent(workspace, provider, window=4096, policy=Policy(keep_tool_results=3))
    result = agent.run(prompt)
    assert result.reason == "end_turn", result.error
    agent.governor.compact_now(agent.request(), provider)
    return agent, rec, journal


def big_file(workspace: Path) -> None:
    """`big.py`, 400 small functions: one Read of it passes a compaction threshold of 0.2 of 4 096."""
    (workspace / "big.py").write_text("".join(f"def f_{n}(x):\n    return x * {n}\n" for n in range(400)))


def reads_big_then_answers(request: Request) -> FakeTurn:
    """A model that reads big.py, then answers; it answers at once if no compaction came between."""
    if any(m.tool_results for m in request.messages):
        return FakeTurn("answered without a compaction")
    return FakeTurn(tool_calls=[("Read", {"file_path": "big.py"})])


def run_then_release(agent: Agent, prompt: str, release: threading.Event) -> tuple[RunResult, float]:
    """Run `agent` on `prompt` while a stalled server waits on `release`, set after the run whatever
    happens; the result and the seconds the run took."""
    started = time.monotonic()
    try:
        result = agent.run(prompt)
    finally:
        release.set()
    return result, time.monotonic() - started
