"""First contact without a server: one message that names the URL tried, the servers aforo knows, how to
start one and `aforo --local`; exit 1; nothing saved; no REPL (the pty side is in test_terminal_pty)."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from starlette.applications import Starlette

from aforo.cli.first_contact import no_server_message
from aforo.server_kinds import SERVER_KINDS
from support.cli import run_cli
from support.live_server import LiveServer, free_port

SCHEMA = json.loads((Path(__file__).parents[1] / "docs" / "json-events.schema.json").read_text())


def nothing_saved(aforo_home: Path) -> bool:
    sessions = aforo_home / "sessions"
    return not sessions.exists() or not any(p.is_file() for p in sessions.rglob("*"))


@pytest.mark.parametrize("model", [[], ["-m", "qwen"]], ids=["no model", "with -m"])
def test_no_server_is_one_message_naming_the_cause(
    tmp_path: Path, aforo_home: Path, model: list[str]
) -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    run = run_cli("-w", str(tmp_path), "--base-url", url, *model, "What does this do?")
    assert run.code == 1
    assert run.out == ""  # no run started: no window, no session line, no ending line
    assert run.err.startswith(f"aforo: no server answers at {url} (connection refused")
    assert run.err.count("aforo:") == 1  # one message, not a warning and then the error
    for kind in SERVER_KINDS:
        assert kind in run.err
    assert "ollama serve" in run.err and "llama-server -m" in run.err and "aforo --local" in run.err
    assert "--model" not in run.err and "assuming" not in run.err  # not the wrong cause, no window warning
    assert nothing_saved(aforo_home)


def test_no_server_with_json_ends_with_a_result_event(tmp_path: Path, aforo_home: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    run = run_cli("-w", str(tmp_path), "--base-url", url, "--json", "q")
    events = run.events()
    assert run.code == 1 and [e["type"] for e in events] == ["result"]
    jsonschema.validate(events[0], SCHEMA)
    assert (events[0]["ending"], events[0]["exit_code"]) == ("error", 1) and url in events[0]["error"]
    assert events[0]["session"] is None and nothing_saved(aforo_home)


def test_a_server_that_answers_anything_is_there(tmp_path: Path, aforo_home: Path) -> None:
    # Every path a 404: not "no server", the run goes on and fails on what is really wrong.
    with LiveServer(Starlette()) as server:
        run = run_cli("-w", str(tmp_path), "--base-url", server.url, "-m", "m", "q")
    assert run.code == 1 and "no server answers" not in run.err
    assert "404" in run.err or "404" in run.out
    assert not nothing_saved(aforo_home)  # a run that started is a session, as always


def test_the_message_says_where_the_url_came_from() -> None:
    assert "aforo's default, where Ollama listens" in no_server_message(
        "http://127.0.0.1:11434/v1", "default", "x"
    )
    assert "set by OPENAI_BASE_URL" in no_server_message("http://h:1/v1", "OPENAI_BASE_URL", "x")
