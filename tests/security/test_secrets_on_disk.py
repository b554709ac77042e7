"""Secrets that reached disk around redaction (issue 12, breach 3): a title cut before it was redacted,
`.env` values under ordinary key names in the session and every checkpoint, and `.env` content that
came with no file name at all (piped on stdin, quoted back by the answer). Each as a user meets it,
through the real CLI; what is stored is read back as bytes, every file of the state directory."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dialects.openai_app import Reply, make_openai_app
from dialects.truncating_app import TruncatingServer
from support.cli import run_cli
from support.live_server import LiveServer
from support.scenario import make_files
from test_cli_state import two_then_six

PLAIN = "hunter2hunter2"  # the value: no provider prefix, under a key named like any setting
GHP = "ghp_" + "Q7w8E9r0T1y2U3i4O5p6A7s8D9f0G1h2J3k4"


def stored(home: Path) -> dict[str, bytes]:
    """Every file of the state directory (sessions, checkpoints, telemetry, history...), as bytes."""
    return {str(p): p.read_bytes() for p in home.rglob("*") if p.is_file() and "xdg-config" not in p.parts}


def holding(home: Path, secret: str) -> list[str]:
    """The stored files that hold `secret`, or any 8 characters of it (a cut secret leaks its prefix)."""
    chunks = [secret[i : i + 8].encode() for i in range(len(secret) - 7)]
    return [path for path, data in stored(home).items() if any(c in data for c in chunks)]


def test_a_token_the_title_cut_falls_inside_is_neither_stored_nor_listed(
    tmp_path: Path, aforo_home: Path
) -> None:
    prompt = f"Please use my GitHub token {GHP} to list the open issues of acme/app, then summarize them"
    assert prompt.index(GHP) < 60 < prompt.index(GHP) + len(GHP)  # the 60-character title cuts it
    with LiveServer(make_openai_app(lambda body: Reply(text="Done.", prompt_tokens=100))) as server:
        run = run_cli("-w", str(tmp_path), "--base-url", f"{server.url}/v1", "-m", "test-model", prompt)
    assert run.code == 0, run.err
    listed = run_cli("sessions", "-w", str(tmp_path))
    assert listed.code == 0 and "Please use my GitHub token [REDACTED:" in listed.out
    assert GHP[:8] not in listed.out
    assert holding(aforo_home, GHP) == []


def test_a_hugging_face_token_of_letters_only_reaches_no_state_file(tmp_path: Path, aforo_home: Path) -> None:
    # Issue 29 D5: `hf_` and 34 letters, as Hugging Face issues them, was stored raw.
    token = "hf_" + "".join(chr(ord("a") + (i * 7) % 26) for i in range(16)) + "QwErTyUiOpAsDfGhJk"
    assert len(token) == 37 and token[3:].isalpha()
    with LiveServer(
        make_openai_app(lambda body: Reply(text=f"Set HF_TOKEN to {token}.", prompt_tokens=100))
    ) as server:
        run = run_cli(
            "-w", str(tmp_path), "--base-url", f"{server.url}/v1", "-m", "test-model",
            f"huggingface-cli login fails with {token}, why?",
        )  # fmt: skip
    assert run.code == 0, run.err
    assert holding(aforo_home, token) == []
    assert any(b"[REDACTED:huggingface-token]" in data for data in stored(aforo_home).values())


def test_env_values_under_plain_keys_reach_no_session_or_checkpoint(tmp_path: Path, aforo_home: Path) -> None:
    """The model reads `.env` among eight files; the run clears and compacts (so there are checkpoints)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    files = make_files(ws, 8, 3000)
    (ws / ".env").write_text(f"# local settings\nMY_PLAIN_VALUE = {PLAIN}\nDEBUG=true\n")
    with LiveServer(TruncatingServer(two_then_six([".env", *files]), window=4096).app) as live:
        run = run_cli(
            "-w", str(ws), "--base-url", f"{live.url}/v1", "-m", "test-model", "--context-window", "4096",
            "--json", "Task LONGEST-8: read .env and the eight mod*.py files; which is the longest?",
        )  # fmt: skip
    assert run.code == 0, run.err
    written = stored(aforo_home)
    assert any("checkpoints" in p for p in written) and any("sessions" in p for p in written)
    assert holding(aforo_home, PLAIN) == []
    assert any(b"MY_PLAIN_VALUE = [REDACTED:env-value]" in data for data in written.values())


def test_env_content_piped_on_stdin_and_quoted_back_reaches_disk_redacted(
    tmp_path: Path, aforo_home: Path
) -> None:
    """`cat .env | aforo "..."`: no file name says where the text came from, and the answer repeats the
    value in a sentence. Shown to the user as it is; stored redacted, with the keys and safe values."""
    piped = f"# app settings\nMY_PLAIN_VALUE={PLAIN}\nDEBUG=true\n"
    bodies: list[dict[str, Any]] = []

    def model(body: dict[str, Any]) -> Reply:
        bodies.append(body)
        return Reply(
            text=f"MY_PLAIN_VALUE is set to {PLAIN}, which looks like a password.", prompt_tokens=100
        )

    with LiveServer(make_openai_app(model)) as server:
        run = run_cli(
            "-w", str(tmp_path), "--base-url", f"{server.url}/v1", "-m", "test-model",
            "is this .env right?", stdin=piped,
        )  # fmt: skip
    assert run.code == 0, run.err
    assert PLAIN in str(bodies[0]) and PLAIN in run.out  # the model and the user see what was piped
    assert holding(aforo_home, PLAIN) == []
    [session] = [
        data
        for path, data in stored(aforo_home).items()
        if "sessions" in Path(path).parts and path.endswith(".json")
    ]
    assert b"MY_PLAIN_VALUE=[REDACTED:env-value]" in session and b"DEBUG=true" in session
    assert b"MY_PLAIN_VALUE is set to [REDACTED:env-value]" in session
