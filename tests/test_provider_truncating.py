"""The Ollama-like truncating test server, driven through the real adapter over HTTP."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator

import pytest

from aforo.context.tokens import estimate_request
from aforo.messages import (
    Message,
    MessageEnd,
    Request,
    StreamEvent,
    StreamText,
    StreamToolCall,
    SystemPart,
    TextBlock,
    ToolResult,
    ToolSpec,
    ToolUse,
)
from aforo.providers.openai_compat import OpenAICompatProvider
from dialects.openai_app import Reply
from dialects.truncating_app import LOST_TASK_ANSWER, Seen, TruncatingServer, reader_policy
from support.live_server import LiveServer

SYSTEM = (SystemPart("You are a careful code reader. SYSKEY-7"),)
TOOLS = (
    ToolSpec("Glob", "Find files", {"type": "object", "properties": {"pattern": {"type": "string"}}}),
    ToolSpec("Read", "Read a file", {"type": "object", "properties": {"file_path": {"type": "string"}}}),
)
TASK = "TASK-KEY-42: explain what the modules in this project do."


def request(messages: list[Message], tools: tuple[ToolSpec, ...] = TOOLS) -> Request:
    return Request("test-model", SYSTEM, tools, tuple(messages), 256)


def notes(n: int, size: int = 400) -> list[Message]:
    out = [Message.user(TASK)]
    for i in range(n):
        out += [Message.assistant(f"ack {i}"), Message.user(f"note {i}: " + "lorem ipsum " * (size // 12))]
    return out


@pytest.fixture
def serve() -> Iterator[object]:
    started: list[LiveServer] = []

    def start(server: TruncatingServer) -> OpenAICompatProvider:
        live = LiveServer(server.app).__enter__()
        started.append(live)
        return OpenAICompatProvider(live.url + "/v1", "test-model", retries=0)

    yield start
    for live in started:
        live.__exit__(None, None, None)


def answer(provider: OpenAICompatProvider, req: Request) -> tuple[str, list[StreamToolCall], MessageEnd]:
    events: list[StreamEvent] = list(provider.stream(req))
    end = events[-1]
    assert isinstance(end, MessageEnd)
    text = "".join(e.text for e in events if isinstance(e, StreamText))
    return text, [e for e in events if isinstance(e, StreamToolCall)], end


def echo(seen: Seen) -> Reply:
    return Reply(text=f"{len(seen.messages)} kept, {seen.dropped} dropped")


def test_a_request_that_fits_is_reported_whole_and_tracks_the_estimate(serve) -> None:
    server = TruncatingServer(echo, window=4096)
    provider = serve(server)
    req = request(notes(3))
    text, _, end = answer(provider, req)
    turn = server.turns[0]
    assert turn.dropped == 0 and text == f"{len(turn.messages)} kept, 0 dropped"
    assert end.usage.input_tokens == turn.total == turn.reported
    # The server's count and the harness's estimate agree closely, as with a real ~4 chars/token model.
    assert abs(turn.total - estimate_request(req)) <= 0.1 * estimate_request(req)


def test_ollama_mode_keeps_system_and_newest_drops_the_task_and_reports_kept(serve) -> None:
    server = TruncatingServer(reader_policy("TASK-KEY-42", ["a.py"]), window=600)
    provider = serve(server)
    req = request(notes(12))
    text, calls, end = answer(provider, req)
    turn = server.turns[0]
    assert turn.dropped > 0
    assert turn.messages[0]["role"] == "system" and "SYSKEY-7" in turn.messages[0]["content"]
    assert turn.messages[-1]["content"].startswith("note 11:")
    assert not any("TASK-KEY-42" in str(m.get("content")) for m in turn.messages)
    assert turn.kept <= 600 < turn.total
    assert end.usage.input_tokens == turn.kept == turn.reported
    # HTTP 200, a normal ending, and the generic answer of a model that lost the task.
    assert (text, calls, end.stop_reason) == (LOST_TASK_ANSWER, [], "end_turn")


@pytest.mark.parametrize(
    ("mode", "telltale", "expected"),
    [("plateau", None, math.floor(600 * 0.9)), ("collapse", None, 63), ("ollama", 302, 302)],
)
def test_truncated_requests_report_the_mode_number(
    serve, mode: str, telltale: int | None, expected: int
) -> None:
    server = TruncatingServer(echo, window=600, mode=mode, telltale=telltale)  # type: ignore[arg-type]
    provider = serve(server)
    _, _, small = answer(provider, request(notes(1)))
    assert small.usage.input_tokens == server.turns[0].total  # fits: reported whole, in every mode
    _, _, big = answer(provider, request(notes(12)))
    assert big.usage.input_tokens == expected


def test_the_newest_message_is_kept_even_when_it_alone_overflows(serve) -> None:
    server = TruncatingServer(echo, window=100)
    provider = serve(server)
    old = [Message.user("old"), Message.assistant("ok")]
    _, _, end = answer(provider, request([*old, Message.user("x" * 2000)]))
    turn = server.turns[0]
    assert turn.messages[-1]["content"] == "x" * 2000 and turn.dropped == 2
    assert end.usage.input_tokens == 100


def run_reader(provider: OpenAICompatProvider, files: dict[str, str], max_turns: int = 10) -> str:
    """A minimal agent loop: run the server's tool calls against `files` until it answers."""
    messages = [Message.user(TASK)]
    for _ in range(max_turns):
        text, calls, _ = answer(provider, request(messages))
        if not calls:
            return text
        uses = tuple(ToolUse(c.id, c.name, json.loads(c.arguments)) for c in calls)
        messages.append(Message("assistant", (TextBlock(text), *uses) if text else uses))
        results = []
        for use in uses:
            out = "\n".join(files) if use.name == "Glob" else files[use.input["file_path"]]
            results.append(ToolResult(use.id, out))
        messages.append(Message("user", tuple(results)))
    raise AssertionError("the reader never answered")


FILES = {"a.py": "def a():\n    return 1\n" * 20, "b.py": "class B:\n    pass\n" * 30}


def test_reader_policy_globs_reads_each_file_and_answers_with_the_marker(serve) -> None:
    server = TruncatingServer(reader_policy("TASK-KEY-42", list(FILES)), window=8192)
    final = run_reader(serve(server), FILES)
    assert final.startswith("TASK-KEY-42:") and "a.py, b.py" in final
    assert len(server.turns) == 4  # Glob, Read a.py, Read b.py, answer
    ids = [c["id"] for m in server.turns[-1].messages for c in m.get("tool_calls") or []]
    assert len(ids) == len(set(ids))


def test_reader_policy_loses_the_task_when_the_window_is_too_small(serve) -> None:
    server = TruncatingServer(reader_policy("TASK-KEY-42", list(FILES)), window=330)
    final = run_reader(serve(server), FILES)
    assert final == LOST_TASK_ANSWER
    assert len(server.turns) >= 2 and server.turns[0].dropped == 0 and server.turns[-1].dropped > 0


def test_reader_policy_summarizes_when_offered_no_tools(serve) -> None:
    server = TruncatingServer(reader_policy("TASK-KEY-42", ["a.py"]), window=8192)
    text, calls, _ = answer(
        serve(server), request([Message.user(TASK + "\nSummarize the conversation.")], tools=())
    )
    assert calls == [] and "TASK-KEY-42" in text and "Files already read:" in text
