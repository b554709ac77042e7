"""The `real` tests run against a real llama-server started by `scripts/real-model run` (make test-real).

That script exports AFORO_REAL_BASE_URL (http://127.0.0.1:PORT/v1) and AFORO_REAL_MODEL. Without them
every `real` test is skipped with a reason that says how to run them, and the summary says so in
capitals: a skipped real suite must never look like a passed one.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from aforo.loop.prompt import system_prompt
from aforo.messages import Message, Request
from aforo.tools.registry import default_registry

HOW = "run via `make test-real` (scripts/real-model run -- .venv/bin/pytest -q -m real)"


def _unavailable_reason() -> str | None:
    if os.environ.get("AFORO_REAL_UNAVAILABLE"):
        return f"the real model cannot run on this platform: {os.environ['AFORO_REAL_UNAVAILABLE']}"
    if not os.environ.get("AFORO_REAL_BASE_URL"):
        return f"AFORO_REAL_BASE_URL is not set: no real llama-server; {HOW}"
    return None


# A real model on 2 CPU cores prefills ~50-180 tokens/s: a test may take minutes, not the fast suite's 120 s.
REAL_TIMEOUT_S = 900


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    reason = _unavailable_reason()
    for item in items:
        if "real" not in item.keywords:
            continue
        item.add_marker(pytest.mark.timeout(REAL_TIMEOUT_S))
        if reason is not None:
            item.add_marker(pytest.mark.skip(reason=reason))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    reason = _unavailable_reason()
    skipped = [r for r in terminalreporter.stats.get("skipped", []) if "real" in getattr(r, "keywords", {})]
    if reason is not None and skipped:
        terminalreporter.write_sep("!", f"{len(skipped)} REAL-MODEL TESTS SKIPPED: {reason}", red=True)


@pytest.fixture(scope="session")
def real_base_url() -> str:
    """The running llama-server's OpenAI base URL, ending in /v1."""
    reason = _unavailable_reason()
    if reason is not None:
        pytest.skip(reason)
    return os.environ["AFORO_REAL_BASE_URL"].rstrip("/")


@pytest.fixture(scope="session")
def real_model() -> str:
    return os.environ.get("AFORO_REAL_MODEL", "")


@pytest.fixture(scope="session")
def real_server_url(real_base_url: str) -> str:
    """The same server without /v1, for llama-server's own endpoints (/props, /health, /tokenize)."""
    return real_base_url.removesuffix("/v1")


@pytest.fixture(autouse=True)
def fresh_prompt_cache(real_server_url: str) -> None:
    """Each test starts with llama-server's prompt cache empty, so its greedy answers do not depend on
    which tests ran before: a prompt that shares a prefix with a cached one is only partly recomputed, in
    another batch layout, and a 0.5B model's answer can flip on that (measured). `scripts/real-model
    --reproducible` (what `make test-real` uses) enables the slot action; elsewhere it is best effort."""
    try:
        answer = httpx.post(f"{real_server_url}/slots/0", params={"action": "erase"}, timeout=30)
    except httpx.HTTPError as exc:
        warnings.warn(f"could not empty llama-server's prompt cache ({exc}): answers may vary", stacklevel=1)
        return
    if answer.status_code != 200:
        warnings.warn(
            f"llama-server did not empty its prompt cache (HTTP {answer.status_code}: start it with "
            "`scripts/real-model start --reproducible`): answers may depend on earlier tests",
            stacklevel=1,
        )


DEMO = Path(__file__).resolve().parents[2] / "examples" / "demo"


@pytest.fixture(scope="session")
def demo_workspace() -> Path:
    return DEMO


@pytest.fixture(scope="session")
def demo_request(real_model: str) -> Callable[..., Request]:
    """Build the request aforo sends for examples/demo: its system prompt, its tools, these messages."""
    system = system_prompt(DEMO).parts
    tools = default_registry(DEMO).specs

    def build(*messages: Message, max_tokens: int = 256) -> Request:
        return Request(real_model, system, tools, tuple(messages), max_tokens)

    return build
