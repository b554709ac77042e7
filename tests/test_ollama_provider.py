"""The native Ollama adapter against a real local server speaking Ollama's /api dialect."""

from __future__ import annotations

import json

import pytest

from aforo.errors import ConnectError, ContextOverflowError, HTTPStatusError, ProtocolError
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
from aforo.providers.ollama import OllamaProvider, parse_version, supports_truncate_flag
from aforo.server_kinds import KINDS
from aforo.servers.detect import detect_server
from aforo.servers.windows import resolve_window
from dialects.servers_apps import ollama_app
from support.live_server import LiveServer, free_port

MODEL = "qwen2.5-coder:0.5b"
READ = ToolSpec("Read", "Read a file", {"type": "object", "properties": {"file_path": {"type": "string"}}})


def request(*messages: Message, max_tokens: int = 512) -> Request:
    return Request(MODEL, (SystemPart("Be brief."),), (READ,), messages or (Message.user("hi"),), max_tokens)


def collect(provider: OllamaProvider, req: Request) -> list[StreamEvent]:
    return list(provider.stream(req))


def test_streams_text_and_usage() -> None:
    app = ollama_app(script=[{"chunks": ["Hel", "lo"], "prompt_eval_count": 120, "eval_count": 3}])
    with LiveServer(app) as server, OllamaProvider(server.url, MODEL, num_ctx=8192) as provider:
        events = collect(provider, request())
    assert [e.text for e in events if isinstance(e, StreamText)] == ["Hel", "lo"]
    end = events[-1]
    assert isinstance(end, MessageEnd)
    assert (end.usage.input_tokens, end.usage.output_tokens, end.stop_reason) == (120, 3, "end_turn")
    assert end.timings["total_duration"] == 1000


def test_sends_num_ctx_num_predict_truncate_false_and_tools() -> None:
    app = ollama_app(version="0.12.6")
    with LiveServer(app) as server, OllamaProvider(server.url + "/v1", MODEL, num_ctx=8192) as provider:
        collect(provider, request(max_tokens=300))
    [(_path, body)] = [r for r in app.state.received if r[0] == "/api/chat"]
    assert body["options"] == {"num_ctx": 8192, "num_predict": 300}
    assert body["truncate"] is False
    assert body["stream"] is True
    assert body["tools"][0]["type"] == "function"
    assert body["tools"][0]["function"]["name"] == "Read"
    assert body["tools"][0]["function"]["parameters"] == READ.input_schema


def test_converts_the_conversation_to_ollama_messages() -> None:
    app = ollama_app()
    history = (
        Message.user("Read a.py"),
        Message("assistant", (TextBlock("Sure."), ToolUse("call_x", "Read", {"file_path": "a.py"}))),
        Message("user", (ToolResult("call_x", "1\tprint(1)"), TextBlock("and?"))),
        Message("assistant", (ToolUse("call_y", "Read", {"file_path": "b.py"}),)),
        Message("user", (ToolResult("call_y", "missing", is_error=True),)),
    )
    with LiveServer(app) as server, OllamaProvider(server.url, MODEL, num_ctx=4096) as provider:
        collect(provider, request(*history))
    body = app.state.received[-1][1]
    assert body["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Read a.py"},
        {
            "role": "assistant",
            "content": "Sure.",
            "tool_calls": [{"function": {"name": "Read", "arguments": {"file_path": "a.py"}}}],
        },
        {"role": "tool", "content": "1\tprint(1)", "tool_name": "Read"},
        {"role": "user", "content": "and?"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"function": {"name": "Read", "arguments": {"file_path": "b.py"}}}],
        },
        {"role": "tool", "content": "Error: missing", "tool_name": "Read"},
    ]


def test_tool_calls_get_unique_ids_and_stop_reason_tool_use() -> None:
    calls = [
        {"function": {"name": "Read", "arguments": {"file_path": "a.py"}}},
        {"function": {"name": "Glob", "arguments": {"pattern": "*.py"}}},
    ]
    app = ollama_app(script=[{"tool_calls": calls}, {"tool_calls": calls[:1]}])
    with LiveServer(app) as server, OllamaProvider(server.url, MODEL, num_ctx=4096) as provider:
        first = collect(provider, request())
        second = collect(provider, request())
    tool_calls = [e for e in first + second if isinstance(e, StreamToolCall)]
    assert [c.name for c in tool_calls] == ["Read", "Glob", "Read"]
    assert json.loads(tool_calls[0].arguments) == {"file_path": "a.py"}
    ids = [c.id for c in tool_calls]
    assert len(set(ids)) == 3 and all(i.startswith("call_") for i in ids)
    assert isinstance(first[-1], MessageEnd) and first[-1].stop_reason == "tool_use"


@pytest.mark.parametrize(
    ("version", "sent"), [("0.12.5", False), ("0.12.6", True), ("0.13.0-rc1", True), ("0.3.14", False)]
)
def test_truncate_flag_only_where_supported(version: str, sent: bool) -> None:
    app = ollama_app(version=version)
    with LiveServer(app) as server, OllamaProvider(server.url, MODEL, num_ctx=4096) as provider:
        collect(provider, request())
    body = app.state.received[-1][1]
    assert ("truncate" in body) is sent


def test_version_parsing() -> None:
    assert parse_version("v0.12.10") == (0, 12, 10)
    assert parse_version("garbage") is None
    assert supports_truncate_flag("0.12.10") and not supports_truncate_flag(None)


def test_absent_counts_are_zero_and_length_is_max_tokens() -> None:
    app = ollama_app(script=[{"chunks": ["a"], "omit_counts": True, "done_reason": "length"}])
    with LiveServer(app) as server, OllamaProvider(server.url, MODEL, num_ctx=4096) as provider:
        end = collect(provider, request())[-1]
    assert isinstance(end, MessageEnd)
    assert (end.usage.input_tokens, end.usage.output_tokens, end.stop_reason) == (0, 0, "max_tokens")


def test_prompt_over_num_ctx_is_a_context_overflow() -> None:
    long = Message.user("word " * 400)
    with (
        LiveServer(ollama_app(version="0.12.6")) as server,
        OllamaProvider(server.url, MODEL, num_ctx=100) as p,
        pytest.raises(ContextOverflowError, match="context"),
    ):
        collect(p, request(long))


def test_refused_connection_says_how_to_start_a_server() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    with (
        OllamaProvider(url, MODEL, num_ctx=4096, version="0.12.6") as provider,
        pytest.raises(ConnectError) as info,
    ):
        collect(provider, request())
    message = str(info.value)
    assert "no server at" in message and "ollama serve" in message and "--base-url" in message


def test_unknown_model_says_ollama_pull() -> None:
    with (
        LiveServer(ollama_app()) as server,
        OllamaProvider(server.url, "llama9", num_ctx=4096) as provider,
        pytest.raises(HTTPStatusError, match="ollama pull llama9") as info,
    ):
        collect(provider, Request("llama9", (), (), (Message.user("hi"),), 10))
    assert info.value.status == 404


def test_a_stream_cut_before_done_is_an_error() -> None:
    app = ollama_app(script=[{"chunks": ["partial"], "cut": True}])
    with (
        LiveServer(app) as server,
        OllamaProvider(server.url, MODEL, num_ctx=4096) as provider,
        pytest.raises(ProtocolError, match="without `done`"),
    ):
        collect(provider, request())


def test_configured_window_larger_than_the_loaded_one_never_loses_the_task() -> None:
    """Told 32768 while Ollama has the model loaded at 4096: aforo either runs at 4096 or makes the
    server use its window by setting num_ctx — in both cases the two agree."""
    import httpx

    app = ollama_app(loaded={MODEL: 4096})
    with LiveServer(app) as server, httpx.Client() as client:
        info = detect_server(client, server.url + "/v1", model=MODEL, kinds=KINDS)
        resolution = resolve_window(32768, "--context-window", info.served_window, info.window_detail, None)
        with OllamaProvider(server.url, MODEL, num_ctx=resolution.window, version=info.version) as provider:
            collect(provider, request())
    assert info.kind == "ollama"
    assert resolution.window == 4096 and resolution.warnings
    body = app.state.received[-1][1]
    assert body["options"]["num_ctx"] == resolution.window
    assert body["truncate"] is False
