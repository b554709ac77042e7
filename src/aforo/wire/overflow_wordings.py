"""Every server's "the prompt is too long" answer, mapped to one `ContextOverflowError`.

Each server says it differently (status, JSON shape, wording), and some tell the real window. The
wordings are data: a name, the statuses it uses, a pattern over the error text and which groups hold
the prompt size and the window. The agent never parses server strings; it gets `n_prompt` / `n_ctx`.
The body may be anything (JSON in several shapes, plain text, HTML from a proxy), so nothing here
raises: an answer we do not recognize is simply not an overflow.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from aforo import safejson
from aforo.errors import ContextOverflowError, LimitExceeded


@dataclass(frozen=True)
class OverflowWording:
    name: str
    statuses: frozenset[int]
    pattern: re.Pattern[str]
    # Named groups of `pattern` that hold the numbers, when the server gives them.
    prompt_group: str | None = None
    window_group: str | None = None


def _p(regex: str) -> re.Pattern[str]:
    return re.compile(regex, re.IGNORECASE | re.DOTALL)


# Most specific first: the first wording whose status and pattern match wins.
WORDINGS: tuple[OverflowWording, ...] = (
    # vLLM, and llama-cpp-python, which rewrites its own error into the same OpenAI wording.
    OverflowWording(
        "vLLM/llama-cpp-python",
        frozenset({400}),
        _p(
            r"maximum context length is (?P<n_ctx>\d+) tokens.*?"
            r"(?:you requested (?P<n_prompt>\d+) tokens|request has (?P<n_prompt2>\d+) input tokens)"
        ),
        "n_prompt",
        "n_ctx",
    ),
    OverflowWording(
        "vLLM/llama-cpp-python",
        frozenset({400}),
        _p(r"maximum context length is (?P<n_ctx>\d+) tokens"),
        None,
        "n_ctx",
    ),
    # llama-cpp-python's own wording.
    OverflowWording(
        "llama-cpp-python",
        frozenset({400}),
        _p(r"requested tokens \((?P<n_prompt>\d+)\) exceed context window of (?P<n_ctx>\d+)"),
        "n_prompt",
        "n_ctx",
    ),
    # TGI: "`inputs` tokens + `max_new_tokens` must be <= N. Given: M `inputs` tokens and K ...".
    OverflowWording(
        "TGI",
        frozenset({422, 400}),
        _p(r"must be <= (?P<n_ctx>\d+)\. Given: (?P<n_prompt>\d+) `inputs` tokens"),
        "n_prompt",
        "n_ctx",
    ),
    OverflowWording(
        "TGI",
        frozenset({422, 400}),
        _p(r"`inputs` must have less than (?P<n_ctx>\d+) tokens\. Given: (?P<n_prompt>\d+)"),
        "n_prompt",
        "n_ctx",
    ),
    # LM Studio: "Trying to keep the first N tokens ... context length of only M tokens".
    OverflowWording(
        "LM Studio",
        frozenset({400}),
        _p(r"trying to keep the first (?P<n_prompt>\d+) tokens.*?context length of only (?P<n_ctx>\d+)"),
        "n_prompt",
        "n_ctx",
    ),
    OverflowWording("Ollama", frozenset({400}), _p(r"the input length exceeds the context length")),
    OverflowWording("Ollama", frozenset({400}), _p(r"the prompt is longer than the context length")),
    # llama-server, older builds: a 500 with no numbers.
    OverflowWording("llama-server", frozenset({500}), _p(r"context size has been exceeded")),
    OverflowWording("llama-server", frozenset({400}), _p(r"exceeds the available context size")),
    # Anything that says it in OpenAI's code (LiteLLM, proxies).
    OverflowWording(
        "OpenAI-compatible", frozenset({400, 413}), _p(r"context_length_exceeded|ContextWindowExceeded")
    ),
)


def _json(body: str) -> Any:
    try:
        return safejson.loads(body, "an error body")
    except (ValueError, LimitExceeded):
        return None


def _llama_server_counts(data: Any) -> tuple[int, int] | None:
    """llama-server's structured answer: error.type exceed_context_size_error with both numbers."""
    error = data.get("error") if isinstance(data, dict) else None
    if not isinstance(error, dict) or error.get("type") != "exceed_context_size_error":
        return None
    n_prompt, n_ctx = error.get("n_prompt_tokens"), error.get("n_ctx")
    return (n_prompt if isinstance(n_prompt, int) else -1, n_ctx if isinstance(n_ctx, int) else -1)


def _int(match: re.Match[str], *groups: str | None) -> int | None:
    for group in groups:
        if group and group in match.re.groupindex and match.group(group) is not None:
            return int(match.group(group))
    return None


def _message(server: str, n_prompt: int | None, n_ctx: int | None, detail: str) -> str:
    if n_ctx is not None and n_prompt is not None:
        sizes = f"the prompt is {n_prompt} tokens but the server's context window is {n_ctx}"
    elif n_ctx is not None:
        sizes = f"the server's context window is {n_ctx} tokens"
    else:
        sizes = "the prompt does not fit the server's context window"
    fix = (
        f"--context-window {n_ctx}" if n_ctx is not None else "--context-window N (the server's real window)"
    )
    return (
        f"the server ({server}) refused the request as too long: {sizes} ({detail.strip()[:300]}). "
        f"Run with {fix}, or start the server with a larger context."
    )


def map_overflow(status: int, body: str) -> ContextOverflowError | None:
    """The overflow error this HTTP answer means, or None when it is some other failure."""
    data = _json(body)
    counts = _llama_server_counts(data)
    if counts is not None:
        n_prompt, n_ctx = (c if c >= 0 else None for c in counts)
        return ContextOverflowError(
            _message("llama-server", n_prompt, n_ctx, "exceed_context_size_error"),
            n_prompt=n_prompt,
            n_ctx=n_ctx,
        )
    # Search the raw body too: the words may sit in error.message, message, detail or plain text.
    text = body if isinstance(body, str) else ""
    for wording in WORDINGS:
        if status not in wording.statuses:
            continue
        match = wording.pattern.search(text)
        if match is None:
            continue
        n_prompt = _int(match, wording.prompt_group, "n_prompt2" if wording.prompt_group else None)
        n_ctx = _int(match, wording.window_group)
        return ContextOverflowError(
            _message(wording.name, n_prompt, n_ctx, match.group(0)), n_prompt=n_prompt, n_ctx=n_ctx
        )
    return None
