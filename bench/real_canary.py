"""The governor's canaries on the real model (SPEC §5, §9): `make canary`.

The fast canary (bench/canary.py) compacts with a scripted provider; these run the same ~100 KB
conversation (a marker in the first user message, dozens of tool exchanges of code, JSON and logs) against
llama-server + Qwen2.5-Coder 0.5B serving an 8192-token window, once per lane:

- standard: the conversation's own server writes the summary;
- fast: a second llama-server on another port writes it (a 6144-token window, its own alias).

The conversation (a finished session, ending with the assistant's answer) is far over the window. The
governor compacts it through its transaction (checkpoint, the summary request sized for the window of the
lane that writes it, recount), as `/compact` does; then the user asks, on the conversation's server, for
the task code their first message started with. Each canary prints one row: original bytes, compacted
bytes, input tokens of that next request (exact, from the server), the finish reason of the answer,
whether the marker is in it, and the model served before and after (the model the conversation's server
names as loaded, and the one its answer says served it). A canary passes when the answer finishes with
`stop`, holds the marker and comes from the conversation's model.

Measured with the 0.5B model, and why the canary is shaped so: compacting at the admission of the question
itself leaves the question inside the compacted message, which the model echoed to its output limit;
asked "what is the task code at the very start of my first message?" after the compaction it wrote code
instead; asked for the code by its shape it answers the code.

Servers come from the package's engine (aforo.engine: the hash-pinned llama-server and model in its
cache, built on first use); with two servers each runs on one thread (two 2-thread servers on 2 cores
slow both about tenfold). Run it under `flock /tmp/aforo-real.lock`, as `make canary` does, so only one
real model runs at a time.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from aforo.cli.config import Config  # noqa: E402
from aforo.cli.engine_command import EXIT_UNAVAILABLE  # noqa: E402
from aforo.cli.routes import LaneConfig  # noqa: E402
from aforo.cli.wiring import build_runtime  # noqa: E402
from aforo.context.policy import Policy  # noqa: E402
from aforo.context.tokens import conversation_bytes  # noqa: E402
from aforo.engine.errors import EngineUnavailable  # noqa: E402
from aforo.engine.home import EngineHome  # noqa: E402
from aforo.engine.install import Installed, Installer  # noqa: E402
from aforo.engine.pins import QWEN_CODER_05B  # noqa: E402
from aforo.engine.progress import Progress  # noqa: E402
from aforo.engine.server import Server, launch, terminate  # noqa: E402
from aforo.errors import TransformError  # noqa: E402
from aforo.events import ContextAction, Event, ModelCheck, RunEnd, TextDelta, TurnEnd  # noqa: E402
from aforo.messages import Message  # noqa: E402
from aforo.store.checkpoints import CheckpointStore  # noqa: E402
from aforo.store.journal import StoreJournal  # noqa: E402
from aforo.store.telemetry import Telemetry, format_summary  # noqa: E402
from canary import MARKER, build_conversation  # noqa: E402  (the fast canary's conversation)

WINDOW = 8192
# Smaller than the conversation's, so the summary request is sized for it and gives up more tool output.
# Not 4096: there the request keeps little but the list of calls, and the 0.5B model copies that list
# until its output limit (greedy, 3 of 3 conversations measured); the governor then refuses the summary.
FAST_WINDOW = 6144
MAIN_ALIAS = "qwen2.5-coder-0.5b-instruct"
FAST_ALIAS = "qwen2.5-coder-0.5b-instruct-fast"
CLOSING = (
    "I read the handlers, the TTL data and the logs: every handler passes its own default to cache.get, "
    "and the logs show a miss for every key. Next I would compare the TTLs with the handlers' defaults."
)
# Its shape, never the code: the code itself can only come from the first message, through the compaction.
QUESTION = (
    "My first message started with a task code (capital letters, a dash and digits). "
    "Reply with that code only."
)
# The finish reason the server sent, from how the run ended (max_turns is 1: a tool call ends it there).
FINISH = {"end_turn": "stop", "max_tokens": "length", "max_turns": "tool_calls", "refusal": "content_filter"}


@contextmanager
def llama_server(
    installed: Installed, home: EngineHome, *, window: int, alias: str, threads: int
) -> Iterator[Server]:
    """One llama-server of the package's engine (aforo.engine) on a free loopback port, stopped after."""
    server = launch(installed.binary, installed.model, alias, window, home.logs, threads=threads)
    try:
        yield server
    finally:
        terminate(server.pid)


@dataclass(frozen=True)
class Row:
    lane: str
    original_bytes: int
    compacted_bytes: int
    input_tokens: int  # of the next request, as the conversation's server counted it
    counted_tokens: int  # what aforo counted for it (exact: the server's own tokenizer)
    summary_prompt_tokens: int  # of the summary request, on the lane that wrote it
    finish: str
    marker_in_answer: bool
    summary_by: str  # the model the lane's server said wrote the summary
    model_before: str  # the model the conversation's server names as loaded
    model_after: str  # the model the next answer says served it
    restored: bool
    seconds: float
    answer: str

    @property
    def passed(self) -> bool:
        return self.finish == "stop" and self.marker_in_answer and self.restored


def run_lane(lane: str, main: Server, side: Server | None, home: Path, telemetry: Telemetry) -> Row:
    """One canary: the conversation on `main`, its summary on `side` (None: on `main` itself)."""
    workspace = home / "workspace"
    workspace.mkdir(parents=True, exist_ok=True)
    lanes = {"standard": LaneConfig("standard", main.model, main.url, main.ctx, "canary")}
    if side is not None:
        lanes["fast"] = LaneConfig("fast", side.model, side.url, side.ctx, "canary")
    cfg = Config(
        workspace=workspace,
        base_url=main.url,
        model=main.model,
        context_window=main.ctx,
        context_window_source="lanes.standard.context_window (canary)",
        max_turns=1,
        # An answer or a summary is short; a 0.5B model that rambles is cut at 1024 tokens, not 2048.
        max_tokens=1024,
        temperature=0.0,
        # Old tool results are not cleared first, so the compaction alone makes the request fit.
        policy=Policy(keep_tool_results=1_000_000),
        # The question is answered in its one turn with tool definitions, as the canary was measured: with
        # constrained steps the 0.5B model reads a file of the (empty) workspace first.
        tool_mode="native",
        lanes=lanes,
        lane="standard",
        compact_lane="fast" if side is not None else None,
    )
    events: list[Event] = []
    session = f"canary-{lane}-{datetime.now(UTC):%Y%m%dT%H%M%S}"
    journal = StoreJournal(lambda: session, CheckpointStore(home / "checkpoints"), telemetry, events.append)
    runtime = build_runtime(cfg, events.append, journal)
    governor = runtime.agent.governor
    # A finished session: the long conversation ends with the assistant's answer, so the question after
    # the compaction is the next prompt, after the summary and its acknowledgement.
    conversation = [*build_conversation(), Message.assistant(CLOSING)]
    governor.conversation.replace(conversation)
    started = time.monotonic()
    try:
        governor.compact_now(runtime.agent.request(), runtime.provider)
    except TransformError as exc:
        # The governor refused the summary (the conversation is kept): the canary fails, saying why.
        size = conversation_bytes(conversation)
        return Row(lane, size, size, 0, 0, 0, "no summary", False, "", "", "", False, 0.0, str(exc))
    result = runtime.agent.run(QUESTION)
    seconds = time.monotonic() - started
    compactions = [r for r in telemetry.rows(session) if r["event"] == "compaction"]
    if len(compactions) != 1:
        ends = [e for e in events if isinstance(e, RunEnd)]
        raise RuntimeError(f"the {lane} canary compacted {len(compactions)} times, not once: {ends}")
    compaction = compactions[0]
    action = next(e for e in events if isinstance(e, ContextAction) and e.action == "compacted")
    turn = next(e for e in events if isinstance(e, TurnEnd))
    check = next((e for e in events if isinstance(e, ModelCheck)), None)
    answer = "".join(e.text for e in events if isinstance(e, TextDelta))
    return Row(
        lane=lane,
        original_bytes=compaction["bytes_before"],
        compacted_bytes=compaction["bytes_after"],
        input_tokens=turn.usage.prompt_tokens,
        counted_tokens=turn.context,
        summary_prompt_tokens=compaction["summary_tokens"] or 0,
        finish=FINISH.get(result.reason, result.reason),
        marker_in_answer=MARKER in answer,
        summary_by=action.model,
        model_before=", ".join(runtime.server.models) or "(not listed)",
        model_after=turn.model,
        # After a summary on another lane the governor checked; on the same lane there is nothing to
        # restore, and the answer must simply come from the conversation's model.
        restored=check.restored if check is not None else turn.model == main.model,
        seconds=round(seconds, 1),
        answer=answer.strip(),
    )


def run_canaries(lanes: tuple[str, ...], home: Path, fast_window: int = FAST_WINDOW) -> tuple[list[Row], str]:
    """The canaries of `lanes`, each on its own fresh servers; the rows and `aforo stats` of the runs.
    Raises EngineUnavailable when this machine cannot build or run the engine."""
    engine = EngineHome.from_env()
    # The 0.5B, named: the canaries were shaped and measured on it, and two servers of it fit 2 cores.
    installed = Installer(engine, Progress(sys.stderr, prefix="canary"), model=QWEN_CODER_05B).install()
    rows: list[Row] = []
    with Telemetry(home / "telemetry.db") as telemetry:
        for lane in lanes:
            if lane == "standard":
                with llama_server(installed, engine, window=WINDOW, alias=MAIN_ALIAS, threads=2) as main:
                    rows.append(run_lane(lane, main, None, home, telemetry))
            else:
                with (
                    llama_server(installed, engine, window=WINDOW, alias=MAIN_ALIAS, threads=1) as main,
                    llama_server(installed, engine, window=fast_window, alias=FAST_ALIAS, threads=1) as fast,
                ):
                    rows.append(run_lane(lane, main, fast, home, telemetry))
        stats = format_summary(telemetry.summary())
    return rows, stats


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} cores, {platform.system()} {platform.release()}"


def table(rows: list[Row]) -> str:
    head = (
        "| lane | original | compacted | input tokens (server) | finish | marker in answer "
        "| summary by | model before → after |"
    )
    lines = [head, "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        after = f"{r.model_after} ({'restored' if r.restored else 'NOT restored'})"
        lines.append(
            f"| {r.lane} | {r.original_bytes:,} B | {r.compacted_bytes:,} B | {r.input_tokens:,} "
            f"| {r.finish} | {'yes' if r.marker_in_answer else 'NO'} | {r.summary_by} "
            f"| {r.model_before} → {after} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--lane", choices=("standard", "fast"), action="append", help="default: both")
    parser.add_argument("--json", type=Path, help="also write the rows here as JSON")
    parser.add_argument("--fast-window", type=int, default=FAST_WINDOW, help="the fast lane's window")
    args = parser.parse_args(argv)
    lanes = tuple(args.lane or ("standard", "fast"))
    try:
        with tempfile.TemporaryDirectory(prefix="aforo-canary-") as tmp:
            rows, stats = run_canaries(lanes, Path(tmp), args.fast_window)
    except EngineUnavailable as exc:
        print(f"canary: THE REAL MODEL IS UNAVAILABLE ON THIS PLATFORM: {exc}", file=sys.stderr)
        return EXIT_UNAVAILABLE
    print(f"canaries on the real model — {datetime.now(UTC):%Y-%m-%d}, {machine()}")
    print(table(rows))
    for r in rows:
        print(
            f"\n{r.lane}: {r.seconds} s; summary request {r.summary_prompt_tokens} tokens; aforo counted "
            f"{r.counted_tokens} for the next request; answer: {r.answer[:200]!r}"
        )
    print(f"\n{stats}")
    if args.json:
        args.json.write_text(json.dumps([asdict(r) for r in rows], indent=2) + "\n")
    return 0 if rows and all(r.passed for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
