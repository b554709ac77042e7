"""Answers stream on every kind of server. On a silent server (one that drops what does not fit instead of
refusing it) a streamed answer may turn out to come from a truncated prompt: it is then marked discarded,
visibly, and is not the run's answer. Only where the window is a guess are answers held until checked,
and the run says so once."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from starlette.applications import Starlette

from aforo.cli.render import DISCARDED, HELD_NOTE
from dialects.openai_app import Call, Reply, make_openai_app
from dialects.servers_apps import lmstudio_app
from dialects.truncating_app import LOST_TASK_ANSWER, Seen, TruncatingServer
from support.cli import run_cli
from support.live_server import LiveServer

MARKER = "TASK-4242"


def reader(seen: Seen) -> Reply:
    """Reads big.txt while it can see the task; answers without it once the server dropped it."""
    if not any(MARKER in str(m.get("content")) for m in seen.messages if m.get("role") == "user"):
        return Reply(text=LOST_TASK_ANSWER)
    if not any(m.get("role") == "tool" for m in seen.messages):
        return Reply(calls=[Call("Read", json.dumps({"file_path": "big.txt"}))])
    return Reply(text=f"{MARKER}: done.")


def lmstudio_that_truncates(workspace: Path) -> Starlette:
    """LM Studio says it serves 8192 tokens (so answers stream) but past 1500 it answers from a remnant."""
    (workspace / "big.txt").write_text("".join(f"line {n}: the window is a budget\n" for n in range(400)))
    truncating = TruncatingServer(reader, window=1500, mode="collapse", model="test-model")
    chat = next(r for r in truncating.app.routes if getattr(r, "path", "") == "/v1/chat/completions")
    return Starlette(routes=[chat, *lmstudio_app(8192, model="test-model").routes])


def run(workspace: Path, url: str, *extra: str) -> Any:
    return run_cli(
        "-w", str(workspace), "--base-url", url, "-m", "test-model", *extra, f"{MARKER} summarize big.txt"
    )


def test_a_streamed_answer_from_a_truncated_prompt_is_marked_discarded(tmp_path: Path) -> None:
    with LiveServer(lmstudio_that_truncates(tmp_path)) as server:
        human = run(tmp_path, server.url)
        as_json = run(tmp_path, server.url, "--json")
    assert human.code == 3 and as_json.code == 3, human.out + human.err
    assert "answers: shown once complete" not in human.out  # the window is known: it streams
    assert human.out.index(LOST_TASK_ANSWER) < human.out.index(DISCARDED)
    events = as_json.events()
    kinds = [e["type"] for e in events]
    truncated = next(i for i, e in enumerate(events) if e["type"] == "turn_end" and e["truncated"])
    streamed = "".join(e["text"] for e in events[:truncated] if e["type"] == "text_delta")
    assert LOST_TASK_ANSWER in streamed  # streamed, then declared discarded by its turn_end
    result = events[-1]
    assert kinds[-1] == "result" and result["ending"] == "context_overflow" and result["answer"] == ""


def test_where_the_window_is_a_guess_answers_are_held_and_it_says_so_once(tmp_path: Path) -> None:
    replies = iter([Reply(text="First answer.", prompt_tokens=900), Reply(text="Second.", prompt_tokens=950)])
    with LiveServer(make_openai_app(lambda body: next(replies))) as server:
        out = run_cli("-w", str(tmp_path), "--base-url", server.url, "-m", "test-model", "hello")
    assert out.code == 0, out.err
    note = HELD_NOTE.format(server="openai")
    assert out.out.count(note) == 1 and out.out.index(note) < out.out.index("First answer.")
