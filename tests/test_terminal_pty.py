"""aforo on a real terminal (a pseudo-terminal, the installed console script, a local server): the status
line while it waits, a tool call written as text shown once as a call, Markdown answers that fit the
width, and first contact without a server. `screen()` replays what the terminal shows, so a status line
that was not erased, or text written over it, would be seen as a user sees it."""

from __future__ import annotations

import asyncio
import json
import os
import re
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pexpect
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from dialects.openai_app import read_body
from dialects.servers_apps import generic_app
from support.cli import AFORO
from support.live_server import LiveServer, free_port

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
WIDTH = 72
TEXT_CALL = '```json\n{"name": "Read", "arguments": {"file_path": "a.py"}}\n```'
MARKDOWN = (
    "The function `words` **splits** the text into lower-case words and counts them, which is what every "
    "other function of the module builds on.\n\n"
    "```python\ndef words(text):\n    return text.lower().split()\n```\n"
)


def screen(raw: str) -> list[str]:
    """The lines a terminal shows for `raw`: colours dropped, a carriage return writes over its line."""
    lines = []
    for row in ANSI.sub("", raw).replace("\r\n", "\n").split("\n"):
        cells: list[str] = []
        col = 0
        for c in row:
            if c == "\r":
                col = 0
                continue
            cells[col : col + 1] = [c]
            col += 1
        lines.append("".join(cells).rstrip())
    return lines


def chunk(text: str | None = None, finish: str | None = None, **extra: Any) -> str:
    choice = {"index": 0, "delta": {"content": text}, "finish_reason": finish}
    return "data: " + json.dumps({"object": "chat.completion.chunk", "choices": [choice], **extra}) + "\n\n"


class SlowModel:
    """A llama-server-like stream: the prompt's progress in steps, then the answer in slow pieces.
    The first turn writes a tool call as text; the next one answers in Markdown."""

    def __init__(self, progress_steps: float = 0.8, piece_delay: float = 0.05) -> None:
        self.progress_steps = progress_steps
        self.piece_delay = piece_delay

    async def chat(self, request: Request) -> Response:
        body = await read_body(request)
        if isinstance(body, Response):
            return body
        answered = any(m.get("role") == "tool" for m in body["messages"])  # the file was read
        text = MARKDOWN if answered else f"Let me read it.\n{TEXT_CALL}"
        tokens = len(json.dumps(body["messages"]) + json.dumps(body.get("tools"))) // 4

        async def events() -> AsyncIterator[str]:
            for done in (0, tokens // 2, tokens):
                yield chunk(prompt_progress={"total": tokens, "cache": 0, "processed": done, "time_ms": 0})
                await asyncio.sleep(self.progress_steps)
            for i in range(0, len(text), 6):
                yield chunk(text[i : i + 6])
                await asyncio.sleep(self.piece_delay)
            yield chunk(finish="stop")
            usage = {"prompt_tokens": tokens, "completion_tokens": len(text) // 4, "total_tokens": tokens}
            yield "data: " + json.dumps({"choices": [], "usage": usage}) + "\n\n"
            yield "data: [DONE]\n\n"

        return StreamingResponse(events(), media_type="text/event-stream")

    def app(self) -> Starlette:
        models = {"object": "list", "data": [{"id": "test-model", "object": "model", "context_length": 8192}]}
        return Starlette(
            routes=[
                Route("/v1/chat/completions", self.chat, methods=["POST"]),
                Route("/v1/models", lambda r: Response(json.dumps(models), media_type="application/json")),
            ]
        )


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "a.py").write_text("def words(text):\n    return text.lower().split()\n")
    return tmp_path


@pytest.fixture
def slow_server() -> Iterator[str]:
    with LiveServer(SlowModel().app()) as server:
        yield server.url


def spawn(*args: str, colour: bool = False) -> pexpect.spawn:
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": str(WIDTH)}
    if not colour:
        env["NO_COLOR"] = "1"
    return pexpect.spawn(AFORO, list(args), env=env, encoding="utf-8", timeout=30, dimensions=(40, WIDTH))


def finish(child: pexpect.spawn) -> tuple[str, int]:
    child.expect(pexpect.EOF)
    child.close()
    return str(child.before), int(child.exitstatus or 0)


def test_status_line_names_the_phase_and_time_and_is_gone_when_done(
    workspace: Path, slow_server: str
) -> None:
    child = spawn("-w", str(workspace), "--base-url", slow_server, "-m", "test-model", "What does a.py do?")
    raw, code = finish(child)
    assert code == 0, raw
    # While the server worked through the prompt, its own progress and the time were shown.
    assert re.search(r"processing the prompt: [\d,]+/[\d,]+ tokens \(\d+%\) · \d+s", raw), raw
    assert "processing the prompt: 0/" in raw and "(100%)" in raw
    assert re.search(r"generating: \d+ tokens", raw), raw
    shown = screen(raw)
    # Nothing of it is left on the screen, and no line of output carries a piece of it.
    assert not [line for line in shown if "processing the prompt" in line or "generating:" in line], shown
    assert any(line.startswith("[end_turn] 2 turns, 1 tool calls") for line in shown)


def test_a_call_written_as_text_is_shown_once_as_a_call(workspace: Path, slow_server: str) -> None:
    raw, code = finish(
        spawn("-w", str(workspace), "--base-url", slow_server, "-m", "test-model", "Read a.py")
    )
    shown = screen(raw)
    assert code == 0
    assert "Let me read it." in shown
    assert [line for line in shown if line.startswith("> Read")] == ['> Read {"file_path":"a.py"}']
    assert not [line for line in shown if '"name"' in line or "```" in line], shown


def test_answers_are_markdown_that_fits_the_width(workspace: Path, slow_server: str) -> None:
    raw, _code = finish(
        spawn("-w", str(workspace), "--base-url", slow_server, "-m", "test-model", "q", colour=True)
    )
    shown = screen(raw)
    answer = shown[next(i for i, line in enumerate(shown) if "The function words" in line) :]
    assert "**" not in "\n".join(answer) and "`words`" not in "\n".join(answer)
    assert all(len(line) <= WIDTH for line in shown)
    words = " ".join(answer[:4]).split()  # the paragraph, wrapped at word boundaries
    assert words[:8] == ["The", "function", "words", "splits", "the", "text", "into", "lower-case"]
    assert "builds" in words and "on." in words
    code_line = next(line for line in raw.split("\n") if "return" in line and "lower" in line)
    assert len(set(re.findall(r"\x1b\[[0-9;]*m", code_line))) >= 3, "the code block is highlighted"


def test_plain_keeps_the_text_as_written_but_wraps_it_at_words(workspace: Path, slow_server: str) -> None:
    args = ("-w", str(workspace), "--base-url", slow_server, "-m", "test-model", "--plain", "q")
    shown = screen(finish(spawn(*args))[0])
    assert any("**splits**" in line for line in shown) and any(line == "```python" for line in shown)
    assert all(len(line) <= WIDTH for line in shown)


def test_no_server_on_a_terminal_is_one_message_and_no_session(workspace: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    child = spawn("-w", str(workspace), "--base-url", url, "-m", "qwen")  # no prompt: it would be the REPL
    raw, code = finish(child)
    assert code == 1 and "aforo> " not in raw
    assert f"no server answers at {url}" in raw and "aforo --local" in raw


def test_aforo_probe_says_it_is_still_probing(workspace: Path) -> None:
    app = generic_app(window=3000, overflow="truncate")

    async def slow(scope: Any, receive: Any, send: Any) -> None:
        await asyncio.sleep(0.3)  # each measurement takes a moment, as on a real server
        await app(scope, receive, send)

    with LiveServer(slow) as server:
        raw, code = finish(spawn("probe", "--base-url", server.url, "-m", "m"))
    assert code == 0, raw
    assert re.search(r"probing the window · \d+s", raw)
    shown = screen(raw)
    assert not [line for line in shown if "probing the window" in line]
    assert any(line.startswith("window: ") for line in shown)
