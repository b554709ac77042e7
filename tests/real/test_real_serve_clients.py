"""Real clients through `aforo serve` in front of the real llama-server: the `openai` SDK, simonw's
`llm` CLI and mini-swe-agent each get a short question answered through the gateway, which checked it
(verdict `clean`: read whole, its report of the prompt consistent with what was sent; `admitted`: a
stream of this loud server, passed on live)."""

from __future__ import annotations

from pathlib import Path

import openai
import pytest

from aforo.events import Event, Info
from serve.gateway_support import gateway
from serve.third_party import LLM_MODEL_ID, Llm, mini

pytestmark = pytest.mark.real

QUESTION = "What is the capital of France? Answer with one word."


def verdicts(events: list[Event]) -> list[str]:
    """The gateway's per-request lines ("model: used/window tokens, verdict (client)"), verdicts only."""
    lines = [str(e.fields["serve"]) for e in events if isinstance(e, Info) and "serve" in e.fields]
    return [line.split(", ")[-1].split(" (")[0] for line in lines]


def test_the_openai_sdk_through_the_gateway(real_base_url: str, real_model: str) -> None:
    with gateway(real_base_url) as (url, events):
        sdk = openai.OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0)
        raw = sdk.chat.completions.with_raw_response.create(
            model=real_model, messages=[{"role": "user", "content": QUESTION}], temperature=0, max_tokens=16
        )
    answer = raw.parse()
    assert "Paris" in (answer.choices[0].message.content or "")
    assert raw.headers["x-aforo-verdict"] == "clean"
    assert (
        raw.headers["x-aforo-context-window"] == "4096"
    )  # llama-server's own, as scripts/real-model runs it
    assert verdicts(events) == ["clean"]


def test_the_llm_cli_through_the_gateway(real_base_url: str, real_model: str, tmp_path: Path) -> None:
    with gateway(real_base_url) as (url, events):
        done = Llm(tmp_path / "llm", url, model=real_model)(
            "-m", LLM_MODEL_ID, "-o", "temperature", "0", QUESTION
        )
    assert done.returncode == 0, done.stderr
    assert "Paris" in done.stdout
    # llm streams and llama-server refuses what does not fit: passed on live, `admitted`, also when llm
    # hangs up right after `[DONE]`, before the gateway saw the stream end (tests/serve/test_serve_hangups).
    assert verdicts(events) == ["admitted"]


def test_mini_swe_agent_through_the_gateway(real_base_url: str, real_model: str, tmp_path: Path) -> None:
    # One step: the 0.5B model's first answer to mini's own prompts (system, task, a bash tool), through
    # the gateway; whether it is a good command is the model's business, not the gateway's.
    with gateway(real_base_url) as (url, events):
        done, saved = mini(url, tmp_path / "run", model=real_model, task=QUESTION, steps=1)
    # The model's answer as mini saved it: its next message, or with a format error the raw response.
    responses = [
        m["extra"]["response"] for m in saved.get("messages", []) if "response" in m.get("extra", {})
    ]
    assert len(responses) == 1, done.stderr[-3000:]
    answer = responses[0]["choices"][0]["message"]
    assert answer.get("content") or answer.get("tool_calls")
    assert saved["info"]["exit_status"] in {"Submitted", "LimitsExceeded"}, done.stderr[-3000:]
    assert verdicts(events) == ["clean"]
