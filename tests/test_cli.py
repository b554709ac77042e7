"""The CLI end to end, as a subprocess against a real OpenAI-compatible HTTP server on 127.0.0.1."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from dialects.openai_app import Call, Failure, Reply, make_openai_app
from support.cli import run_cli
from support.live_server import LiveServer


def demo(tmp_path: Path) -> Path:
    ws = tmp_path / "demo"
    ws.mkdir()
    (ws / "app.py").write_text("def main():\n    print('hello')\n")
    (ws / "README.md").write_text("# Demo\nA tiny app.\n")
    (tmp_path / "outside.txt").write_text("OUTSIDE-SECRET")
    return ws


def reader(body: dict[str, Any]) -> Reply:
    """Globs, then reads app.py (and tries a file outside), then answers from what it read."""
    tool_msgs = [m for m in body["messages"] if m["role"] == "tool"]
    if not tool_msgs:
        return Reply(calls=[Call("Glob", json.dumps({"pattern": "*"}))], prompt_tokens=300)
    if len(tool_msgs) == 1:
        return Reply(
            calls=[
                Call("Read", json.dumps({"file_path": "app.py"})),
                Call("Read", json.dumps({"file_path": "../outside.txt"})),
            ],
            prompt_tokens=380,
        )
    leaked = any("OUTSIDE-SECRET" in m["content"] for m in tool_msgs)
    text = "It prints hello from main() in app.py." + (" LEAKED" if leaked else "")
    return Reply(text=text, prompt_tokens=470, completion_tokens=12)


def test_one_shot_prints_calls_results_and_the_ending(tmp_path: Path) -> None:
    ws = demo(tmp_path)
    with LiveServer(make_openai_app(reader)) as server:
        run = run_cli(
            "--workspace", str(ws), "--base-url", f"{server.url}/v1", "--model", "test-model", "What?"
        )
    assert run.code == 0, run.err
    out = run.out
    assert f"workspace: {ws}" in out
    assert '> Glob {"pattern":"*"}' in out
    assert '> Read {"file_path":"app.py"}' in out
    # Each result with its size: lines, bytes and estimated tokens.
    assert re.search(r"^  ok \(\d+ ms; \d+ lines?, \d+(\.\d)? (B|KiB), ~\d+ tokens\)$", out, re.M)
    assert re.search(r"^  error: .*outside", out, re.M | re.I)
    assert re.search(r"^ctx \d+/4\.1k \(\d+%\) est$", out, re.M)
    assert "It prints hello from main() in app.py." in out and "LEAKED" not in out
    assert out.rstrip().endswith("[end_turn] 3 turns, 3 tool calls, 1150 input tokens, 22 output tokens")
    assert "! The context window is not set: assuming 4096 tokens" in run.err
    assert "\x1b[" not in out  # no ANSI when stdout is not a terminal


def test_json_event_stream(tmp_path: Path) -> None:
    ws = demo(tmp_path)
    with LiveServer(make_openai_app(reader)) as server:
        run = run_cli("-w", str(ws), "--base-url", server.url, "-m", "test-model", "--json", "What?")
    assert run.code == 0, run.err
    events = run.events()
    kinds = [e["type"] for e in events]
    assert kinds[-2:] == ["run_end", "result"] and kinds.count("turn_end") == 3
    assert {"info", "warning", "tool_start", "tool_end", "text_delta"} <= set(kinds)
    end = run.run_end()
    assert (end["reason"], end["turns"], end["tool_calls"]) == ("end_turn", 3, 3)
    turn = next(e for e in events if e["type"] == "turn_end")
    assert turn["window"] == 4096 and turn["usage"]["input_tokens"] == 300


def test_window_from_the_catalog_needs_no_warning(tmp_path: Path) -> None:
    ws = demo(tmp_path)
    app = make_openai_app(reader, models={"test-model": 8192}, window_field="max_model_len")
    with LiveServer(app) as server:
        run = run_cli("-w", str(ws), "--base-url", f"{server.url}/v1", "-m", "test-model", "What?")
    assert run.code == 0, run.err
    assert "assuming 4096" not in run.err
    assert "/8.2k (" in run.out


@pytest.mark.parametrize(
    ("status", "body", "code"),
    [
        (500, '{"error": {"message": "boom"}}', 1),
        (
            400,
            '{"error":{"code":400,"message":"request (6815 tokens) exceeds the available context size '
            '(4096 tokens), try increasing it","type":"exceed_context_size_error","n_prompt_tokens":6815,'
            '"n_ctx":4096}}',
            3,
        ),
    ],
)
def test_http_errors_map_to_exit_codes(tmp_path: Path, status: int, body: str, code: int) -> None:
    ws = demo(tmp_path)
    with LiveServer(make_openai_app(lambda b: Failure(status, body))) as server:
        run = run_cli("-w", str(ws), "--base-url", server.url, "-m", "test-model", "What?")
    assert run.code == code, run.out + run.err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--context-window", "0"], "context_window must be a positive"),
        (["--workspace", "/nonexistent/dir"], "not a directory"),
    ],
)
def test_usage_errors_exit_2(tmp_path: Path, args: list[str], message: str) -> None:
    run = run_cli("-w", str(tmp_path), *args, "--base-url", "http://127.0.0.1:9/v1", "-m", "m", "q")
    assert run.code == 2 and message in run.err


def test_unknown_config_key_is_named(tmp_path: Path) -> None:
    (tmp_path / ".aforo.toml").write_text("contxt_window = 4096\n")
    run = run_cli("-w", str(tmp_path), "--base-url", "http://127.0.0.1:9/v1", "-m", "m", "q")
    assert run.code == 2 and "contxt_window" in run.err


def test_agents_md_is_sent_as_second_system_part(tmp_path: Path) -> None:
    ws = demo(tmp_path)
    (ws / "AGENTS.md").write_text("Always answer in Spanish.\n")
    seen: list[dict[str, Any]] = []

    def answer(body: dict[str, Any]) -> Reply:
        seen.append(body)
        return Reply(text="Hola.", prompt_tokens=900)

    with LiveServer(make_openai_app(answer)) as server:
        run = run_cli("-w", str(ws), "--base-url", server.url, "-m", "test-model", "hi")
    assert run.code == 0, run.err
    system = seen[0]["messages"][0]
    assert system["role"] == "system"
    assert (
        '# Project instructions\n<project_instructions path="AGENTS.md">\nAlways answer in Spanish.\n'
        in (system["content"])
    )
    # The workspace is named, never spelled out: the request is the same wherever the checkout lives.
    assert f'the workspace "{ws.name}"' in system["content"]
    assert str(ws.parent) not in system["content"]


def test_temperature_reaches_the_server_and_is_validated(tmp_path: Path) -> None:
    seen: list[dict[str, Any]] = []

    def answer(body: dict[str, Any]) -> Reply:
        seen.append(body)
        return Reply(text="ok", prompt_tokens=800)

    with LiveServer(make_openai_app(answer)) as server:
        run = run_cli(
            "-w", str(tmp_path), "--base-url", server.url, "-m", "test-model", "--temperature", "0", "q"
        )
        bad = run_cli(
            "-w", str(tmp_path), "--base-url", server.url, "-m", "test-model", "--temperature", "-1", "q"
        )
    assert run.code == 0, run.err
    assert seen[0]["temperature"] == 0
    assert bad.code == 2 and "temperature" in bad.err
