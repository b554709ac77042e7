"""examples/overflow.py against a server that truncates like Ollama: HTTP 200 and the task key gone."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from dialects.openai_app import Failure, Reply, make_openai_app
from dialects.truncating_app import Seen, TruncatingServer
from support.live_server import LiveServer

EXAMPLE = Path(__file__).parents[1] / "examples" / "overflow.py"


def echo_keys(seen: Seen) -> Reply:
    """A model that answers with every key it can see."""
    text = " ".join(str(m.get("content")) for m in seen.messages)
    keys = [k for k in ("ALFA-3141", "BRAVO-2718") if k in text]
    return Reply(text=" ".join(keys) or "I do not know.")


def run_example(url: str) -> str:
    proc = subprocess.run(
        [sys.executable, str(EXAMPLE), "--base-url", url, "--model", "test-model"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_silent_truncation_loses_the_task_key() -> None:
    server = TruncatingServer(echo_keys, window=4096, mode="ollama")
    with LiveServer(server.app) as live:
        out = run_example(f"{live.url}/v1")
    assert "conversation: 27 messages" in out
    assert "HTTP 200 · finish: end_turn" in out
    assert "system key (ALFA-3141): appears" in out
    assert "task key (BRAVO-2718): does NOT appear" in out
    assert server.turns[0].dropped > 0 and server.turns[0].reported <= 4096


def test_a_window_that_fits_keeps_both_keys() -> None:
    server = TruncatingServer(echo_keys, window=32768, mode="ollama")
    with LiveServer(server.app) as live:
        out = run_example(f"{live.url}/v1")
    assert "task key (BRAVO-2718): appears" in out and "system key (ALFA-3141): appears" in out


def test_a_loud_server_refusal_is_reported_with_its_numbers() -> None:
    body = (
        '{"error":{"code":400,"message":"request (6815 tokens) exceeds the available context size (4096 '
        'tokens), try increasing it","type":"exceed_context_size_error","n_prompt_tokens":6815,"n_ctx":4096}}'
    )
    with LiveServer(make_openai_app(lambda _body: Failure(400, body))) as live:
        out = run_example(f"{live.url}/v1")
    assert "the server refused it as too long (prompt 6815 tokens, n_ctx 4096)" in out
