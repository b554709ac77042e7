"""Typing in the REPL: Esc Enter for a new line, Tab for commands and `@` paths, `@path` attaching a file.

Driven in a pseudo-terminal (the real console script, a real local server) where the keys matter, and
through the completer itself for what it offers and refuses to offer.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pexpect
import pytest
from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document

from aforo.cli.repl import ReplCompleter
from dialects.openai_app import Reply, make_openai_app
from support.cli import AFORO
from support.live_server import LiveServer

PROMPT = "aforo>"  # on a real terminal type, the space after it is a cursor movement


class Recorder:
    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []

    def __call__(self, body: dict[str, Any]) -> Reply:
        self.bodies.append(body)
        return Reply(text="Understood.", prompt_tokens=len(json.dumps(body)) // 4)

    def last_turn(self) -> list[dict[str, Any]]:
        """The messages of the last request from its last user question on."""
        msgs = self.bodies[-1]["messages"]
        start = max(i for i, m in enumerate(msgs) if m["role"] == "user")
        return msgs[start:]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "src" / "app.py").write_text("def main():\n    return 'APP-MAIN'\n")
    (ws / "src" / "api.py").write_text("x = 1\n")
    (ws / "README.md").write_text("# ws\n")
    (ws / ".hidden").write_text("h\n")
    (tmp_path / "outside.txt").write_text("OUTSIDE")
    os.symlink(tmp_path, ws / "escape")
    return ws


@pytest.fixture
def repl(workspace: Path) -> Iterator[tuple[pexpect.spawn, Recorder]]:
    model = Recorder()
    with LiveServer(make_openai_app(model)) as server:
        # A real terminal type: on TERM=dumb prompt_toolkit reads plain lines, without key bindings.
        env = {**os.environ, "NO_COLOR": "1", "TERM": "xterm", "PROMPT_TOOLKIT_NO_CPR": "1"}
        args = [
            "-w",
            str(workspace),
            "--base-url",
            server.url,
            "-m",
            "test-model",
            "--context-window",
            "8192",
        ]
        child = pexpect.spawn(AFORO, args, env=env, encoding="utf-8", timeout=10, dimensions=(50, 160))
        child.expect_exact(PROMPT)
        yield child, model
        for _ in range(20):  # Ctrl-D until it leaves (a key sent before the prompt reads may be lost)
            child.sendcontrol("d")
            if child.expect([pexpect.EOF, pexpect.TIMEOUT], timeout=0.5) == 0:
                break


def test_esc_enter_puts_a_new_line_in_the_question(repl: tuple[pexpect.spawn, Recorder]) -> None:
    child, model = repl
    child.send("first line\x1b\r")  # Esc Enter; Alt-Enter sends the same two keys
    child.send("second line\r")
    child.expect_exact("[end_turn]")
    assert model.last_turn()[0] == {"role": "user", "content": "first line\nsecond line"}


def test_tab_completes_a_slash_command(repl: tuple[pexpect.spawn, Recorder]) -> None:
    child, _ = repl
    child.send("/cont\t")
    child.expect_exact("ext")  # completed (completers run in the background: wait for the redraw)
    child.send("\r")
    child.expect_exact("reserve")  # the last line of /context
    assert "context:" in str(child.before) and "tool definitions" in str(child.before)


def test_help_names_the_keys(repl: tuple[pexpect.spawn, Recorder]) -> None:
    child, _ = repl
    child.sendline("/help")
    child.expect_exact("@path")
    assert "Esc Enter" in str(child.before) and "Tab" in str(child.before)


def test_tab_completes_a_path_and_the_mention_attaches_the_file(repl: tuple[pexpect.spawn, Recorder]) -> None:
    child, model = repl
    child.send("explain @sr\t")
    child.expect_exact("c/")
    child.send("app\t")
    child.expect_exact(".py")
    child.send("\r")
    child.expect_exact("[end_turn]")
    turn = model.last_turn()
    assert turn[0]["content"] == "explain @src/app.py"
    assert [m["role"] for m in turn] == ["user", "assistant", "tool"]
    assert json.loads(turn[1]["tool_calls"][0]["function"]["arguments"]) == {"file_path": "src/app.py"}
    assert "APP-MAIN" in turn[2]["content"]


def offered(workspace: Path, text: str) -> list[str]:
    completer = ReplCompleter(["/context", "/compact", "/clear", "/quit"], workspace)
    return [
        c.text for c in completer.get_completions(Document(text), CompleteEvent(completion_requested=True))
    ]


def test_the_completer_offers_commands_and_workspace_paths(workspace: Path) -> None:
    assert offered(workspace, "/c") == ["/clear", "/compact", "/context"]
    assert offered(workspace, "/comp") == ["/compact"]
    assert offered(workspace, "what is /c") == []  # a command only starts the line
    assert offered(workspace, "look at @") == ["README.md", "escape/", "src/"]  # no dot files unasked
    assert offered(workspace, "look at @src/a") == ["src/api.py", "src/app.py"]
    assert offered(workspace, "@.h") == [".hidden"]
    assert offered(workspace, "look at src") == []  # a path only after @


def test_the_completer_lists_nothing_outside_the_workspace(workspace: Path) -> None:
    assert offered(workspace, "@../") == []
    assert offered(workspace, "@escape/") == []  # a symlink that leads out of the workspace
    assert offered(workspace, f"@{workspace.parent}/") == []
