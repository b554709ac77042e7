"""The OpenAI-compatible adapter against a real HTTP server on 127.0.0.1 (tests/dialects/openai_app.py)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from aforo.errors import (
    ConfigError,
    ConnectError,
    ContextOverflowError,
    HTTPStatusError,
    ProtocolError,
    ProviderTimeout,
)
from aforo.messages import (
    Message,
    MessageEnd,
    Request,
    StreamEvent,
    StreamText,
    StreamToolCall,
    SystemPart,
    ToolSpec,
    Usage,
)
from aforo.providers import retry
from aforo.providers.openai_compat import OpenAICompatProvider
from aforo.wire.bounded import Deadlines
from dialects.openai_app import Answer, Call, Failure, Raw, Reply, Script, make_openai_app
from support.live_server import LiveServer, free_port

Serve = Callable[..., tuple[OpenAICompatProvider, Script]]

REQUEST = Request(
    model="test-model",
    system=(SystemPart("You are terse."),),
    tools=(
        ToolSpec("Read", "Read a file", {"type": "object", "properties": {"file_path": {"type": "string"}}}),
    ),
    messages=(Message.user("What is in main.py?"),),
    max_tokens=256,
)


class Switch:
    """The responder of the module's one server; each test plugs its own script in."""

    def __init__(self) -> None:
        self.script = Script()
        self.headers: list[dict[str, str]] = []

    def __call__(self, body: dict[str, Any]) -> Answer:
        return self.script(body)


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[LiveServer, Switch]]:
    switch = Switch()
    with LiveServer(make_openai_app(switch, headers=switch.headers)) as live:
        yield live, switch


@pytest.fixture
def serve(server: tuple[LiveServer, Switch], monkeypatch: pytest.MonkeyPatch) -> Serve:
    """serve(*answers) -> (provider, script): the server plays `answers`; the adapter points at it."""
    live, switch = server
    monkeypatch.setattr(retry, "RETRY_WAIT", 0.01)

    def start(*answers: Answer, retries: int = 0, timeout: float = 30) -> tuple[OpenAICompatProvider, Script]:
        switch.script = Script(*answers)
        switch.headers.clear()
        provider = OpenAICompatProvider(
            f"{live.url}/v1/", "test-model", retries=retries, deadlines=Deadlines(read=timeout)
        )
        return provider, switch.script

    return start


def run(provider: OpenAICompatProvider, cancel: threading.Event | None = None) -> list[StreamEvent]:
    return list(provider.stream(REQUEST, cancel))


def end_of(events: list[StreamEvent]) -> MessageEnd:
    ends = [e for e in events if isinstance(e, MessageEnd)]
    assert len(ends) == 1 and events[-1] is ends[0]
    return ends[0]


def test_streams_text_and_usage_and_sends_the_request(serve: Serve) -> None:
    provider, script = serve(Reply(text="The file defines main and parses args.", prompt_tokens=42))
    events = run(provider)
    texts = [e.text for e in events if isinstance(e, StreamText)]
    assert len(texts) > 1 and "".join(texts) == "The file defines main and parses args."
    end = end_of(events)
    assert end.stop_reason == "end_turn"
    assert end.usage == Usage(input_tokens=42, output_tokens=5)
    body = script.bodies[0]
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["model"] == "test-model"
    assert body["messages"][0] == {"role": "system", "content": "You are terse."}
    assert body["tools"][0]["function"]["name"] == "Read"


def test_two_parallel_tool_calls_split_across_chunks_are_reassembled(serve: Serve) -> None:
    calls = (
        Call("Read", json.dumps({"file_path": "src/a.py"}), id="call_abc123", pieces=4, split_header=True),
        Call("Glob", json.dumps({"pattern": "**/*.py"}), id="call_def456", pieces=3, split_header=True),
    )
    provider, _ = serve(Reply(text="Let me look.", calls=calls, interleave=True))
    events = run(provider)
    tool_calls = [e for e in events if isinstance(e, StreamToolCall)]
    assert tool_calls == [
        StreamToolCall("call_abc123", "Read", '{"file_path": "src/a.py"}'),
        StreamToolCall("call_def456", "Glob", '{"pattern": "**/*.py"}'),
    ]
    assert end_of(events).stop_reason == "tool_use"
    # Calls come after the text and before the end.
    kinds = [type(e).__name__ for e in events]
    assert kinds.index("StreamToolCall") > max(i for i, k in enumerate(kinds) if k == "StreamText")


def test_tool_calls_with_finish_stop_still_mean_tool_use(serve: Serve) -> None:
    provider, _ = serve(Reply(calls=(Call("Read", '{"file_path": "a"}'),), finish="stop"))
    events = run(provider)
    assert [e.name for e in events if isinstance(e, StreamToolCall)] == ["Read"]
    assert end_of(events).stop_reason == "tool_use"


@pytest.mark.parametrize(
    ("finish", "reason"),
    [("stop", "end_turn"), ("length", "max_tokens"), ("content_filter", "refusal"), ("eos", "end_turn")],
)
def test_finish_reasons_are_mapped(serve: Serve, finish: str, reason: str) -> None:
    provider, _ = serve(Reply(text="x", finish=finish))
    assert end_of(run(provider)).stop_reason == reason


def test_no_usage_chunk_gives_zero_usage(serve: Serve) -> None:
    provider, _ = serve(Reply(text="hello", usage=False))
    assert end_of(run(provider)).usage == Usage()


def test_cached_tokens_and_llama_cpp_timings(serve: Serve) -> None:
    timings = {"prompt_n": 30, "prompt_ms": 12.5, "predicted_n": 5, "predicted_per_second": 40.0}
    provider, _ = serve(
        Reply(text="ok", prompt_tokens=100, cached_tokens=70, timings=timings, usage_in_finish_chunk=True)
    )
    end = end_of(run(provider))
    assert end.usage == Usage(input_tokens=30, cache_read_tokens=70, output_tokens=5)
    assert end.usage.prompt_tokens == 100
    assert end.timings == timings


def test_a_json_completion_to_a_streaming_request_is_accepted(serve: Serve) -> None:
    calls = (Call("Read", '{"file_path": "a.py"}'), Call("Read", '{"file_path": "b.py"}'))
    provider, _ = serve(Reply(text="Reading both.", calls=calls, json=True, prompt_tokens=77))
    events = run(provider)
    assert [e.text for e in events if isinstance(e, StreamText)] == ["Reading both."]
    got = [e for e in events if isinstance(e, StreamToolCall)]
    assert [e.arguments for e in got] == ['{"file_path": "a.py"}', '{"file_path": "b.py"}']
    assert got[0].id != got[1].id
    end = end_of(events)
    assert (end.stop_reason, end.usage.input_tokens) == ("tool_use", 77)


def test_missing_call_ids_are_invented_and_unique(serve: Serve) -> None:
    raw = "".join(
        f"data: {json.dumps(c)}\n\n"
        for c in (
            {
                "choices": [
                    {"index": 0, "delta": {"tool_calls": [{"function": {"name": "Glob", "arguments": "{}"}}]}}
                ]
            },
            {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
        )
    )
    provider, _ = serve(Raw(raw), Raw(raw))
    first = [e for e in run(provider) if isinstance(e, StreamToolCall)]
    second = [e for e in run(provider) if isinstance(e, StreamToolCall)]
    assert first[0].name == "Glob" and first[0].id and first[0].id != second[0].id


# --- errors -----------------------------------------------------------------------------------------


def test_connection_refused_says_how_to_start_a_server() -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    provider = OpenAICompatProvider(url, "m", retries=0)
    with pytest.raises(ConnectError) as info:
        run(provider)
    assert url in str(info.value) and "--base-url" in str(info.value)


def test_a_base_url_without_scheme_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="http://"):
        OpenAICompatProvider("localhost:11434/v1", "m")


LLAMA_SERVER_400 = json.dumps(
    {
        "error": {
            "code": 400,
            "message": "the request exceeds the available context size, try increasing it",
            "type": "exceed_context_size_error",
            "n_prompt_tokens": 5210,
            "n_ctx": 4096,
        }
    }
)


def test_an_overflow_answer_becomes_context_overflow_and_is_not_retried(serve: Serve) -> None:
    provider, script = serve(Failure(400, LLAMA_SERVER_400), Reply(text="never reached"), retries=2)
    with pytest.raises(ContextOverflowError) as info:
        run(provider)
    assert (info.value.n_prompt, info.value.n_ctx) == (5210, 4096)
    assert "--context-window 4096" in str(info.value)
    assert len(script.bodies) == 1


def test_llama_server_500_context_exceeded_is_an_overflow_not_a_retry(serve: Serve) -> None:
    body = json.dumps(
        {"error": {"code": 500, "message": "Context size has been exceeded.", "type": "server_error"}}
    )
    provider, script = serve(Failure(500, body), Reply(text="never"), retries=2)
    with pytest.raises(ContextOverflowError):
        run(provider)
    assert len(script.bodies) == 1


def test_an_overflow_error_chunk_inside_a_200_stream_is_an_overflow(serve: Serve) -> None:
    chunk = {"error": {"code": 500, "message": "Context size has been exceeded.", "type": "server_error"}}
    provider, _ = serve(Raw(f"data: {json.dumps(chunk)}\n\n"))
    with pytest.raises(ContextOverflowError):
        run(provider)


def test_an_error_object_in_a_json_200_answer_is_mapped(serve: Serve) -> None:
    body = json.dumps({"error": {"code": 500, "message": "Context size has been exceeded."}})
    provider, _ = serve(Raw(body, content_type="application/json"))
    with pytest.raises(ContextOverflowError):
        run(provider)


def test_404_names_the_model_and_how_to_list_models(serve: Serve) -> None:
    body = json.dumps({"error": {"message": 'model "test-model" not found, try pulling it first'}})
    provider, _ = serve(Failure(404, body), retries=2)
    with pytest.raises(HTTPStatusError) as info:
        run(provider)
    assert info.value.status == 404
    message = str(info.value)
    assert "'test-model'" in message and "/v1/models" in message and "not found, try pulling" in message


def test_401_asks_for_an_api_key(serve: Serve) -> None:
    provider, _ = serve(Failure(401, json.dumps({"error": {"message": "invalid api key"}})), retries=2)
    with pytest.raises(HTTPStatusError, match="AFORO_API_KEY") as info:
        run(provider)
    assert info.value.status == 401 and "invalid api key" in str(info.value)


def test_the_api_key_is_sent_as_bearer(serve: Serve, server: tuple[LiveServer, Switch]) -> None:
    provider, _ = serve(Reply(text="ok"), Reply(text="ok"))
    run(provider)
    keyed = OpenAICompatProvider(provider.base_url, "test-model", api_key="sk-test", retries=0)
    run(keyed)
    sent = [h.get("authorization") for h in server[1].headers]
    assert sent == [None, "Bearer sk-test"]


def test_500_is_retried_then_succeeds(serve: Serve) -> None:
    boom = Failure(500, json.dumps({"error": {"message": "CUDA out of memory"}}))
    provider, script = serve(boom, Reply(text="fine now"), retries=2)
    events = run(provider)
    assert "".join(e.text for e in events if isinstance(e, StreamText)) == "fine now"
    assert len(script.bodies) == 2


def test_500_retried_until_the_bound_then_http_status_error(serve: Serve) -> None:
    boom = Failure(503, "Service Unavailable", content_type="text/plain")
    provider, script = serve(boom, boom, boom, Reply(text="too late"), retries=2)
    with pytest.raises(HTTPStatusError) as info:
        run(provider)
    assert info.value.status == 503 and "Service Unavailable" in str(info.value)
    assert len(script.bodies) == 3


@pytest.mark.parametrize(
    ("raw", "match"),
    [
        ("data: {not json at all\n\n", "not JSON"),
        ('data: ["a", "list"]\n\n', "not a JSON object"),
        ('data: {"choices": "nope"}\n\n', "not a list"),
        ("", "empty stream"),
        ("data: [DONE]\n\n", "empty stream"),
        (": keep-alive\n\n", "empty stream"),
    ],
)
def test_malformed_and_empty_streams_are_protocol_errors(serve: Serve, raw: str, match: str) -> None:
    provider, _ = serve(Raw(raw))
    with pytest.raises(ProtocolError, match=match):
        run(provider)


def test_an_html_body_is_a_protocol_error(serve: Serve) -> None:
    provider, _ = serve(Raw("<html>proxy says hi</html>", content_type="text/html"))
    with pytest.raises(ProtocolError, match="event stream"):
        run(provider)


def test_a_stream_ending_without_finish_reason_is_an_error_after_the_text(serve: Serve) -> None:
    provider, _ = serve(Reply(text="partial answer", finish=None, usage=False, done=False))
    seen: list[StreamEvent] = []
    with pytest.raises(ProtocolError, match="without a finish reason"):
        for event in provider.stream(REQUEST):
            seen.append(event)
    assert seen and not any(isinstance(e, MessageEnd) for e in seen)


def test_a_read_timeout_becomes_provider_timeout(serve: Serve) -> None:
    provider, _ = serve(Reply(text="slow", delay=1.0), timeout=0.1)
    with pytest.raises(ProviderTimeout, match="stopped answering"):
        run(provider)


def test_cancel_mid_stream_stops_without_message_end(serve: Serve) -> None:
    provider, _ = serve(Reply(text="one two three four five six seven eight", stall=0.05))
    cancel = threading.Event()
    seen: list[StreamEvent] = []
    for event in provider.stream(REQUEST, cancel):
        seen.append(event)
        cancel.set()
    assert len(seen) == 1 and isinstance(seen[0], StreamText)


def test_cancel_before_start_sends_nothing(serve: Serve) -> None:
    provider, script = serve(Reply(text="x"))
    cancel = threading.Event()
    cancel.set()
    assert run(provider, cancel) == []
    assert script.bodies == []
