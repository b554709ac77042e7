"""`aforo serve --compact`: the gateway compacts the conversation itself, through the governor (a
checkpoint first, the summary asked of the same server), sends the compacted one, and names the
checkpoint in a header."""

from __future__ import annotations

import json

import httpx

from aforo.store.checkpoints import CheckpointStore
from aforo.store.paths import checkpoints_dir
from aforo.store.telemetry import Telemetry
from dialects.truncating_app import TruncatingServer, reader_policy
from serve.gateway_support import gateway
from support.cli import run_cli

TASK = "TASK-KEY-42: explain what the modules in this project do."


def long_chat(notes: int) -> list[dict[str, str]]:
    messages = [{"role": "user", "content": TASK}]
    for i in range(notes):
        messages += [
            {"role": "assistant", "content": f"ack {i}"},
            {"role": "user", "content": f"note {i}: " + "lorem ipsum " * 33},
        ]
    return messages


def test_a_conversation_past_compact_at_is_compacted_checkpointed_and_sent() -> None:
    server = TruncatingServer(reader_policy("TASK-KEY-42", []), window=8192)
    body = {"model": "test-model", "messages": long_chat(24)}
    with gateway(server.app, window=4096, compact=True) as (url, _):
        resp = httpx.post(f"{url}/v1/chat/completions", json=body)
    assert resp.status_code == 200, resp.text
    header = resp.headers["x-aforo-compacted"]
    assert header.startswith("compacted: 49 messages -> ")
    checkpoint = header.rsplit("checkpoint ", 1)[1]
    # The summary went upstream, then the compacted conversation, which fits. Since the compacted
    # conversation re-attaches the goal and the newest five requests only (issue 38), one request of the
    # truncation check (the conversation without its newest message) goes between them.
    summary, *measured, sent = server.turns
    assert len(measured) <= 1 and all(m.messages[0]["role"] != "system" for m in measured)
    assert all(t.dropped == 0 for t in server.turns)
    assert sent.total < summary.total
    assert any("TASK-KEY-42" in str(m.get("content")) for m in sent.messages)  # the task survived
    assert int(resp.headers["x-aforo-context-used"]) < 3072
    # The checkpoint holds what the client sent, whole.
    store = CheckpointStore(checkpoints_dir())
    (entry,) = [e for e in store.list(_session()) if checkpoint in e.path.name]
    kept = store.load(entry.path)
    assert len(kept.messages) == 49 and TASK in kept.messages[0].text
    with Telemetry() as telemetry:
        assert [r["event"] for r in telemetry.rows()].count("compaction") == 1
    # What was sent before, ready to send again.
    shown = run_cli("serve", "--checkpoint", checkpoint)
    assert shown.code == 0, shown.err
    restored = json.loads(shown.out)["messages"]
    assert len(restored) == 49 and restored[0] == {"role": "user", "content": TASK}
    assert run_cli("serve", "--checkpoint", "no-such-id").code == 1


def _session() -> str:
    with Telemetry() as telemetry:
        return next(r["session"] for r in telemetry.rows() if r["event"] == "compaction")
