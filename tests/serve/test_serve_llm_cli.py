"""simonw's `llm` CLI (pinned, in its own venv), with an OpenAI-compatible model declared in its
extra-openai-models.yaml, pointed at `aforo serve` in front of a server that drops the oldest messages
and answers 200. The conversation is llm's own: a first prompt, then `llm -c` continues it from llm's
log. Without the gateway the second answer has lost the task and llm prints it as any other; through
the gateway llm exits with the context-length error."""

from __future__ import annotations

from pathlib import Path

import pytest

from dialects.truncating_app import LOST_TASK_ANSWER, TruncatingServer, reader_policy
from serve.gateway_support import gateway
from serve.third_party import INSTALL_TIMEOUT_S, LLM_MODEL_ID, Llm
from support.live_server import LiveServer

pytestmark = [pytest.mark.real, pytest.mark.timeout(INSTALL_TIMEOUT_S + 300)]

MARKER = "TASK-KEY-42"


def notes(first: int, last: int) -> str:
    return " ".join(f"note {i}: " + "lorem ipsum " * 33 for i in range(first, last))


# ~1,500 tokens, then ~650 more: together past the server's real 2,048, so the task (first) is dropped.
TASK = f"{MARKER}: explain what the modules in this project do. {notes(0, 14)}"
MORE = notes(14, 20)


def server() -> TruncatingServer:
    return TruncatingServer(reader_policy(MARKER, []), window=2048, mode="ollama")


def test_without_the_gateway_llm_prints_an_answer_that_lost_the_question(tmp_path: Path) -> None:
    truncating = server()
    with LiveServer(truncating.app) as bare:
        llm = Llm(tmp_path / "llm", bare.url)
        first = llm("-m", LLM_MODEL_ID, TASK)
        second = llm("-c", MORE)
    assert first.returncode == 0, first.stderr
    assert MARKER in first.stdout
    assert second.returncode == 0, second.stderr
    assert second.stdout.strip() == LOST_TASK_ANSWER  # printed as any answer: the task silently gone
    assert truncating.turns[-1].dropped > 0


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "no-stream"])
def test_through_the_gateway_llm_exits_with_the_context_length_error(tmp_path: Path, stream: bool) -> None:
    # The user told aforo the window they believe (8192); the server runs 2048 and drops silently.
    flags = [] if stream else ["--no-stream"]
    with gateway(server().app, window=8192) as (url, _):
        llm = Llm(tmp_path / "llm", url)
        first = llm("-m", LLM_MODEL_ID, *flags, TASK)
        second = llm("-c", *flags, MORE)
    assert first.returncode == 0, first.stderr
    assert MARKER in first.stdout
    assert second.returncode != 0
    assert LOST_TASK_ANSWER not in second.stdout
    # llm prints the SDK's BadRequestError (HTTP 400), whose message is the gateway's.
    assert second.stderr.startswith(
        "Error: Error code: 400 - This model's maximum context length is exceeded: The server silently "
        "dropped part of the conversation"
    )
