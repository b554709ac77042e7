"""The CLI against an Ollama-dialect server: aforo sets num_ctx itself, so a window mismatch cannot
silently lose the task (issue 6)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from dialects.servers_apps import chat_tokens
from support.cli import run_cli
from support.live_server import LiveServer

MODEL = "qwen2.5-coder:0.5b"


def ollama(version: str, loaded_ctx: int, received: list[dict[str, Any]]) -> Starlette:
    """Ollama that truncates silently to num_ctx unless `truncate: false` (then it answers 400)."""

    async def chat(request: Request) -> Response:
        body = await request.json()
        received.append(body)
        num_ctx = (body.get("options") or {}).get("num_ctx", loaded_ctx)
        tokens = chat_tokens(body)
        if tokens > num_ctx and body.get("truncate") is False:
            return JSONResponse({"error": "the input length exceeds the context length"}, status_code=400)
        messages = body["messages"]
        tool_seen = [m for m in messages if m["role"] == "tool"]
        if not tool_seen:
            message = {
                "role": "assistant",
                "content": "",
                "tool_calls": [{"function": {"name": "Read", "arguments": {"file_path": "app.py"}}}],
            }
        else:
            message = {"role": "assistant", "content": f"app.py says: {tool_seen[-1]['content'][-30:]}"}

        def lines() -> Iterator[str]:
            yield json.dumps({"model": MODEL, "message": message, "done": False}) + "\n"
            yield (
                json.dumps(
                    {
                        "model": MODEL,
                        "message": {"role": "assistant", "content": ""},
                        "done": True,
                        "done_reason": "stop",
                        "prompt_eval_count": min(tokens, num_ctx),
                        "eval_count": 9,
                    }
                )
                + "\n"
            )

        return StreamingResponse(lines(), media_type="application/x-ndjson")

    return Starlette(
        routes=[
            Route("/api/version", lambda r: JSONResponse({"version": version})),
            Route("/api/tags", lambda r: JSONResponse({"models": [{"name": MODEL, "model": MODEL}]})),
            Route(
                "/api/ps",
                lambda r: JSONResponse(
                    {"models": [{"name": MODEL, "model": MODEL, "context_length": loaded_ctx}]}
                ),
            ),
            Route("/api/chat", chat, methods=["POST"]),
        ]
    )


@pytest.mark.parametrize(
    ("version", "flags", "num_ctx"),
    [
        ("0.12.6", ["--context-window", "32768"], 32768),  # told larger than loaded: aforo sets it
        ("0.12.6", [], 4096),  # nothing told: the loaded window, from /api/ps
        ("0.10.1", [], 4096),  # too old for truncate:false: num_ctx still agrees by construction
    ],
)
def test_native_ollama_sets_num_ctx(tmp_path: Path, version: str, flags: list[str], num_ctx: int) -> None:
    (tmp_path / "app.py").write_text("print('the end of app.py')\n")
    received: list[dict[str, Any]] = []
    with LiveServer(ollama(version, 4096, received)) as server:
        # Native tool calls (the fake writes one); with a schema num_ctx is the same (test_constrained_cli).
        args = ("--base-url", server.url, "-m", MODEL, "--tool-mode", "native", "--json", *flags, "what?")
        run = run_cli("-w", str(tmp_path), *args)
    assert run.code == 0, run.out + run.err
    assert run.run_end()["reason"] == "end_turn"
    assert {b["options"]["num_ctx"] for b in received} == {num_ctx}
    assert all(b["options"]["num_predict"] == num_ctx // 4 for b in received)
    assert all(b.get("truncate") is (False if version >= "0.12.6" else None) for b in received)
    info = next(e for e in run.events() if e["type"] == "info")
    assert (info["server"], info["window"]) == ("ollama", num_ctx)
    assert "the end of app.py" in "".join(e["text"] for e in run.events() if e["type"] == "text_delta")
