"""One governor, two front doors: the gateway reaches it through the loop's own entry points, so a
threshold of `Policy` moves both. Run here with `--compact`, where the gateway may transform."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from aforo.context.policy import Policy
from aforo.messages import CLEARED_NOTE
from aforo.providers.fake import FakeProvider
from dialects.openai_app import Reply
from dialects.truncating_app import TruncatingServer
from serve.gateway_support import gateway
from support.scenario import TASK_KEY, make_agent, make_files, reader_model

EAGER = Policy(clear_at=0.1, keep_tool_results=0)  # the one change: clear at 10 % instead of 60 %
RESULT = "def f(x):\n    return x * 2  # a line of the file\n" * 40  # ~2 000 characters


def client_conversation() -> list[dict]:
    """A client's conversation in OpenAI's words: three files read, answered, and a follow-up."""
    messages: list[dict] = [{"role": "user", "content": "Read mod00.py to mod02.py and compare them."}]
    for i in range(3):
        call = {
            "id": f"c{i}",
            "type": "function",
            "function": {"name": "Read", "arguments": json.dumps({"file_path": f"mod0{i}.py"})},
        }
        messages += [
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"c{i}", "content": RESULT},
        ]
    messages += [
        {"role": "assistant", "content": "They differ in their factors."},
        {"role": "user", "content": "Which is the longest?"},
    ]
    return messages


def through_gateway(policy: Policy) -> tuple[list[dict], httpx.Response]:
    """What the server read of the last request, and what the client got."""
    server = TruncatingServer(lambda seen: Reply(text="mod02.py"), window=32768)
    body = {"model": "test-model", "messages": client_conversation()}
    with gateway(server.app, window=8192, compact=True, policy=policy) as (url, _):
        resp = httpx.post(f"{url}/v1/chat/completions", json=body)
    return server.turns[-1].messages, resp


def loop_actions(tmp_path: Path, policy: Policy) -> list[str]:
    files = make_files(tmp_path, 3, 2000)
    agent, rec, _ = make_agent(
        tmp_path, FakeProvider(reader_model(files, batch=1)), window=8192, policy=policy
    )
    assert agent.run(f"Task {TASK_KEY}: read mod*.py one by one, say which is longest.").reason == "end_turn"
    return [e.action for e in rec.of("context")]


@pytest.mark.parametrize("policy", [Policy(), EAGER], ids=["default", "clear-at-10%"])
def test_one_threshold_of_the_policy_moves_the_loop_and_the_gateway_alike(
    tmp_path: Path, policy: Policy
) -> None:
    sent, resp = through_gateway(policy)
    cleared_upstream = [m for m in sent if m["role"] == "tool" and m["content"] == CLEARED_NOTE]
    cleared_in_loop = "cleared" in loop_actions(tmp_path, policy)
    assert resp.status_code == 200, resp.text
    if policy == EAGER:
        assert cleared_in_loop
        assert len(cleared_upstream) == 3
        assert resp.headers["x-aforo-compacted"].startswith("cleared: 9 messages -> 9; checkpoint ")
    else:
        assert not cleared_in_loop
        assert cleared_upstream == []
        assert "x-aforo-compacted" not in resp.headers
