"""`--json` is a contract (docs/json-events.md): every line validates against the schema, the events come
in the same order whatever the server, the run ends with a `result`, tool events say their sizes.

The same scripted model runs behind local servers of every kind aforo tells apart (each one's discovery
endpoints from tests/dialects, the chat answered by one script): a loud one that streams its answers, a
silent one whose window is known (streamed too), a silent one whose window is a guess (held until
checked), Ollama's native API. The model writes its tool call as text, as the real 0.5B model does
without a schema: `--tool-mode native`, since llama.cpp and Ollama would otherwise get constrained steps
(their --json run is tests/test_constrained_cli.py's).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import BaseRoute, Route

from dialects.openai_app import Call, Reply, make_openai_app, read_body
from dialects.servers_apps import (
    chat_tokens,
    litellm_app,
    llamacpp_app,
    lmstudio_app,
    ollama_app,
    tgi_app,
    vllm_app,
)
from support.cli import CliRun, run_cli
from support.live_server import LiveServer

SCHEMA = json.loads((Path(__file__).parents[1] / "docs" / "json-events.schema.json").read_text())
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA, format_checker=jsonschema.FormatChecker())
MODEL = "test-model"
TEXT_CALL = '```json\n{"name": "Read", "arguments": {"file_path": "a.py"}}\n```'
ANSWER = "It prints **hi** and returns."


def answered(messages: list[dict[str, Any]]) -> bool:
    return any(m.get("role") == "tool" for m in messages)


def script(body: dict[str, Any]) -> tuple[str, list[Call]]:
    """The model: a text call first, then the answer; a probe (max_tokens 1) gets one word."""
    if body.get("max_tokens") == 1:
        return ".", []
    if answered(body["messages"]):
        return ANSWER, []
    return f"Let me read it.\n{TEXT_CALL}", []


def openai_chat(exact: bool) -> Callable[[dict[str, Any]], Reply]:
    def responder(body: dict[str, Any]) -> Reply:
        text, calls = script(body)
        # With an exact counter the usage must agree with it; without, it is near aforo's estimate.
        tokens = (
            chat_tokens(body)
            if exact
            else len(json.dumps(body["messages"]) + json.dumps(body.get("tools"))) // 4
        )
        return Reply(text=text, calls=calls, prompt_tokens=tokens)

    return responder


def with_chat(discovery: Starlette, *, exact: bool) -> Starlette:
    """A server kind's own endpoints, with the scripted streaming chat in front of its own."""
    chat = make_openai_app(openai_chat(exact)).routes[0]
    return Starlette(routes=[chat, *discovery.routes])


def ollama_server() -> Starlette:
    async def chat(request: Request) -> Response:
        body = await read_body(request)
        if isinstance(body, Response):
            return body
        text, _calls = script(body)
        tokens = len(json.dumps(body["messages"]) + json.dumps(body.get("tools"))) // 4

        def lines() -> Iterator[str]:
            for i in range(0, len(text), 5):
                yield (
                    json.dumps(
                        {
                            "model": MODEL,
                            "message": {"role": "assistant", "content": text[i : i + 5]},
                            "done": False,
                        }
                    )
                    + "\n"
                )
            final = {"model": MODEL, "message": {"role": "assistant", "content": ""}, "done": True,
                     "done_reason": "stop", "prompt_eval_count": tokens, "eval_count": 9}  # fmt: skip
            yield json.dumps(final) + "\n"

        return StreamingResponse(lines(), media_type="application/x-ndjson")

    routes: list[BaseRoute] = [
        Route("/api/chat", chat, methods=["POST"]),
        *ollama_app(models=(MODEL,)).routes,
    ]
    return Starlette(routes=routes)


SERVERS: dict[str, Callable[[], Starlette]] = {
    "llama.cpp": lambda: with_chat(llamacpp_app(8192, model=MODEL), exact=True),
    "vllm": lambda: with_chat(vllm_app(8192, model=MODEL), exact=True),
    "tgi": lambda: with_chat(tgi_app(8191, 8192), exact=True),
    "lmstudio": lambda: with_chat(lmstudio_app(8192, model=MODEL), exact=False),
    "litellm": lambda: with_chat(litellm_app(8192, model=MODEL), exact=False),
    "openai": lambda: make_openai_app(openai_chat(exact=False), models={MODEL: None}),
    "ollama": ollama_server,
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, CliRun]:
    ws = tmp_path_factory.mktemp("ws")
    (ws / "a.py").write_text("print('hi')\n")
    out = {}
    for kind, app in SERVERS.items():
        with LiveServer(app()) as server:
            out[kind] = run_cli(
                "-w",
                str(ws),
                "--base-url",
                server.url,
                "-m",
                MODEL,
                "--tool-mode",
                "native",
                "--json",
                "What does a.py do?",
            )
    return out


def shape(events: list[dict[str, Any]]) -> list[str]:
    """The order of the events: runs of text_delta as one (their number depends on the chunks), without
    the warnings (a server whose window is a guess is warned about)."""
    kinds: list[str] = []
    for event in events:
        if event["type"] == "warning" or (event["type"] == "text_delta" and kinds[-1:] == ["text_delta"]):
            continue
        kinds.append(event["type"])
    return kinds


@pytest.mark.parametrize("kind", SERVERS)
def test_every_event_validates_and_the_run_ends_with_its_result(runs: dict[str, CliRun], kind: str) -> None:
    run = runs[kind]
    assert run.code == 0, run.err + run.out
    events = run.events()
    for event in events:
        VALIDATOR.validate(event)
    info = next(e for e in events if e["type"] == "info" and "server" in e)
    assert info["server"] == kind
    result = events[-1]
    assert result["type"] == "result" and result["exit_code"] == run.code == 0
    assert (result["ending"], result["turns"], result["tool_calls"]) == ("end_turn", 2, 1)
    assert result["answer"] == ANSWER and result["session"] and result["duration_ms"] > 0
    assert result["input_tokens"] == sum(
        e["usage"]["input_tokens"] + e["usage"]["cache_read_tokens"]
        for e in events
        if e["type"] == "turn_end"
    )
    # The call written as text is its own event, never part of the answer's text.
    assert [e["text"] for e in events if e["type"] == "text_call"] == [TEXT_CALL]
    assert '"file_path"' not in "".join(e["text"] for e in events if e["type"] == "text_delta")
    end = next(e for e in events if e["type"] == "tool_end")
    assert end["ok"] and end["lines"] == 1 and end["bytes"] >= len("print('hi')") and end["tokens"] > 0


def test_the_run_end_and_the_result_are_flat_in_the_documented_order(runs: dict[str, CliRun]) -> None:
    events = runs["llama.cpp"].events()
    run_end, result = events[-2:]
    # docs/json-events.md shows these lines as printed: scripts and readers see the same keys in one order.
    assert list(run_end) == ["v", "type", "reason", "turns", "tool_calls", "input_tokens", "output_tokens",
                             "error", "citations", "unreported_turns"]  # fmt: skip
    assert list(result) == ["v", "type", "ending", "exit_code", "answer", "turns", "tool_calls",
                            "input_tokens", "output_tokens", "duration_ms", "error", "session", "citations",
                            "unreported_turns"]  # fmt: skip
    assert {k: result[k] for k in ("turns", "tool_calls", "input_tokens", "output_tokens", "error")} == {
        k: run_end[k] for k in ("turns", "tool_calls", "input_tokens", "output_tokens", "error")
    }


def test_the_events_come_in_the_same_order_on_every_server(runs: dict[str, CliRun]) -> None:
    shapes = {kind: shape(run.events()) for kind, run in runs.items()}
    expected = ["info", "info", "text_delta", "text_call", "turn_end", "tool_start", "tool_end", "text_delta",
                "turn_end", "run_end", "result"]  # fmt: skip
    assert shapes == dict.fromkeys(SERVERS, expected)


def test_answers_stream_where_the_window_is_known_and_are_held_where_it_is_a_guess(
    runs: dict[str, CliRun],
) -> None:
    answers = {kind: next(e for e in run.events() if "answers" in e)["answers"] for kind, run in runs.items()}
    assert answers == {**dict.fromkeys(SERVERS, "streamed"), "openai": "held"}
    held = [e for e in runs["openai"].events() if e["type"] == "text_delta"]
    assert [e["text"] for e in held] == ["Let me read it.\n", ANSWER]  # each turn once, whole
