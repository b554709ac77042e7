"""Never lose the task silently: the CLI against a server that truncates like Ollama (issue 5, item 8).

aforo is told a window far larger than the server's, so its stages never fire and only detection stands
between the user and a confident answer built without their request. Every run must either end
`context_overflow` (exit 3) or finish the task — never `end_turn` with the server's lost-task answer.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from dialects.openai_app import Call, Reply
from dialects.truncating_app import LOST_TASK_ANSWER, Seen, TruncatingServer
from support.cli import CliRun, run_cli
from support.live_server import LiveServer

MARKER = "TASK-7731"


def policy(files: list[str]):
    """Reads `files` one per turn while it can see the task; answers the lost-task line otherwise."""

    def answer(seen: Seen) -> Reply:
        if not seen.tools:  # a max_tokens=1 measurement
            return Reply(text=".")
        if not any(MARKER in str(m.get("content")) for m in seen.messages if m.get("role") == "user"):
            return Reply(text=LOST_TASK_ANSWER)
        read = {
            json.loads(c["function"]["arguments"])["file_path"]
            for m in seen.messages
            for c in m.get("tool_calls") or []
        }
        todo = [f for f in files if f not in read]
        if todo:
            return Reply(calls=[Call("Read", json.dumps({"file_path": todo[0]}))])
        return Reply(text=f"{MARKER}: read {len(files)} files, done.")

    return answer


def workspace(root: Path, sizes: list[int]) -> list[str]:
    names = []
    for i, size in enumerate(sizes):
        name = f"notes{i:02d}.txt"
        (root / name).write_text(
            "".join(f"note {i}.{n}: the window is a budget\n" for n in range(size // 36))
        )
        names.append(name)
    return names


def run_told_32k(workspace: Path, url: str, prompt: str, *extra: str) -> CliRun:
    """aforo told a 32k window, far more than the server really has."""
    return run_cli(
        "-w", str(workspace), "--base-url", f"{url}/v1", "-m", "test-model", "--context-window", "32768",
        *extra, "--json", prompt,
    )  # fmt: skip


CASES: list[tuple[int, str, int]] = [
    (window, mode, seed)
    for window in (2048, 4096)
    for mode in ("ollama", "plateau", "collapse")
    for seed in range(3)
]


@pytest.mark.parametrize(("window", "mode", "seed"), CASES)
def test_truncating_server_never_yields_a_lost_task_answer(
    tmp_path: Path, window: int, mode: str, seed: int
) -> None:
    rnd = random.Random(seed * 100 + window)
    sizes = [rnd.randint(800, 2400) for _ in range(12)]
    files = workspace(tmp_path, sizes)
    server = TruncatingServer(policy(files), window=window, mode=mode)  # type: ignore[arg-type]
    prompt = f"{MARKER} Read the notes files one by one and summarize them."
    with LiveServer(server.app) as live:
        run = run_told_32k(tmp_path, live.url, prompt)
    end = run.run_end()
    assert any(t.dropped for t in server.turns), "the scenario must really overflow the server"
    text = "".join(e["text"] for e in run.events() if e["type"] == "text_delta")
    assert LOST_TASK_ANSWER not in text
    if end["reason"] == "end_turn":
        assert MARKER in text
    else:
        assert end["reason"] == "context_overflow" and run.code == 3
        assert "--context-window" in end["error"]


@pytest.mark.parametrize("window", [2048, 4096])
def test_first_crossing_by_less_than_the_first_message_is_caught(tmp_path: Path, window: int) -> None:
    # A long first message (~175 tokens) and small files (~110-160 tokens a turn): the turn that
    # crosses the window overshoots it by less than the first message, so the server drops only the
    # user's request and the reported prompt still grows.
    prompt = f"{MARKER} " + "Read every notes file and summarize the budget rules. " * 12
    files = workspace(tmp_path, [300 + 7 * i for i in range(70)])
    server = TruncatingServer(policy(files), window=window, mode="ollama")
    with LiveServer(server.app) as live:
        # Without the pre-search: its Grep of the notes would change the turns this case is sized on.
        run = run_told_32k(tmp_path, live.url, prompt, "--max-turns", "90", "--no-search")
    end = run.run_end()
    crossing = next(i for i, t in enumerate(server.turns) if t.dropped)
    first_drop = server.turns[crossing]
    assert first_drop.dropped == 1, "the crossing turn dropped exactly the user's request"
    assert end["reason"] == "context_overflow", run.out[-2000:]
    truncated = [e for e in run.events() if e["type"] == "turn_end" and e["truncated"]]
    assert len(truncated) == 1
    # Caught on the crossing turn itself: no answer built without the task was ever accepted.
    assert LOST_TASK_ANSWER not in "".join(e["text"] for e in run.events() if e["type"] == "text_delta")
