"""Constrained steps end to end: the CLI against a llama.cpp-like server on 127.0.0.1 that honours
`response_format` the way llama-server does (each answer is one JSON step of the schema it was sent),
an Ollama-like one that honours `format`, and servers that refuse the schema or have none."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from dialects.openai_app import Failure, Reply, respond
from dialects.servers_apps import chat_tokens, render_chat, toy_tokens
from support.cli import run_cli
from support.live_server import LiveServer

Step = Callable[[dict[str, Any]], dict[str, Any] | Failure]


def llamacpp_steps(step: Step, bodies: list[dict[str, Any]], n_ctx: int = 4096) -> Starlette:
    """llama-server as aforo detects it (/props, exact counts) whose chat answers are JSON steps: the
    step must be valid for the schema the request sent, as a grammar would force it."""

    async def chat(request: Request) -> Response:
        body = await request.json()
        bodies.append(body)
        if body.get("max_tokens") == 1:  # a measurement
            return await respond(Reply(prompt_tokens=chat_tokens(body)), body)
        answer = step(body)
        if isinstance(answer, Failure):
            return await respond(answer, body)
        schema = body["response_format"]["json_schema"]["schema"]
        assert Draft202012Validator(schema).is_valid(answer), (answer, schema)
        return await respond(Reply(text=json.dumps(answer), prompt_tokens=chat_tokens(body)), body)

    async def props(request: Request) -> Response:
        return JSONResponse({"default_generation_settings": {"n_ctx": n_ctx}, "total_slots": 1})

    async def apply_template(request: Request) -> Response:
        return JSONResponse({"prompt": render_chat(await request.json())})

    async def tokenize(request: Request) -> Response:
        return JSONResponse({"tokens": list(range(len(toy_tokens((await request.json())["content"]))))})

    async def models(request: Request) -> Response:
        return JSONResponse({"object": "list", "data": [{"id": "m", "object": "model"}]})

    return Starlette(
        routes=[
            Route("/props", props),
            Route("/v1/models", models),
            Route("/apply-template", apply_template, methods=["POST"]),
            Route("/tokenize", tokenize, methods=["POST"]),
            Route("/v1/chat/completions", chat, methods=["POST"]),
        ]
    )


def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    for name, count in (("alpha.py", 2), ("beta.py", 4), ("gamma.py", 3)):
        (ws / name).write_text("".join(f"def f{i}():\n    return {i}\n\n" for i in range(count)))
    return ws


def reads_then_repeats(body: dict[str, Any]) -> dict[str, Any]:
    """The 0.5B model's measured behaviour: all three files in one step, then the same step again."""
    schema = body["response_format"]["json_schema"]["schema"]
    if "oneOf" not in schema:  # only the answer is allowed
        return {"answer": "beta.py defines the most functions (4: beta.py:1-10)."}
    return {"read": ["alpha.py", "beta.py", "gamma.py"]}


def test_three_files_read_in_one_step_then_the_answer_streams(tmp_path: Path) -> None:
    bodies: list[dict[str, Any]] = []
    with LiveServer(llamacpp_steps(reads_then_repeats, bodies)) as server:
        run = run_cli("-w", str(workspace(tmp_path)), "--base-url", server.url, "-m", "m", "--json", "which?")
    assert run.code == 0, run.err
    events = run.events()
    info = next(e for e in events if e["type"] == "info" and "window" in e)
    assert info["tool_mode"] == "constrained"
    assert [e["input"]["file_path"] for e in events if e["type"] == "tool_start"] == [
        "alpha.py",
        "beta.py",
        "gamma.py",
    ]
    text = "".join(e["text"] for e in events if e["type"] == "text_delta")
    assert text == "beta.py defines the most functions (4: beta.py:1-10)."  # decoded, not JSON
    assert not [e for e in events if e["type"] == "text_call"]
    result = events[-1]
    assert (result["ending"], result["tool_calls"], result["turns"]) == ("end_turn", 3, 3)
    chats = [b for b in bodies if b.get("max_tokens") != 1]
    # No tool definitions: the reply format rides in the system prompt, the schema in response_format.
    assert all("tools" not in b and b["response_format"]["type"] == "json_schema" for b in chats)
    assert "Reply with one JSON object with one of these keys:" in chats[0]["messages"][0]["content"]
    # The repeated step was not kept: the last request is the second one again, with the answer's schema.
    assert chats[2]["messages"] == chats[1]["messages"]
    assert chats[1]["messages"][2] == {
        "role": "assistant",
        "content": '{"read": ["alpha.py", "beta.py", "gamma.py"]}',
    }
    assert chats[1]["messages"][3]["content"].startswith(
        "Result of Read alpha.py:\n(2 functions: f0, f1)\n1\tdef f0():"
    )
    assert chats[2]["response_format"]["json_schema"]["schema"]["required"] == ["answer"]


def test_the_exact_count_is_of_the_body_sent(tmp_path: Path) -> None:
    # What the governor counts (/apply-template + /tokenize) is the constrained body, not tool JSON.
    bodies: list[dict[str, Any]] = []
    with LiveServer(llamacpp_steps(lambda b: {"answer": "hi"}, bodies)) as server:
        run = run_cli("-w", str(workspace(tmp_path)), "--base-url", server.url, "-m", "m", "--json", "hi?")
    assert run.code == 0, run.err
    turn = next(e for e in run.events() if e["type"] == "turn_end")
    chat = next(b for b in bodies if "response_format" in b)
    assert turn["exact"] and turn["context"] == len(toy_tokens(render_chat(chat)))


def test_a_server_that_refuses_the_schema_gets_tool_definitions_with_one_warning(tmp_path: Path) -> None:
    bodies: list[dict[str, Any]] = []

    def refuse(body: dict[str, Any]) -> Failure:
        return Failure(400, json.dumps({"error": {"code": 400, "message": "failed to parse grammar"}}))

    app = llamacpp_steps(refuse, bodies)

    async def chat(request: Request) -> Response:
        body = await request.json()
        bodies.append(body)
        if "response_format" in body:
            return await respond(refuse(body), body)
        return await respond(Reply(text="It is beta.py.", prompt_tokens=chat_tokens(body)), body)

    app.router.routes[-1] = Route("/v1/chat/completions", chat, methods=["POST"])
    with LiveServer(app) as server:
        run = run_cli("-w", str(workspace(tmp_path)), "--base-url", server.url, "-m", "m", "which?")
    assert run.code == 0, run.err
    assert run.err.count("refused the JSON-schema constraint") == 1
    assert "failed to parse grammar" in run.err
    assert "It is beta.py." in run.out
    chats = [b for b in bodies if b.get("max_tokens") != 1]
    assert ["response_format" in b for b in chats] == [True, False]
    assert [t["function"]["name"] for t in chats[1]["tools"]] == ["Read", "Find", "Grep", "Glob", "LS"]


def test_tool_mode_native_sends_lean_definitions_in_a_small_window(tmp_path: Path) -> None:
    bodies: list[dict[str, Any]] = []
    app = llamacpp_steps(lambda b: {"answer": "x"}, bodies)

    async def chat(request: Request) -> Response:
        body = await request.json()
        bodies.append(body)
        return await respond(Reply(text="It is beta.py.", prompt_tokens=chat_tokens(body)), body)

    app.router.routes[-1] = Route("/v1/chat/completions", chat, methods=["POST"])
    with LiveServer(app) as server:
        run = run_cli(
            "-w", str(workspace(tmp_path)), "--base-url", server.url, "-m", "m", "--tool-mode", "native", "q"
        )
    assert run.code == 0, run.err
    read = next(t["function"] for t in bodies[0]["tools"] if t["function"]["name"] == "Read")
    # Its first sentence and bare arguments: a 4096 window gets the lean definitions.
    assert read["description"] == "Read files with line numbers."
    assert read["parameters"]["properties"]["file_path"] == {"type": "string", "minLength": 1}
    assert "response_format" not in bodies[0]


def ollama_steps(bodies: list[dict[str, Any]], version: str) -> Starlette:
    """Ollama's native API as aforo detects it; /api/chat answers a `format` schema with a step."""

    async def chat(request: Request) -> Response:
        body = await request.json()
        bodies.append(body)
        schema = body.get("format")
        step = {"answer": "Hello from Ollama."} if schema else None
        content = json.dumps(step) if step else "plain text"
        if schema:
            assert Draft202012Validator(schema).is_valid(step)
        lines = [
            {"model": body["model"], "message": {"role": "assistant", "content": content[:9]}, "done": False},
            {"model": body["model"], "message": {"role": "assistant", "content": content[9:]}, "done": False},
            {
                "model": body["model"],
                "message": {"role": "assistant", "content": ""},
                "done": True,
                "done_reason": "stop",
                "prompt_eval_count": 120,
                "eval_count": 9,
            },
        ]
        return StreamingResponse(iter(json.dumps(x) + "\n" for x in lines), media_type="application/x-ndjson")

    async def version_doc(request: Request) -> Response:
        return JSONResponse({"version": version})

    async def tags(request: Request) -> Response:
        return JSONResponse({"models": [{"name": "qwen2.5-coder:0.5b", "model": "qwen2.5-coder:0.5b"}]})

    async def ps(request: Request) -> Response:
        return JSONResponse({"models": []})

    async def show(request: Request) -> Response:
        return JSONResponse({"model_info": {"qwen2.context_length": 32768}})

    return Starlette(
        routes=[
            Route("/api/version", version_doc),
            Route("/api/tags", tags),
            Route("/api/ps", ps),
            Route("/api/show", show, methods=["POST"]),
            Route("/api/chat", chat, methods=["POST"]),
            Route("/", lambda r: Response("Ollama is running")),
        ]
    )


def test_ollama_takes_the_step_schema_as_format_from_0_5(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    for version, constrained in (("0.12.6", True), ("0.4.7", False)):
        bodies: list[dict[str, Any]] = []
        with LiveServer(ollama_steps(bodies, version)) as server:
            run = run_cli(
                "-w",
                str(ws),
                "--base-url",
                server.url,
                "-m",
                "qwen2.5-coder:0.5b",
                "--context-window",
                "4096",
                "--json",
                "hi?",
            )
        assert run.code == 0, run.err
        events = run.events()
        info = next(e for e in events if e["type"] == "info" and "window" in e)
        assert info["tool_mode"] == ("constrained" if constrained else "native"), version
        chat = bodies[-1]
        assert ("format" in chat) is constrained and ("tools" in chat) is not constrained
        text = "".join(e["text"] for e in events if e["type"] == "text_delta")
        assert text == ("Hello from Ollama." if constrained else "plain text")


def test_after_results_only_the_typed_question_is_repeated_not_the_piped_text(tmp_path: Path) -> None:
    bodies: list[dict[str, Any]] = []

    def read_once(body: dict[str, Any]) -> dict[str, Any]:
        done = any("Result of Read" in m["content"] for m in body["messages"])
        return {"answer": "Same as beta.py."} if done else {"read": ["beta.py"]}

    piped = "def piped_marker():\n    return 'PIPED-BODY'\n"
    with LiveServer(llamacpp_steps(read_once, bodies)) as server:
        flags = ("-w", str(workspace(tmp_path)), "--base-url", server.url, "-m", "m")
        run = run_cli(*flags, "--json", "is this in the workspace?", stdin=piped)
    assert run.code == 0, run.err
    chats = [b for b in bodies if b.get("max_tokens") != 1]
    last = chats[-1]["messages"][-1]["content"]
    assert last.startswith("Result of Read beta.py:") and last.endswith("\n\nis this in the workspace?")
    # The piped text is in the conversation once: in the prompt, not again after the results.
    assert json.dumps(chats[-1]["messages"]).count("PIPED-BODY") == 1
