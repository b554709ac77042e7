"""Sessions end to end (no terminal): every one-shot run is saved, listed, resumed; a corrupt or foreign
session is never silently used."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from aforo.messages import Message, ToolUse
from aforo.store.sessions import SessionRecord, SessionStore
from dialects.openai_app import Reply, make_openai_app
from support.cli import run_cli
from support.live_server import LiveServer


def tokens(body: dict[str, Any]) -> int:
    return (len(json.dumps(body["messages"])) + len(json.dumps(body.get("tools", [])))) // 4


class Echo:
    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []

    def __call__(self, body: dict[str, Any]) -> Reply:
        self.bodies.append(body)
        return Reply(text=f"answer to {len(body['messages'])} messages", prompt_tokens=tokens(body))


def only_session(home: Path) -> SessionRecord:
    store = SessionStore(home / "sessions")
    (summary,) = store.list()
    return store.load(summary.id)


def test_one_shot_is_saved_listed_and_resumed(tmp_path: Path, aforo_home: Path) -> None:
    model = Echo()
    with LiveServer(make_openai_app(model)) as server:
        flags = ("-w", str(tmp_path), "--base-url", server.url, "-m", "test-model")
        first = run_cli(*flags, "What is the first key?")
        assert first.code == 0, first.err
        saved = only_session(aforo_home)
        assert [m.role for m in saved.messages] == ["user", "assistant"]
        assert saved.model == "test-model" and saved.workspace == str(tmp_path.resolve())
        listing = run_cli("sessions", "-w", str(tmp_path))
        assert saved.id in listing.out and "What is the first key?" in listing.out

        again = run_cli(*flags, "--resume", "And the second?")
        assert again.code == 0, again.err
        assert f"session: {saved.id} (resumed: 2 messages)" in again.out
    sent = [m["content"] for m in model.bodies[-1]["messages"] if m["role"] != "system"]
    assert sent == ["What is the first key?", "answer to 2 messages", "And the second?"]
    assert len(only_session(aforo_home).messages) == 4


def test_resume_by_id_warns_about_another_workspace_and_model(tmp_path: Path, aforo_home: Path) -> None:
    store = SessionStore(aforo_home / "sessions")
    rec = SessionRecord(id=store.new_id(), workspace="/somewhere/else", model="old-model")
    rec.messages = [Message.user("earlier question"), Message.assistant("earlier answer")]
    store.save(rec)
    model = Echo()
    with LiveServer(make_openai_app(model)) as server:
        run = run_cli(
            "-w", str(tmp_path), "--base-url", server.url, "-m", "test-model", "--resume", rec.id, "go"
        )
    assert run.code == 0, run.err
    assert "held in the workspace /somewhere/else" in run.err
    assert "held with the model old-model" in run.err
    assert len(model.bodies[-1]["messages"]) == 4  # system + the two saved + the new prompt


def test_dangling_tool_call_is_closed_on_resume(tmp_path: Path, aforo_home: Path) -> None:
    store = SessionStore(aforo_home / "sessions")
    rec = SessionRecord(id=store.new_id(), workspace=str(tmp_path.resolve()), model="test-model")
    call = ToolUse("call_9", "Read", {"file_path": "a.py"})
    rec.messages = [Message.user("read a.py"), Message("assistant", (call,))]
    store.save(rec)
    model = Echo()
    with LiveServer(make_openai_app(model)) as server:
        run = run_cli("-w", str(tmp_path), "--base-url", server.url, "--resume", "continue")
    assert run.code == 0, run.err
    roles = [m["role"] for m in model.bodies[-1]["messages"]]
    assert roles == ["system", "user", "assistant", "tool", "user"]
    tool = model.bodies[-1]["messages"][3]
    assert tool["tool_call_id"] == "call_9" and "stopped before this tool call finished" in tool["content"]


def test_corrupt_session_is_an_error_never_used(tmp_path: Path, aforo_home: Path) -> None:
    sessions = aforo_home / "sessions"
    sessions.mkdir(parents=True)
    sid = "20250101-120000-deadbeef"
    (sessions / f"{sid}.json").write_text('{"kind": "aforo.session", "schema_ver')
    run = run_cli("-w", str(tmp_path), "--base-url", "http://127.0.0.1:9/v1", "-m", "m", "--resume", sid, "q")
    assert run.code == 2 and "corrupt" in run.err and sid in run.err
    latest = run_cli("-w", str(tmp_path), "--base-url", "http://127.0.0.1:9/v1", "-m", "m", "--resume", "q")
    assert latest.code == 2 and "no saved session" in latest.err and "unreadable" in latest.err


def test_resume_of_an_unknown_id_says_how_to_list(tmp_path: Path) -> None:
    run = run_cli("-w", str(tmp_path), "-m", "m", "--resume", "20250101-120000-00000000", "q")
    assert run.code == 2 and "aforo sessions" in run.err


def test_resume_latest_takes_this_workspaces_newest_session(tmp_path: Path, aforo_home: Path) -> None:
    store = SessionStore(aforo_home / "sessions")
    here, there = tmp_path / "here", tmp_path / "there"
    here.mkdir()
    there.mkdir()
    for workspace, question in ((here, "older here"), (here, "newer here"), (there, "newest, elsewhere")):
        rec = SessionRecord(id=store.new_id(), workspace=str(workspace.resolve()), model="test-model")
        rec.messages = [Message.user(question), Message.assistant("ok")]
        store.save(rec)  # `updated_at` orders them: each save is later than the one before
    model = Echo()
    with LiveServer(make_openai_app(model)) as server:
        run = run_cli("-w", str(here), "--base-url", server.url, "-m", "test-model", "--resume", "go")
    assert run.code == 0, run.err
    sent = [m["content"] for m in model.bodies[-1]["messages"] if m["role"] != "system"]
    assert sent == ["newer here", "ok", "go"]


def test_a_session_saved_by_a_newer_aforo_is_refused_with_upgrade_advice(
    tmp_path: Path, aforo_home: Path
) -> None:
    store = SessionStore(aforo_home / "sessions")
    rec = SessionRecord(id=store.new_id(), workspace=str(tmp_path.resolve()))
    path = store.save(rec)
    path.write_text(json.dumps({**json.loads(path.read_text()), "schema_version": 99}))
    run = run_cli(
        "-w", str(tmp_path), "--base-url", "http://127.0.0.1:9/v1", "-m", "m", "--resume", rec.id, "q"
    )
    assert run.code == 2 and "newer aforo" in run.err and "Upgrade aforo" in run.err
