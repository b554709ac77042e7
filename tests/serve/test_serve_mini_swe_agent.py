"""mini-swe-agent (pinned, in its own venv), run as its users run it (`mini -y --exit-immediately`, its
default config: tool calls through litellm), pointed at `aforo serve` in front of a server that drops
the oldest messages and answers 200. The agent's conversation grows with each command's output until it
crosses the server's real window: without the gateway the agent then submits an answer that lost the
task, and nothing tells it; through the gateway litellm raises its ContextWindowExceededError (the agent,
which has no compaction of its own, stops saying so), and with `--compact` the agent finishes its task."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dialects.openai_app import Call, Reply
from dialects.truncating_app import LOST_TASK_ANSWER, Policy, Seen, TruncatingServer
from serve.gateway_support import gateway
from serve.third_party import INSTALL_TIMEOUT_S, mini
from support.live_server import LiveServer

pytestmark = [pytest.mark.real, pytest.mark.timeout(INSTALL_TIMEOUT_S + 300)]

MARKER = "TASK-KEY-42"
SUBMIT = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && echo "
DONE = f"{MARKER}: done"
SUMMARY = "Looked at the files already."
STEPS = 12
TASK = f"{MARKER}: list what this folder holds."
# Each step's output: ~500 characters, the conversation grows by ~150 tokens a step.
LOOK = "yes 'lorem ipsum dolor sit amet' | head -n 18"


def bash(command: str) -> Reply:
    return Reply(text="THOUGHT: next.", calls=[Call("bash", json.dumps({"command": command}))])


def agent_policy(steps: int) -> Policy:
    """A model that, while it sees the task, looks at `steps` outputs, then submits its answer; once
    it sees a summary (the gateway compacted) it submits at once. Without the task it submits the
    generic answer a model gives when it lost it. A request without tools is a compaction."""

    def policy(seen: Seen) -> Reply:
        texts = [m["content"] for m in seen.messages if isinstance(m.get("content"), str)]
        if not seen.tools:
            return Reply(text=f"Goal: {MARKER} (the user's task). {SUMMARY}")
        if not any(MARKER in t for t in texts):
            return bash(SUBMIT + repr(LOST_TASK_ANSWER))
        summarized = any(SUMMARY in t for t in texts)
        looked = sum(1 for m in seen.messages if m.get("role") == "tool")
        return bash(SUBMIT + repr(DONE)) if looked >= steps or summarized else bash(LOOK)

    return policy


def server(window: int, steps: int = STEPS) -> TruncatingServer:
    return TruncatingServer(agent_policy(steps), window=window, mode="ollama")


def test_without_the_gateway_the_agent_submits_an_answer_that_lost_the_task(tmp_path: Path) -> None:
    truncating = server(2048)
    with LiveServer(truncating.app) as bare:
        done, saved = mini(bare.url, tmp_path / "run", task=TASK, steps=STEPS * 2)
    assert done.returncode == 0, done.stderr[-3000:]
    assert saved["info"]["exit_status"] == "Submitted"
    assert saved["info"]["submission"].strip() == LOST_TASK_ANSWER
    assert any(turn.dropped for turn in truncating.turns)


def test_through_the_gateway_the_agent_stops_with_its_context_window_error(tmp_path: Path) -> None:
    # The user told aforo the window they believe (8192); the server runs 2048 and drops silently.
    with gateway(server(2048).app, window=8192) as (url, _):
        done, saved = mini(url, tmp_path / "run", task=TASK, steps=STEPS * 2)
    assert done.returncode != 0
    assert saved["info"]["exit_status"] == "ContextWindowExceededError"
    assert saved["info"]["submission"] == ""
    assert LOST_TASK_ANSWER not in json.dumps(saved["messages"])


def test_through_the_gateway_with_compact_the_agent_finishes_its_task(tmp_path: Path) -> None:
    # 40 steps would take the conversation far past the server's 4096: the gateway compacts it first
    # (the agent itself never does), the model reads the summary, which kept the task, and finishes.
    steps = 40
    truncating = server(4096, steps)
    with gateway(truncating.app, window=4096, compact=True) as (url, _):
        done, saved = mini(url, tmp_path / "run", task=TASK, steps=steps * 2)
    assert done.returncode == 0, done.stderr[-3000:]
    assert saved["info"]["exit_status"] == "Submitted"
    assert saved["info"]["submission"].strip() == DONE
    assert all(turn.dropped == 0 for turn in truncating.turns)
    summarized = [t for t in truncating.turns if any(SUMMARY in str(m.get("content")) for m in t.messages)]
    assert summarized
