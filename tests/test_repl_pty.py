"""The interactive assistant driven in a pseudo-terminal: the real `aforo` console script, a real local
OpenAI-compatible server, keys sent as a user types them (Ctrl-C, Ctrl-D), SIGKILL and --resume."""

from __future__ import annotations

import json
import os
import re
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pexpect
import pytest

from aforo.cli.session_keeper import INTERRUPTED_RESULT
from aforo.context.summary_request import SUMMARY_ASK
from dialects.openai_app import Call, Reply, make_openai_app
from support.cli import AFORO
from support.live_server import LiveServer

PROMPT = "aforo> "
SUMMARY = "Goal: explain big.py.\nEvidence: big.py defines f_0 to f_99 (Read big.py).\nNext action: answer."


def realistic_tokens(body: dict[str, Any]) -> int:
    """What a server would report: close to aforo's estimate, or the truncation detector (rightly) fires."""
    return (len(json.dumps(body.get("messages", []))) + len(json.dumps(body.get("tools", [])))) // 4


class Model:
    """A scripted model: `read` -> Read big.py then an answer; `slow` -> a stalled answer; `hang` -> Read,
    then a stall long enough to be killed in. `started` is set when a stalled answer is being sent."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        self.stalled = threading.Event()
        self.slow_summary = False  # the summary request stalls (a compaction that takes its time)

    def __call__(self, body: dict[str, Any]) -> Reply:
        self.bodies.append(body)
        msgs = body["messages"]
        tokens = realistic_tokens(body)
        if "You compact the conversation" in (msgs[0].get("content") or "") or SUMMARY_ASK in str(
            msgs[-1].get("content") or ""
        ):
            if self.slow_summary:
                self.stalled.set()
                return Reply(text=SUMMARY, stall=5.0, prompt_tokens=tokens)
            return Reply(text=SUMMARY, prompt_tokens=tokens)
        last_user = max(i for i, m in enumerate(msgs) if m["role"] == "user")
        # The newest request: two user turns in a row reach the server joined by a blank line.
        prompt = (msgs[last_user]["content"] or "").split("\n\n")[-1]
        answered = any(m["role"] == "tool" for m in msgs[last_user:])
        if ("read" in prompt or "hang" in prompt) and not answered:
            return Reply(calls=[Call("Read", json.dumps({"file_path": "big.py"}))], prompt_tokens=tokens)
        if "pause" in prompt:  # an answer that takes a moment to start: time to type during the run
            self.stalled.set()
            return Reply(text="Paused answer.", delay=2.0, prompt_tokens=tokens)
        if "slow" in prompt or "hang" in prompt:
            self.stalled.set()
            return Reply(text="a slow answer " * 5, stall=5.0, prompt_tokens=tokens)
        return Reply(text=f"Answer {len(msgs)}: big.py defines 100 functions.", prompt_tokens=tokens)


@pytest.fixture
def model() -> Iterator[tuple[Model, str]]:
    script = Model()
    with LiveServer(make_openai_app(script)) as server:
        yield script, server.url


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    body = "".join(f"def f_{n}(x):\n    return x * {n}  # line {n}\n" for n in range(100))
    (ws / "big.py").write_text(body)
    return ws


def spawn(url: str, ws: Path, *extra: str) -> pexpect.spawn:
    env = {**os.environ, "NO_COLOR": "1", "TERM": "dumb"}
    args = ["-w", str(ws), "--base-url", url, "-m", "test-model", "--context-window", "8192", *extra]
    child = pexpect.spawn(AFORO, args, env=env, encoding="utf-8", timeout=8, dimensions=(50, 160))
    child.expect_exact(PROMPT)
    return child


def say(child: pexpect.spawn, line: str) -> str:
    """Type `line`, wait for the next prompt, return what was printed in between."""
    child.sendline(line)
    child.expect_exact(PROMPT)
    return str(child.before)


def leave(child: pexpect.spawn) -> int:
    """Ctrl-D until the REPL exits (a key sent before the prompt reads raw input may be lost)."""
    for _ in range(20):
        child.send("\x04")
        if child.expect([pexpect.EOF, pexpect.TIMEOUT], timeout=0.5) == 0:
            child.close()
            return int(child.exitstatus or 0)
    raise AssertionError("Ctrl-D did not end the session")


def test_conversation_context_compact_dropped_undo(model: tuple[Model, str], workspace: Path) -> None:
    script, url = model
    child = spawn(url, workspace)
    out = say(child, "please read big.py")
    assert '> Read {"file_path":"big.py"}' in out and "Answer 4: big.py defines" in out
    assert "[end_turn] 2 turns, 1 tool calls" in out and "· 4 messages" in out

    view = say(child, "/context")
    # The sentence wraps at word boundaries to the width (rich takes a dumb terminal to be 80 wide).
    assert "window 8192 from --context-window, counts estimated (estimate)" in " ".join(view.split())
    for section in ("system prompt", "AGENTS.md", "tool definitions", "user messages", "tool results"):
        assert section in view
    assert "cleared results" in view and "free" in view and "reserve" in view
    assert "_" * 15 in view  # the reserve (25% of the bar) is drawn

    out = say(child, "/compact keep the function names")
    assert "~ conversation compacted:" in out
    summary_request = script.bodies[-1]
    assert "keep the function names" in json.dumps(summary_request["messages"])
    assert "compaction summarized 4 messages (1 tool results): Read big.py" in say(child, "/dropped")
    assert re.search(r"^R\s+tool results\s+0\s", say(child, "/context"), re.M)

    out = say(child, "/undo")
    assert "~ conversation restored from checkpoint" in out
    assert "undo: 4 messages came back (1 tool results)" in out
    compacted = re.search(r"the conversation it replaced is kept in checkpoint (\S+) \(/undo \1\)", out)
    assert compacted is not None, out
    assert "nothing to undo" in say(child, "/undo")  # one transformation, undone once
    out = say(child, "what does it define?")
    assert "Answer 6:" in out  # the model saw the restored 4 messages plus the new prompt
    out = say(child, f"/undo {compacted.group(1)}")  # back to the compacted conversation, by name
    assert "messages came back (0 tool results)" in out
    assert re.search(r"^R\s+tool results\s+0\s", say(child, "/context"), re.M)
    assert "unknown command '/bogus'" in say(child, "/bogus")
    assert leave(child) == 0


def test_failed_compaction_leaves_the_conversation(model: tuple[Model, str], workspace: Path) -> None:
    _script, url = model
    child = spawn(url, workspace)
    out = say(child, "/compact")
    assert "not compacted: there is nothing to compact yet" in out and "unchanged" in out
    assert "nothing to undo" in say(child, "/undo")
    child.sendline("/quit")
    child.expect(pexpect.EOF)


def test_ctrl_c_cancels_the_run_and_keeps_the_conversation(model: tuple[Model, str], workspace: Path) -> None:
    script, url = model
    child = spawn(url, workspace)
    child.sendline("tell me something slow")
    assert script.stalled.wait(5), "the slow request never reached the server"
    child.send("\x03")
    child.expect_exact(PROMPT)
    out = str(child.before)
    assert "[aborted]" in out and "a slow answer" not in out
    assert "· 1 messages" in out  # the prompt stays in the conversation
    out = say(child, "hello again")
    assert "Answer 2:" in out  # system, then the aborted prompt and the new one in one user turn
    assert script.bodies[-1]["messages"][-1]["content"] == "tell me something slow\n\nhello again"
    assert leave(child) == 0


def test_ctrl_c_stops_a_compaction_at_once_and_keeps_the_conversation(
    model: tuple[Model, str], workspace: Path
) -> None:
    script, url = model
    child = spawn(url, workspace)
    assert "· 4 messages" in say(child, "please read big.py")
    script.slow_summary = True
    child.sendline("/compact")
    assert script.stalled.wait(5), "the summary request never reached the server"
    started = time.monotonic()
    child.send("\x03")
    child.expect_exact(PROMPT)
    took = time.monotonic() - started
    out = " ".join(str(child.before).split())
    assert took < 1.5, f"the compaction held the Ctrl-C for {took:.1f} s"
    assert "not compacted: cancelled by the user. The conversation is unchanged." in out
    assert "conversation compacted" not in out
    assert "Answer 6:" in say(child, "and then?")  # the 4 messages as they were, then the new prompt
    assert leave(child) == 0


def test_what_is_typed_during_a_run_is_kept_for_the_next_prompt(
    model: tuple[Model, str], workspace: Path
) -> None:
    script, url = model
    child = spawn(url, workspace)
    child.sendline("pause a moment")
    assert script.stalled.wait(5), "the paused request never reached the server"
    child.send("/contexx\x7ft\r")  # typed while the run works, a typo corrected, Enter pressed
    child.expect_exact(PROMPT)
    during = str(child.before)
    assert "Paused answer." in during
    assert "/contexx" not in during  # not echoed onto the status line or the answer
    # Held in the next prompt, not sent by itself (it was typed before the user saw the answer)...
    assert child.expect(["window 8192", pexpect.TIMEOUT], timeout=1.5) == 1
    # ...and Enter alone sends it (a dumb terminal does not draw it).
    child.send("\r")
    child.expect_exact(PROMPT)
    out = " ".join(str(child.before).split())
    assert "window 8192 from --context-window" in out  # /context ran, with the typo corrected
    assert leave(child) == 0


def test_killed_mid_run_resumes_well_formed(model: tuple[Model, str], workspace: Path) -> None:
    script, url = model
    child = spawn(url, workspace)
    child.sendline("please hang after reading big.py")
    assert script.stalled.wait(5)
    child.kill(signal.SIGKILL)
    child.close(force=True)

    child = spawn(url, workspace, "--resume")
    assert "(resumed: 3 messages)" in str(child.before)
    out = say(child, "are you there?")
    assert "Answer 5:" in out
    sent = script.bodies[-1]["messages"]
    call = next(m for m in sent if m.get("tool_calls"))
    result = next(m for m in sent if m["role"] == "tool")
    assert result["tool_call_id"] == call["tool_calls"][0]["id"]
    # The tool's real output was saved before the model call the kill interrupted.
    assert INTERRUPTED_RESULT not in result["content"] and "def f_0" in result["content"]
    assert leave(child) == 0


def test_clear_undo_sessions_resume_and_help(model: tuple[Model, str], workspace: Path) -> None:
    _script, url = model
    child = spawn(url, workspace)
    first = re.search(r"session: (\S+)", str(child.before))
    assert first is not None
    say(child, "first conversation")
    assert "/compact [instructions]" in say(child, "/help")
    out = say(child, "/clear")
    assert "~ conversation cleared:" in out
    assert "/clear set aside 2 messages" in say(child, "/dropped")
    assert "undo: 2 messages came back (0 tool results)" in say(child, "/undo")
    child.sendline("/quit")
    child.expect(pexpect.EOF)

    child = spawn(url, workspace)  # a new session in the same workspace
    say(child, "second conversation")
    listing = say(child, "/sessions")
    assert "first conversation" in listing and "second conversation" in listing
    out = say(child, "/resume")
    assert f"resumed session {first.group(1)}: 2 messages" in out
    assert "Answer 4:" in say(child, "and now?")  # system + the first conversation + this prompt
    assert "is the one open" in say(child, f"/resume {first.group(1)}")
    assert leave(child) == 0


def test_history_is_private_and_redacted_and_model_escapes_are_inert(
    workspace: Path, aforo_home: Path
) -> None:
    """The REPL's own wiring: its history file is 0600 and redacted, and what the model writes reaches
    the terminal with its escape sequences shown, not obeyed (OSC 52 would write the clipboard)."""
    hostile = "see \x1b]52;c;ZXZpbA==\x07 and \x1b[2J done"
    with LiveServer(make_openai_app(lambda body: Reply(text=hostile, prompt_tokens=500))) as server:
        child = spawn(server.url, workspace)
        token = "ghp_" + "a1B2c3D4e5" * 4
        out = say(child, f"my token is {token}")
        assert leave(child) == 0
    assert "\\x1b]52;c;ZXZpbA==\\x07" in out and "\\x1b[2J" in out
    assert "\x1b]52" not in out and "\x1b[2J" not in out
    history = aforo_home / "history"
    assert history.stat().st_mode & 0o777 == 0o600
    text = history.read_text()
    assert "my token is" in text and token not in text and "[REDACTED:" in text
