"""Every server's "too long" answer maps to ContextOverflowError; other failures do not."""

from __future__ import annotations

import json

import pytest

from aforo.errors import ContextOverflowError, HTTPStatusError
from aforo.providers.retry import is_retryable
from aforo.wire.http import server_message, status_error
from aforo.wire.overflow_wordings import map_overflow


def _openai_error(message: str, type_: str = "invalid_request_error", code: object = None) -> str:
    return json.dumps({"error": {"message": message, "type": type_, "param": None, "code": code}})


# (dialect, status, body, n_prompt, n_ctx) — bodies shaped as each server sends them.
OVERFLOWS = [
    (
        "llama-server exceed_context_size_error",
        400,
        json.dumps(
            {
                "error": {
                    "code": 400,
                    "message": "the request exceeds the available context size, try increasing it",
                    "type": "exceed_context_size_error",
                    "n_prompt_tokens": 4718,
                    "n_ctx": 4096,
                }
            }
        ),
        4718,
        4096,
    ),
    (
        "llama-server 500 (older builds)",
        500,
        json.dumps(
            {"error": {"code": 500, "message": "Context size has been exceeded.", "type": "server_error"}}
        ),
        None,
        None,
    ),
    (
        "vLLM 400 maximum context length (flat object)",
        400,
        json.dumps(
            {
                "object": "error",
                "message": "This model's maximum context length is 2048 tokens. However, you requested 2350 "
                "tokens (2094 in the messages, 256 in the completion). Please reduce the length of the "
                "messages or completion.",
                "type": "BadRequestError",
                "param": None,
                "code": 400,
            }
        ),
        2350,
        2048,
    ),
    (
        "vLLM 400 newer wording",
        400,
        _openai_error(
            "This model's maximum context length is 8192 tokens. However, your request has 9001 input "
            "tokens. Please reduce the length of the input messages.",
            "BadRequestError",
            400,
        ),
        9001,
        8192,
    ),
    (
        "llama-cpp-python context_length_exceeded",
        400,
        _openai_error(
            "This model's maximum context length is 2048 tokens. However, you requested 3100 tokens "
            "(2844 in the messages, 256 in the completion). Please reduce the length of the messages or "
            "completion.",
            code="context_length_exceeded",
        ),
        3100,
        2048,
    ),
    (
        "llama-cpp-python raw ValueError",
        400,
        json.dumps({"detail": "Requested tokens (5000) exceed context window of 4096"}),
        5000,
        4096,
    ),
    (
        "Ollama input length",
        400,
        _openai_error("the input length exceeds the context length", "api_error"),
        None,
        None,
    ),
    (
        "Ollama prompt longer",
        400,
        json.dumps({"error": "the prompt is longer than the context length, please shorten it"}),
        None,
        None,
    ),
    (
        "TGI 422 validation",
        422,
        json.dumps(
            {
                "error": "Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4096. "
                "Given: 4000 `inputs` tokens and 1024 `max_new_tokens`",
                "error_type": "validation",
            }
        ),
        4000,
        4096,
    ),
    (
        "TGI 422 inputs too long",
        422,
        json.dumps(
            {
                "error": "Input validation error: `inputs` must have less than 2048 tokens. Given: 3010",
                "error_type": "validation",
            }
        ),
        3010,
        2048,
    ),
    (
        "LM Studio",
        400,
        json.dumps(
            {
                "error": "Trying to keep the first 5210 tokens when context the overflows. However, the "
                "model is loaded with context length of only 4096 tokens, which is not enough. Try to load "
                "the model with a larger context length, or provide a shorter input"
            }
        ),
        5210,
        4096,
    ),
    (
        "LiteLLM proxy",
        400,
        _openai_error(
            "litellm.ContextWindowExceededError: litellm.BadRequestError: prompt too long",
            code="context_length_exceeded",
        ),
        None,
        None,
    ),
]


@pytest.mark.parametrize(
    ("dialect", "status", "body", "n_prompt", "n_ctx"), OVERFLOWS, ids=[o[0] for o in OVERFLOWS]
)
def test_each_dialect_is_an_overflow_with_its_numbers(
    dialect: str, status: int, body: str, n_prompt: int | None, n_ctx: int | None
) -> None:
    error = map_overflow(status, body)
    assert isinstance(error, ContextOverflowError), dialect
    assert (error.n_prompt, error.n_ctx) == (n_prompt, n_ctx)
    assert "--context-window" in str(error)
    if n_ctx is not None:
        assert f"--context-window {n_ctx}" in str(error)
    assert not error.retryable


@pytest.mark.parametrize(
    ("status", "body"),
    [
        (400, _openai_error("'messages' must be a list")),
        (404, _openai_error('model "qwen" not found, try pulling it first')),
        (500, json.dumps({"error": {"code": 500, "message": "CUDA error: out of memory"}})),
        (422, json.dumps({"error": "Input validation error: `temperature` must be strictly positive"})),
        (502, "<html><body>Bad Gateway</body></html>"),
        (400, ""),
        (400, "{not json"),
        (400, json.dumps(["a", "list"])),
        (400, json.dumps({"error": {"type": "exceed_context_size_error", "n_ctx": "4096"}})[:-3]),
        # The overflow words with a status the dialect never uses are not an overflow.
        (503, json.dumps({"error": "the input length exceeds the context length"})),
    ],
)
def test_other_failures_are_not_overflows(status: int, body: str) -> None:
    assert map_overflow(status, body) is None


def test_llama_server_overflow_without_numbers_still_maps() -> None:
    body = json.dumps({"error": {"type": "exceed_context_size_error", "message": "too long"}})
    error = map_overflow(400, body)
    assert error is not None and (error.n_prompt, error.n_ctx) == (None, None)


def test_status_error_prefers_overflow_then_explains_the_status() -> None:
    url = "http://127.0.0.1:1/v1/chat/completions"
    overflow = status_error(
        500, json.dumps({"error": {"message": "Context size has been exceeded."}}), url=url, model="m"
    )
    assert isinstance(overflow, ContextOverflowError)
    other = status_error(500, json.dumps({"error": {"message": "boom"}}), url=url, model="m")
    assert isinstance(other, HTTPStatusError) and other.status == 500 and "boom" in str(other)
    assert is_retryable(other) and not is_retryable(overflow)
    assert not is_retryable(status_error(400, "bad", url=url, model="m"))
    assert is_retryable(status_error(429, "slow down", url=url, model="m"))


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (json.dumps({"error": {"message": "nested"}}), "nested"),
        (json.dumps({"error": "flat"}), "flat"),
        (json.dumps({"object": "error", "message": "vllm style"}), "vllm style"),
        (json.dumps({"detail": "fastapi style"}), "fastapi style"),
        ("plain   text\nbody", "plain text body"),
    ],
)
def test_server_message_reads_the_usual_shapes(body: str, message: str) -> None:
    assert server_message(body) == message
