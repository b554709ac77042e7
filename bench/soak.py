"""An eight-hour session in miniature (issue 38): 2 000 questions in one aforo session, a compaction
about every 20, against a scripted OpenAI-compatible server on 127.0.0.1 (the tests' own).

The session is wired as `aforo` wires it (cli/main: a session store, the checkpoint store at its default
quotas, the keeper saving after every change, `build_runtime` at the defaults), in this process, so its
memory is this process's. Each question reads one of the workspace's files and is answered; the
window (4 096) fills and compacts. Per 100 questions it prints: the governor's time per question (the
run minus the server's time), the resident set, the session file's size, the checkpoint folder's size
and file count, the compactions so far. At the end: whether every question the user typed is still
kept verbatim somewhere they can get it back (the session's trail in the session file, or a checkpoint).

Targets: the governor's time per question, the memory and the session file flat (the last block within
1.5x of the second); the checkpoint folder within its per-session quota (20 MiB); every question kept.

    .venv/bin/python bench/soak.py [--turns 2000]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from aforo.context.summary_request import SUMMARY_ASK  # noqa: E402
from dialects.openai_app import Call, Reply  # noqa: E402
from dialects.truncating_app import Seen, TruncatingServer  # noqa: E402
from support.live_server import LiveServer  # noqa: E402

FILES = 40
WINDOW = 4096


def scripted(server_seconds: list[float]):
    """Reads the file the newest question names, then answers with its size; summaries are short. The
    server counts the prompt as it would be tokenized (dialects/truncating_app), with a 4 096 window."""

    def answer(seen: Seen) -> Reply:
        started = time.perf_counter()
        messages = seen.messages
        last = messages[-1]
        if not seen.tools or SUMMARY_ASK in str(last["content"]):  # a summary, in either form
            reply = Reply(
                text="Goal: answer each question about the files.\nDecisions: read one file per question "
                "because each names one.\nNext action: answer the next question."
            )
        elif last["role"] == "tool":
            reply = Reply(text=f"The file holds {len(last['content'])} characters. Done.")
        elif named := re.findall(r"mod\d\d\.py", str(last["content"])):
            reply = Reply(calls=[Call("Read", json.dumps({"file_path": named[-1]}))])
        else:  # what aforo sends to measure new content alone (max_tokens 1)
            reply = Reply(text="ok")
        server_seconds.append(time.perf_counter() - started)
        return reply

    return answer


def rss_mb() -> float:
    with open(f"/proc/{os.getpid()}/status", encoding="ascii") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def folder(path: Path) -> tuple[int, int]:
    files = [p for p in path.rglob("*.json") if p.is_file()]
    return sum(p.stat().st_size for p in files), len(files)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=2000)
    turns = parser.parse_args().turns
    home = Path(tempfile.mkdtemp(prefix="aforo-soak-"))
    os.environ.update({"AFORO_HOME": str(home / "state"), "XDG_CONFIG_HOME": str(home / "config")})
    for key in [k for k in os.environ if k.startswith("AFORO_") and k != "AFORO_HOME"]:
        del os.environ[key]
    ws = home / "ws"
    ws.mkdir()
    for i in range(FILES):
        (ws / f"mod{i:02d}.py").write_text(
            "".join(f"def f_{i}_{n}(x):\n    return x * {n}\n" for n in range(6))
        )

    from aforo.cli.config import load_config
    from aforo.cli.flags import build_parser, config_flags
    from aforo.cli.session_keeper import SessionKeeper
    from aforo.cli.wiring import build_runtime
    from aforo.limits import MiB
    from aforo.store.checkpoints import CheckpointStore
    from aforo.store.journal import StoreJournal
    from aforo.store.paths import checkpoints_dir, sessions_dir
    from aforo.store.sessions import SessionRecord, SessionStore

    server_seconds: list[float] = []
    server = TruncatingServer(scripted(server_seconds), window=WINDOW)
    with LiveServer(server.app) as live:
        flags = ["-w", str(ws), "--base-url", live.url, "-m", "soak", "--context-window", str(WINDOW), "x"]
        cfg = load_config(config_flags(build_parser("aforo", {}).parse_args(flags)))
        store = SessionStore(sessions_dir())
        record = SessionRecord(id=store.new_id(), workspace=str(ws.resolve()))
        checkpoints = CheckpointStore(
            checkpoints_dir(),
            session_quota_bytes=int(cfg.checkpoint_session_quota_mb * MiB),
            total_quota_bytes=int(cfg.checkpoint_total_quota_mb * MiB),
        )
        compacted: list[int] = []

        def count(event: Any) -> None:
            if event.type == "context" and event.action == "compacted":
                compacted.append(1)

        keeper = SessionKeeper(store, record, count)
        journal = StoreJournal(keeper.session_id, checkpoints, None, keeper)
        runtime = build_runtime(cfg, keeper, journal)
        agent = runtime.agent
        keeper.attach(agent, workspace=ws, model=runtime.model, base_url=cfg.base_url)
        typed: list[str] = []
        block_gov: list[float] = []
        print("turns  governor ms/question  RSS MB  session KB  checkpoints KB (files)  compactions")
        for turn in range(1, turns + 1):
            question = f"Question {turn}: what is in the file mod{turn % FILES:02d}.py today?"
            typed.append(question)
            before_server = sum(server_seconds)
            started = time.perf_counter()
            keeper.begin(question)
            result = agent.run(question)
            keeper.save()
            took = time.perf_counter() - started - (sum(server_seconds) - before_server)
            # The scripted server runs in this process and keeps what it was sent: not aforo's memory.
            server.turns.clear()
            if result.reason != "end_turn":
                print(f"question {turn} ended {result.reason}: {result.error}")
                return 1
            block_gov.append(took)
            if turn % 100 == 0:
                session_kb = store.path(record.id).stat().st_size / 1024
                cp_bytes, cp_files = folder(checkpoints_dir())
                ms = 1000 * sum(block_gov) / len(block_gov)
                print(
                    f"{turn:5d}  {ms:20.1f}  {rss_mb():6.1f}  {session_kb:10.1f}  "
                    f"{cp_bytes / 1024:14.1f} ({cp_files:4d})  {len(compacted):11d}"
                )
                block_gov = []
        keeper.close()
        saved = json.loads(store.path(record.id).read_text())
        kept = set(saved["trail"]["requests"])
        for entry in checkpoints.list(record.id):
            kept |= {m["content"][0].get("text", "") for m in json.loads(entry.path.read_text())["messages"]}
        lost = [q for q in typed if q not in kept]
        in_trail = len(saved["trail"]["requests"])
        print(f"questions typed: {len(typed)}; kept verbatim in the session's trail: {in_trail}")
        print(f"questions lost: {len(lost)}" + (f" (first: {lost[0]!r})" if lost else ""))
        return 1 if lost else 0


if __name__ == "__main__":
    sys.exit(main())
