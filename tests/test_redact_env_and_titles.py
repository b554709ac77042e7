"""Secrets that used to survive redaction (issue 12 item 3): a session title cut before it was redacted,
and `.env` values under ordinary key names, in the session file and in every checkpoint."""

from __future__ import annotations

import random
import string
from pathlib import Path

import pytest

from aforo.messages import Message, TextBlock, ToolResult, ToolUse
from aforo.store.checkpoints import Checkpoint, encode_checkpoint
from aforo.store.env_files import is_env_file
from aforo.store.redact import redact, redact_env_file, redact_obj, redacted_line
from aforo.store.sessions import SessionRecord, SessionStore

_rng = random.Random(1212)
# Letters only, no digit and no secret-looking key: nothing but the file it comes from marks it.
PLAIN = "".join(_rng.choice(string.ascii_letters) for _ in range(16))
GHP = "ghp_" + "".join(_rng.choice(string.ascii_letters + string.digits) for _ in range(35)) + "7"


def chunks(secret: str, size: int = 8) -> list[str]:
    return [secret[i : i + size] for i in range(len(secret) - size + 1)]


def leaked(secret: str, text: str) -> bool:
    """Does any 8 characters of `secret` appear in `text`? (A cut secret leaks its prefix.)"""
    return any(chunk in text for chunk in chunks(secret))


# --- titles ----------------------------------------------------------------------------------------


def test_a_token_the_title_cut_would_shorten_is_not_stored_or_listed(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "sessions")
    prompt = f"Please use my GitHub token {GHP} to list the open issues of acme/app, then summarize them"
    assert prompt.index(GHP) < 60 < prompt.index(GHP) + len(GHP)  # the cut falls inside the token
    rec = SessionRecord(id=store.new_id(), workspace=str(tmp_path), messages=[Message.user(prompt)])
    path = store.save(rec)
    assert not leaked(GHP, path.read_text())
    [listed] = store.list()
    assert not leaked(GHP, listed.title)
    assert listed.title.startswith("Please use my GitHub token [REDACTED:")
    assert len(listed.title) <= 60


def test_a_title_is_cut_before_a_marker_not_inside_it() -> None:
    title = redacted_line("x" * 50 + f" {GHP} tail", 60)
    assert title == "x" * 50 + " …"


def test_a_secret_spanning_lines_is_redacted_in_the_title() -> None:
    body = "\n".join("".join(_rng.choice(string.ascii_letters) for _ in range(64)) for _ in range(4))
    text = f"-----BEGIN RSA PRIVATE KEY-----\n{body}\n-----END RSA PRIVATE KEY-----\nwhat is this?"
    assert redacted_line(text, 60) == "[REDACTED:private-key]"


def test_a_short_title_is_the_first_line() -> None:
    assert redacted_line("  Explain src/net.py\nmore", 60) == "Explain src/net.py"


# --- .env values under any key name ----------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [".env", ".env.local", "config/.env.production", "deploy/prod.env", ".envrc", "./.env"],
)
def test_env_file_names(path: str) -> None:
    assert is_env_file(path)


@pytest.mark.parametrize("path", ["env.py", "src/environment.ts", ".envoy", "docs/env.md", ".env/readme.md"])
def test_not_env_file_names(path: str) -> None:
    assert not is_env_file(path)


READ_OF_ENV = (
    "     1\t# local settings\n"
    f"     2\tMY_PLAIN_VALUE={PLAIN}\n"
    f'     3\texport QUOTED="{PLAIN[::-1]} and more"\n'
    "     4\tDEBUG=true\n"
    "     5\tPORT=80\n"
    "     6\tHOME_DIR=${HOME}/app\n"
    "     7\tEMPTY=\n"
)


def test_every_value_of_a_read_env_file_is_redacted_keys_and_trivial_values_stay() -> None:
    out = redact_env_file(READ_OF_ENV)
    assert PLAIN not in out and PLAIN[::-1] not in out
    for kept in (
        "# local settings",
        "MY_PLAIN_VALUE=[REDACTED:",
        'QUOTED="[REDACTED:',
        "DEBUG=true",
        "PORT=80",
    ):
        assert kept in out
    assert "HOME_DIR=${HOME}/app" in out and "EMPTY=\n" in out


def test_plain_line_numbers_and_no_line_numbers_are_tolerated() -> None:
    assert PLAIN not in redact_env_file(f"2\tMY_PLAIN_VALUE={PLAIN}")
    assert PLAIN not in redact_env_file(f"MY_PLAIN_VALUE={PLAIN}")


def test_a_multiline_quoted_value_is_redacted_to_its_closing_quote() -> None:
    out = redact_env_file(f'     1\tCERT="{PLAIN}\n     2\t{PLAIN[::-1]}"\n     3\tDEBUG=true')
    assert PLAIN not in out and PLAIN[::-1] not in out
    assert out.endswith("DEBUG=true")


def test_grep_lines_of_env_files_are_redacted_wherever_they_appear() -> None:
    grep = (
        f"config/.env.local:3:MY_PLAIN_VALUE={PLAIN}\n"
        f"config/.env.local-4-OTHER_VALUE={PLAIN[::-1]}\n"
        f"src/settings.py:9:MY_PLAIN_VALUE = '{PLAIN}x'\n"
    )
    out = redact(grep)
    assert PLAIN not in out.splitlines()[0] and PLAIN[::-1] not in out
    # The same assignment in source code is code, not a secret: it stays.
    assert f"src/settings.py:9:MY_PLAIN_VALUE = '{PLAIN}x'" in out


# Python, not a `.env` file's shape (spaces around `=`): only the file it comes from could make it one.
READ_OF_CODE = f"     1\tMY_PLAIN_VALUE = {PLAIN}"


def env_conversation(path: str = ".env") -> list[Message]:
    return [
        Message.user("What is configured in the env file?"),
        Message("assistant", (TextBlock("Reading it."), ToolUse("c1", "Read", {"file_path": path}))),
        Message("user", (ToolResult("c1", READ_OF_ENV),)),
        Message("assistant", (ToolUse("c2", "Read", {"file_path": "notes.py"}),)),
        Message("user", (ToolResult("c2", READ_OF_CODE),)),
        Message.assistant("It sets MY_PLAIN_VALUE, DEBUG and PORT."),
    ]


def test_env_values_never_reach_the_session_file(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "sessions")
    rec = SessionRecord(id=store.new_id(), workspace=str(tmp_path), messages=env_conversation())
    raw = store.save(rec).read_text()
    assert PLAIN[::-1] not in raw
    assert raw.count(PLAIN) == 1  # only notes.py's copy: an ordinary file keeps ordinary assignments
    back = store.load(rec.id)
    assert "DEBUG=true" in back.messages[2].tool_results[0].content


def test_env_values_never_reach_a_checkpoint() -> None:
    raw = encode_checkpoint(
        Checkpoint(session_id="s1", reason="compact", messages=env_conversation())
    ).decode()
    assert PLAIN[::-1] not in raw and raw.count(PLAIN) == 1


def test_redact_obj_knows_a_result_only_from_the_call_it_answers() -> None:
    obj = [m.to_dict() for m in env_conversation(".env.production")]
    out = redact_obj(obj)
    assert PLAIN not in str(out[2]) and PLAIN in str(out[4])
    assert PLAIN not in redact_env_file(READ_OF_CODE)  # what the same text is when it comes from .env
    orphan = redact_obj([Message("user", (ToolResult("gone", READ_OF_CODE),)).to_dict()])
    assert PLAIN in str(orphan)  # its call was compacted away: nothing says it came from .env


def test_redact_obj_survives_nesting_deeper_than_the_interpreter_stack() -> None:
    deep: object = f"token={GHP}"
    for _ in range(5000):
        deep = {"a": [deep]}
    out = redact_obj(deep)
    for _ in range(5000):
        assert isinstance(out, dict)
        out = out["a"][0]
    assert out == "token=[REDACTED:github-token]"
