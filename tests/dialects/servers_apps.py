"""Starlette apps that imitate each server's discovery, window, tokenize and chat endpoints.

Shaped on the documented responses (llama-server, vLLM, Ollama, LM Studio, LiteLLM, TGI). They count
tokens with one toy tokenizer (words and punctuation over a ChatML rendering, plus a BOS), so the exact
counters, the chat usage and the probe can be checked against each other. Every app records the JSON
bodies it received in `app.state.received` as (path, body) pairs.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route

TOKEN = re.compile(r"\w+|[^\w\s]")
COLLAPSE_TOKENS = 63


def toy_tokens(text: str) -> list[str]:
    return TOKEN.findall(text)


def render_chat(body: dict[str, Any]) -> str:
    """A ChatML rendering of an OpenAI chat body: the 'template' of these servers."""
    parts: list[str] = []
    if body.get("tools"):
        parts.append(f"<|im_start|>system\n# Tools\n{json.dumps(body['tools'])}<|im_end|>\n")
    for message in body.get("messages", []):
        content = message.get("content") or ""
        for call in message.get("tool_calls") or []:
            content += f"\n<tool_call>{json.dumps(call.get('function'))}</tool_call>"
        parts.append(f"<|im_start|>{message['role']}\n{content}<|im_end|>\n")
    parts.append("<|im_start|>assistant\n")
    return "".join(parts)


def chat_tokens(body: dict[str, Any]) -> int:
    """Prompt tokens of a chat body: the rendered template plus the BOS the server adds."""
    return len(toy_tokens(render_chat(body))) + 1


def _app(routes: list[Route]) -> Starlette:
    app = Starlette(routes=routes)
    app.state.received = []
    return app


async def _body(request: Request) -> dict[str, Any]:
    body = await request.json()
    request.app.state.received.append((request.url.path, body))
    return dict(body)


def _completion(prompt_tokens: int) -> JSONResponse:
    return JSONResponse(
        {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "length"}
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": 1,
                "total_tokens": prompt_tokens + 1,
            },
        }
    )


def silent_completion(tokens: int, window: int, overflow: str) -> JSONResponse:
    """Too long a prompt is cut ('truncate' keeps the newest `window` tokens and reports those),
    collapses to a tiny constant ('collapse'), or is refused with Ollama's words, which carry no
    numbers ('error')."""
    if tokens <= window:
        return _completion(tokens)
    if overflow == "error":
        return JSONResponse({"error": "the input length exceeds the context length"}, status_code=400)
    return _completion(window if overflow == "truncate" else COLLAPSE_TOKENS)


# --- llama-server --------------------------------------------------------------------------------------


def llamacpp_app(
    n_ctx: int = 4096, *, input_tokens: bool = True, model: str = "qwen2.5-coder-0.5b.gguf"
) -> Starlette:
    async def props(request: Request) -> Response:
        return JSONResponse(
            {
                "default_generation_settings": {"n_ctx": n_ctx, "params": {"n_predict": -1}},
                "total_slots": 1,
                "model_path": f"/models/{model}",
                "build_info": "b11434-abc",
            }
        )

    async def models(request: Request) -> Response:
        meta = {"n_ctx_train": 32768, "n_ctx": n_ctx, "n_vocab": 151936}
        return JSONResponse(
            {
                "object": "list",
                "data": [{"id": model, "object": "model", "owned_by": "llamacpp", "meta": meta}],
            }
        )

    async def count(request: Request) -> Response:
        if not input_tokens:
            return JSONResponse({"error": {"code": 404, "message": "File Not Found"}}, status_code=404)
        return JSONResponse({"input_tokens": chat_tokens(await _body(request))})

    async def apply_template(request: Request) -> Response:
        return JSONResponse({"prompt": render_chat(await _body(request))})

    async def tokenize(request: Request) -> Response:
        body = await _body(request)
        tokens = list(range(len(toy_tokens(body["content"]))))
        if body.get("add_special"):
            tokens.insert(0, 151643)
        return JSONResponse({"tokens": tokens})

    async def chat(request: Request) -> Response:
        body = await _body(request)
        tokens = chat_tokens(body)
        if tokens > n_ctx:
            message = (
                f"request ({tokens} tokens) exceeds the available context size ({n_ctx} tokens),"
                " try increasing it"
            )
            error = {
                "code": 400,
                "message": message,
                "type": "exceed_context_size_error",
                "n_prompt_tokens": tokens,
                "n_ctx": n_ctx,
            }
            return JSONResponse({"error": error}, status_code=400)
        return _completion(tokens)

    return _app(
        [
            Route("/props", props),
            Route("/v1/models", models),
            Route("/health", lambda r: JSONResponse({"status": "ok"})),
            Route("/v1/chat/completions/input_tokens", count, methods=["POST"]),
            Route("/apply-template", apply_template, methods=["POST"]),
            Route("/tokenize", tokenize, methods=["POST"]),
            Route("/v1/chat/completions", chat, methods=["POST"]),
        ]
    )


# --- vLLM ----------------------------------------------------------------------------------------------


def vllm_app(max_model_len: int = 8192, model: str = "Qwen/Qwen2.5-7B-Instruct") -> Starlette:
    async def models(request: Request) -> Response:
        entry = {
            "id": model,
            "object": "model",
            "owned_by": "vllm",
            "root": model,
            "max_model_len": max_model_len,
        }
        return JSONResponse({"object": "list", "data": [entry]})

    async def tokenize(request: Request) -> Response:
        body = await _body(request)
        if "messages" not in body:
            return JSONResponse(
                {"object": "error", "message": "prompt or messages required"}, status_code=400
            )
        count = chat_tokens(body)
        return JSONResponse({"count": count, "max_model_len": max_model_len, "tokens": list(range(count))})

    return _app(
        [
            Route("/v1/models", models),
            Route("/version", lambda r: JSONResponse({"version": "0.6.3"})),
            Route("/tokenize", tokenize, methods=["POST"]),
        ]
    )


# --- TGI -----------------------------------------------------------------------------------------------


def tgi_app(max_input_tokens: int = 4095, max_total_tokens: int = 4096) -> Starlette:
    async def info(request: Request) -> Response:
        return JSONResponse(
            {
                "model_id": "HuggingFaceTB/SmolLM2-1.7B-Instruct",
                "max_input_tokens": max_input_tokens,
                "max_total_tokens": max_total_tokens,
                "max_concurrent_requests": 128,
                "router": "text-generation-router",
                "version": "2.4.0",
            }
        )

    async def chat_tokenize(request: Request) -> Response:
        body = await _body(request)
        text = render_chat(body)
        tokens = [
            {"id": i, "text": t, "start": 0, "stop": 0} for i, t in enumerate(["<s>", *toy_tokens(text)])
        ]
        return JSONResponse({"tokenize_response": tokens, "templated_text": text})

    models = {"object": "list", "data": [{"id": "tgi", "object": "model", "owned_by": "HuggingFaceTB"}]}
    return _app(
        [
            Route("/info", info),
            Route("/v1/models", lambda r: JSONResponse(models)),
            Route("/chat_tokenize", chat_tokenize, methods=["POST"]),
        ]
    )


# --- LM Studio -----------------------------------------------------------------------------------------


def lmstudio_app(loaded_context_length: int | None = 8192, model: str = "qwen2.5-7b-instruct") -> Starlette:
    entry: dict[str, Any] = {
        "id": model,
        "object": "model",
        "type": "llm",
        "publisher": "lmstudio-community",
        "arch": "qwen2",
        "state": "loaded" if loaded_context_length else "not-loaded",
        "max_context_length": 32768,
    }
    if loaded_context_length:
        entry["loaded_context_length"] = loaded_context_length
    other = {**entry, "id": "other-model", "state": "not-loaded"}
    other.pop("loaded_context_length", None)
    v0 = {"object": "list", "data": [entry, other]}
    v1 = {"object": "list", "data": [{"id": model, "object": "model", "owned_by": "organization_owner"}]}
    return _app(
        [Route("/api/v0/models", lambda r: JSONResponse(v0)), Route("/v1/models", lambda r: JSONResponse(v1))]
    )


# --- LiteLLM proxy -------------------------------------------------------------------------------------


def litellm_app(max_input_tokens: int = 128000, model: str = "gpt-4o") -> Starlette:
    info = {
        "data": [
            {
                "model_name": model,
                "litellm_params": {"model": f"openai/{model}"},
                "model_info": {"id": "abc", "max_input_tokens": max_input_tokens, "max_tokens": 16384},
            },
            {
                "model_name": "local",
                "litellm_params": {"model": "ollama/qwen"},
                "model_info": {"id": "def", "max_input_tokens": 32768},
            },
        ]
    }
    models = {
        "object": "list",
        "data": [{"id": m["model_name"], "object": "model", "owned_by": "openai"} for m in info["data"]],
    }
    return _app(
        [
            Route("/model/info", lambda r: JSONResponse(info)),
            Route("/v1/models", lambda r: JSONResponse(models)),
        ]
    )


# --- a generic OpenAI-compatible server (and the silent truncation of the probe) -------------------------


def generic_app(
    *, catalog: dict[str, Any] | None = None, window: int = 4096, overflow: str = "truncate", model: str = "m"
) -> Starlette:
    """Only /v1: a model list (with `catalog` fields merged into the entry) and a chat endpoint that
    silently truncates or collapses prompts over `window`."""
    entry = {"id": model, "object": "model", "owned_by": "someone", **(catalog or {})}

    async def chat(request: Request) -> Response:
        return silent_completion(chat_tokens(await _body(request)), window, overflow)

    return _app(
        [
            Route("/v1/models", lambda r: JSONResponse({"object": "list", "data": [entry]})),
            Route("/v1/chat/completions", chat, methods=["POST"]),
        ]
    )


# --- Ollama --------------------------------------------------------------------------------------------


def ollama_app(
    *,
    version: str = "0.12.6",
    loaded: dict[str, int] | None = None,
    models: tuple[str, ...] = ("qwen2.5-coder:0.5b",),
    script: list[dict[str, Any]] | None = None,
    default_num_ctx: int = 4096,
) -> Starlette:
    """An Ollama server. `/api/chat` plays `script` (one entry per call: `chunks` of text, `tool_calls`,
    `done_reason`, `prompt_eval_count`, `eval_count`, or `omit_counts`); with `truncate: false` and a
    prompt over num_ctx it answers 400 as Ollama >= 0.12.6 does; an unknown model is a 404."""
    turns = list(script or [])

    async def chat(request: Request) -> Response:
        body = await _body(request)
        name = body.get("model", "")
        if name not in models and f"{name}:latest" not in models:
            return JSONResponse({"error": f'model "{name}" not found, try pulling it first'}, status_code=404)
        num_ctx = (body.get("options") or {}).get("num_ctx", default_num_ctx)
        if body.get("truncate") is False and chat_tokens(body) > num_ctx:
            return JSONResponse({"error": "the input length exceeds the context length"}, status_code=400)
        turn = turns.pop(0) if turns else {"chunks": ["ok"]}
        return StreamingResponse(_ndjson(name, turn), media_type="application/x-ndjson")

    def _ndjson(name: str, turn: dict[str, Any]) -> Iterator[str]:
        stamp = "2025-01-01T00:00:00Z"
        for text in turn.get("chunks", []):
            line = {
                "model": name,
                "created_at": stamp,
                "message": {"role": "assistant", "content": text},
                "done": False,
            }
            yield json.dumps(line) + "\n"
        if turn.get("tool_calls"):
            message = {"role": "assistant", "content": "", "tool_calls": turn["tool_calls"]}
            yield json.dumps({"model": name, "created_at": stamp, "message": message, "done": False}) + "\n"
        if turn.get("cut"):
            return  # the connection ends before the final line
        final: dict[str, Any] = {
            "model": name,
            "created_at": stamp,
            "message": {"role": "assistant", "content": ""},
            "done": True,
            "done_reason": turn.get("done_reason", "stop"),
            "total_duration": 1000,
        }
        if not turn.get("omit_counts"):
            final["prompt_eval_count"] = turn.get("prompt_eval_count", 42)
            final["eval_count"] = turn.get("eval_count", 7)
        yield json.dumps(final) + "\n"

    def ps(request: Request) -> Response:
        entries = [{"name": n, "model": n, "size": 1, "context_length": c} for n, c in (loaded or {}).items()]
        return JSONResponse({"models": entries})

    async def show(request: Request) -> Response:
        await _body(request)
        return JSONResponse({"model_info": {"general.architecture": "qwen2", "qwen2.context_length": 32768}})

    tags = {"models": [{"name": n, "model": n, "size": 1} for n in models]}
    return _app(
        [
            Route("/", lambda r: PlainTextResponse("Ollama is running")),
            Route("/api/version", lambda r: JSONResponse({"version": version})),
            Route("/api/tags", lambda r: JSONResponse(tags)),
            Route("/api/ps", ps),
            Route("/api/show", show, methods=["POST"]),
            Route("/api/chat", chat, methods=["POST"]),
            Route(
                "/v1/models",
                lambda r: JSONResponse(
                    {
                        "object": "list",
                        "data": [{"id": n, "object": "model", "owned_by": "library"} for n in models],
                    }
                ),
            ),
        ]
    )
