"""aforo's own state against hostile or unlucky inputs: bytes that are not UTF-8 everywhere, a session
file nested without end, oversized files, two writers, a telemetry database changed by hand."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aforo.errors import SessionBusy, StateLimitExceeded, StoreError
from aforo.limits import JSON_DEPTH, Limit
from aforo.messages import Message, TextBlock, ToolResult, ToolUse
from aforo.store import checkpoints as checkpoints_module
from aforo.store import sessions as sessions_module
from aforo.store.atomic import encode_json
from aforo.store.checkpoints import Checkpoint, CheckpointStore
from aforo.store.sessions import SessionRecord, SessionStore
from aforo.store.telemetry import Telemetry
from faults.server import Behave, deep_json, misbehaving_app, ok_sse, tool_call_sse
from support.cli import AFORO, CliRun, run_cli
from support.live_server import LiveServer

PROMPT = b"why \xff\xfe? caf\xe9"


@pytest.fixture
def server() -> Iterator[object]:
    servers: list[LiveServer] = []

    def start(behave: Behave) -> str:
        live = LiveServer(misbehaving_app(behave)).__enter__()
        servers.append(live)
        return f"{live.url}/v1"

    yield start
    for live in servers:
        live.__exit__()


def run_bytes(*args: bytes, stdin: bytes = b"", strict: bool = True) -> CliRun:
    """The CLI with raw bytes in argv and stdin; `strict`: a terminal that takes only valid UTF-8."""
    env = {**os.environ, **({"PYTHONIOENCODING": "utf-8:strict"} if strict else {})}
    proc = subprocess.run([AFORO.encode(), *args], input=stdin, capture_output=True, env=env, timeout=60)
    out, err = proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace")
    assert "Traceback" not in err, err
    return CliRun(proc.returncode, out, err)


def sessions(home: Path) -> SessionStore:
    return SessionStore(home / "sessions")


def only_record(home: Path) -> SessionRecord:
    (summary,) = sessions(home).list()
    assert summary.error is None, summary.error
    return sessions(home).load(summary.id)


# --- bytes that are not UTF-8 ----------------------------------------------------------------------


def test_prompt_in_argv_with_bytes_that_are_not_utf8_is_saved_losslessly(
    server: object, tmp_path: Path, aforo_home: Path
) -> None:
    url = server(lambda n: ok_sse("fine"))  # type: ignore[operator]
    run = run_bytes(
        b"-w", bytes(tmp_path), b"--base-url", url.encode(), b"--server", b"openai", b"-m", b"m", PROMPT
    )
    assert run.code == 0
    assert only_record(aforo_home).messages[0].text == os.fsdecode(PROMPT)
    listing = run_bytes(b"sessions", b"--all")
    assert listing.code == 0 and "why \\udcff\\udcfe?" in listing.out


def test_prompt_on_stdin_with_bytes_that_are_not_utf8_is_saved_losslessly(
    server: object, tmp_path: Path, aforo_home: Path
) -> None:
    url = server(lambda n: ok_sse("fine"))  # type: ignore[operator]
    run = run_bytes(
        b"-w", bytes(tmp_path), b"--base-url", url.encode(), b"--server", b"openai", b"-m", b"m", stdin=PROMPT
    )
    assert run.code == 0
    assert only_record(aforo_home).messages[0].text == os.fsdecode(PROMPT)


def test_workspace_path_and_file_name_that_are_not_utf8_save_resume_and_reach_the_model(
    server: object, tmp_path: Path, aforo_home: Path
) -> None:
    workspace = bytes(tmp_path) + b"/w\xfe"
    os.mkdir(workspace)
    with open(workspace + b"/caf\xe9.py", "w") as fh:
        fh.write("x = 1\n")
    answers = [tool_call_sse(("call_1", "LS", "{}")), ok_sse("listed"), ok_sse("again")]
    app_url = server(lambda n: answers[n - 1])  # type: ignore[operator]
    flags = (b"-w", workspace, b"--base-url", app_url.encode(), b"--server", b"openai", b"-m", b"m")
    first = run_bytes(*flags, b"list it")
    assert first.code == 0
    record = only_record(aforo_home)
    assert record.workspace == os.fsdecode(workspace)
    listed = [b for m in record.messages for b in m.content if isinstance(b, ToolResult)]
    assert "caf\\xe9.py" in listed[0].content  # the name as the tools show it, reversible
    again = run_bytes(*flags, b"--resume", b"and?")
    assert again.code == 0 and "resumed" in again.out
    assert len(only_record(aforo_home).messages) == 6


@given(st.text())
def test_state_json_round_trips_any_string(text: str) -> None:
    data = {"text": text, text: [text]}
    raw = encode_json(data)
    raw.decode("utf-8")  # always valid UTF-8
    assert json.loads(raw) == data


def test_checkpoint_with_surrogates_round_trips(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path)
    name = os.fsdecode(b"caf\xe9.py")
    cp = Checkpoint(session_id="s1", reason="compact", goal=f"read {name}", messages=[Message.user(name)])
    loaded = store.load(store.write(cp))
    assert loaded.goal == f"read {name}" and loaded.messages[0].text == name


# --- a session file nested without end ----------------------------------------------------------


def save(home: Path, workspace: Path, text: str) -> SessionRecord:
    rec = SessionRecord(id=SessionStore.new_id(), workspace=str(workspace.resolve()), model="m")
    rec.messages = [Message.user(text), Message.assistant("answer")]
    sessions(home).save(rec)
    return rec


def test_one_deep_session_file_is_named_and_skipped_not_a_crash_for_all(
    server: object, tmp_path: Path, aforo_home: Path
) -> None:
    good = save(aforo_home, tmp_path, "the good one")
    bad = aforo_home / "sessions" / "20990101-000000-deadbeef.json"
    bad.write_text(deep_json(100_000))
    listing = run_cli("sessions", "--all")
    assert listing.code == 0, listing.err
    assert good.id in listing.out
    assert "20990101-000000-deadbeef" in listing.out and "unreadable" in listing.out
    assert "state_json_depth" in listing.out

    url = server(lambda n: ok_sse("resumed fine"))  # type: ignore[operator]
    flags = ("-w", str(tmp_path), "--base-url", url, "--server", "openai", "-m", "m")
    resumed = run_cli(*flags, "--resume", "and?")
    assert resumed.code == 0, resumed.err
    assert good.id in resumed.out and str(bad) in resumed.out + resumed.err
    direct = run_cli(*flags, "--resume", "20990101-000000-deadbeef", "and?")
    assert direct.code == 2 and "state_json_depth" in direct.err and "Traceback" not in direct.err


def test_a_tool_input_as_deep_as_json_depth_allows_still_saves_and_loads(
    aforo_home: Path, tmp_path: Path
) -> None:
    deep: object = {}
    for _ in range(int(JSON_DEPTH.value) - 1):
        deep = {"a": deep}
    rec = SessionRecord(id=SessionStore.new_id(), workspace=str(tmp_path))
    rec.messages = [Message.user("go"), Message("assistant", (ToolUse("c1", "Read", {"x": deep}),))]
    sessions(aforo_home).save(rec)
    assert sessions(aforo_home).load(rec.id).messages[1].tool_uses[0].input == {"x": deep}


# --- sizes -------------------------------------------------------------------------------------


def test_a_session_over_its_size_limit_is_not_written_and_the_last_save_stays(
    aforo_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = sessions(aforo_home)
    rec = save(aforo_home, tmp_path, "small")
    monkeypatch.setattr(sessions_module, "SESSION_BYTES", Limit("session_bytes", 4096, "bytes", "test"))
    rec.messages = [*rec.messages, Message.user("x" * 10_000)]
    with pytest.raises(StateLimitExceeded) as caught:
        store.save(rec)
    assert caught.value.limit.name == "session_bytes"
    assert [m.text for m in store.load(rec.id).messages] == ["small", "answer"]


def test_a_session_file_over_the_size_limit_is_listed_as_unreadable(
    aforo_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rec = save(aforo_home, tmp_path, "y" * 10_000)
    monkeypatch.setattr(sessions_module, "SESSION_BYTES", Limit("session_bytes", 4096, "bytes", "test"))
    (summary,) = sessions(aforo_home).list()
    assert summary.id == rec.id and summary.error is not None and "session_bytes" in summary.error


def test_a_checkpoint_over_its_size_limit_is_refused_on_write_and_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = CheckpointStore(tmp_path)
    path = store.write(Checkpoint(session_id="s1", reason="compact", messages=[Message.user("z" * 10_000)]))
    monkeypatch.setattr(
        checkpoints_module, "CHECKPOINT_BYTES", Limit("checkpoint_bytes", 4096, "bytes", "test")
    )
    with pytest.raises(StateLimitExceeded):
        store.load(path)
    with pytest.raises(StateLimitExceeded):
        store.write(Checkpoint(session_id="s1", reason="compact", messages=[Message.user("z" * 10_000)]))


# --- one writer per session ---------------------------------------------------------------------

HOLDER = """
import sys, time
from pathlib import Path
from aforo.store.sessions import SessionStore
lock = SessionStore(Path(sys.argv[1])).lock(sys.argv[2])
print("held", flush=True)
time.sleep(60)
"""


def test_a_second_process_gets_session_busy_until_the_holder_dies(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    sid = store.new_id()
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(tmp_path), sid], stdout=subprocess.PIPE)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == b"held"
        with pytest.raises(SessionBusy) as caught:
            store.lock(sid)
        assert f"pid {holder.pid}" in str(caught.value)
        assert isinstance(caught.value, StoreError)  # the CLI reports it like any state error
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    with store.lock(sid) as lock:  # a killed holder's lock is gone with it
        assert lock.held
    assert not lock.held


def test_one_process_takes_a_session_again_after_releasing_it(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    first = store.lock("20260101-000000-aaaaaaaa")
    other = store.lock("20260101-000000-bbbbbbbb")  # another session is independent
    first.release()
    store.lock("20260101-000000-aaaaaaaa").release()
    other.release()


# --- telemetry changed by hand --------------------------------------------------------------------


def test_stats_with_a_replaced_events_table_is_a_clear_message(aforo_home: Path) -> None:
    Telemetry().close()
    db = sqlite3.connect(aforo_home / "telemetry.db")
    db.executescript("DROP TABLE events; CREATE TABLE events (x TEXT); INSERT INTO events VALUES ('boo');")
    db.close()
    run = run_cli("stats")
    assert run.code == 1 and "Traceback" not in run.err
    assert "events table" in run.err and "Move the file aside" in run.err


def test_stats_with_garbage_values_still_summarizes(aforo_home: Path) -> None:
    with Telemetry() as telemetry:
        telemetry.record("compaction", session="s", tokens_before=1000, tokens_after=200)
    db = sqlite3.connect(aforo_home / "telemetry.db")
    db.execute(
        "INSERT INTO events (ts, session, event, tokens_before, tokens_after) "
        "VALUES (1, 2, 'clearing', 'a', x'ff')"
    )
    db.commit()
    db.close()
    run = run_cli("stats", "--json")
    assert run.code == 0, run.err
    overall = json.loads(run.out)["overall"]
    assert overall["events"]["compaction"] == 1 and overall["events"]["clearing"] == 1
    assert overall["tokens_saved"]["compaction"] == 800
    assert run_cli("stats").code == 0


def test_telemetry_records_text_that_is_not_utf8(aforo_home: Path) -> None:
    with Telemetry() as telemetry:
        telemetry.record("warning", session="s", cause=os.fsdecode(b"cannot read caf\xe9.py"))
        (row,) = telemetry.rows()
    assert row["cause"] == "cannot read caf\\udce9.py"


def test_a_run_with_a_replaced_telemetry_table_goes_on(
    server: object, tmp_path: Path, aforo_home: Path
) -> None:
    Telemetry().close()
    db = sqlite3.connect(aforo_home / "telemetry.db")
    db.executescript("DROP TABLE events; CREATE TABLE events (x TEXT);")
    db.close()
    url = server(lambda n: ok_sse("fine"))  # type: ignore[operator]
    run = run_cli("-w", str(tmp_path), "--base-url", url, "--server", "openai", "-m", "m", "hi")
    assert run.code == 0 and "Telemetry is off" in run.out + run.err


def test_text_blocks_still_compare_equal_after_a_round_trip(aforo_home: Path, tmp_path: Path) -> None:
    # Surrogates inside every kind of block, through save and load.
    name = os.fsdecode(b"\xff")
    rec = SessionRecord(id=SessionStore.new_id(), workspace=str(tmp_path))
    rec.messages = [
        Message("user", (TextBlock(name),)),
        Message("assistant", (ToolUse("c", "Read", {"file_path": name}),)),
        Message("user", (ToolResult("c", name),)),
    ]
    sessions(aforo_home).save(rec)
    assert sessions(aforo_home).load(rec.id).messages == rec.messages
