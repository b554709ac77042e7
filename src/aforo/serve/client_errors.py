"""What the client gets when the gateway will not pass an answer on: the overflow error its own code
already handles, or another error in its API's shape."""

from __future__ import annotations

import json
from typing import Any

from aforo.serve.inbound import Api

# What Ollama itself says when a prompt does not fit (with `truncate: false`): clients match on it.
OLLAMA_OVERFLOW = "the input length exceeds the context length"
# The opening of OpenAI's own overflow message: clients that classify errors by their text (litellm, and
# with it mini-swe-agent and aider) read the body's `code` only through it.
OPENAI_OVERFLOW = "This model's maximum context length is exceeded"


def overflow_body(api: Api, message: str) -> dict[str, Any]:
    """The error a client's code already reads as "the context is full": OpenAI's, or Ollama's."""
    if api == "openai":
        return {
            "error": {
                "message": f"{OPENAI_OVERFLOW}: {message}",
                "type": "invalid_request_error",
                "param": "messages",
                "code": "context_length_exceeded",
            }
        }
    return {"error": f"{OLLAMA_OVERFLOW}: {message}"}


def error_body(api: Api, message: str, kind: str = "invalid_request_error") -> dict[str, Any]:
    """Any other error the gateway answers itself, in the client's shape."""
    if api == "openai":
        return {"error": {"message": message, "type": kind, "param": None, "code": None}}
    return {"error": message}


def encode(doc: dict[str, Any]) -> bytes:
    return json.dumps(doc, ensure_ascii=False).encode()
