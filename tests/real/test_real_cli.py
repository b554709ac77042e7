"""End to end: the `aforo` console script answers a question about examples/demo with the real model.

The contract, not the wording: exit 0, one JSON event per line, each valid against the schema
(docs/json-events.schema.json), at least one real tool call run (the model writes its calls as text:
this goes through the text tool-call fallback, and each is a `text_call` event, never answer text),
a single run_end with reason end_turn and, last, the `result` with the answer.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from support.cli import run_cli

pytestmark = pytest.mark.real

SCHEMA = json.loads((Path(__file__).parents[2] / "docs" / "json-events.schema.json").read_text())
QUESTION = "Read wordfreq/counter.py and explain it."  # the 0.5B model calls a tool for this wording


@pytest.mark.timeout(900)  # several turns of up to 1024 generated tokens at ~45 tok/s on 2 cores
def test_demo_question_answered_after_real_tool_calls(
    real_base_url: str, real_model: str, demo_workspace: Path
) -> None:
    run = run_cli(
        "--workspace",
        str(demo_workspace),
        "--base-url",
        real_base_url,
        "--model",
        real_model,
        "--max-turns",
        "6",
        "--json",
        QUESTION,
        timeout=600,
    )
    assert run.code == 0, f"exit {run.code}\nstdout:\n{run.out[-3000:]}\nstderr:\n{run.err[-3000:]}"
    events: list[dict[str, Any]] = run.events()
    for event in events:
        jsonschema.validate(event, SCHEMA)
    end = run.run_end()
    assert events[-2] == end and events[-1]["type"] == "result"
    assert end["reason"] == "end_turn"
    assert end["tool_calls"] >= 1
    starts = [e for e in events if e["type"] == "tool_start"]
    ends = [e for e in events if e["type"] == "tool_end"]
    assert len(starts) == len(ends) == end["tool_calls"]
    assert {s["name"] for s in starts} <= {"Glob", "Grep", "Read", "LS"}
    # The answer itself is streamed text after the last tool result.
    last_tool = max(i for i, e in enumerate(events) if e["type"] == "tool_end")
    answer = "".join(e["text"] for e in events[last_tool:] if e["type"] == "text_delta")
    assert answer.strip() and events[-1]["answer"] == answer.strip()
    # On llama-server each answer is a constrained step: the calls are tool events, never text, and the
    # answer streams as text (decoded from its JSON step).
    info = next(e for e in events if e["type"] == "info" and "window" in e)
    assert info["tool_mode"] == "constrained"
    assert not [e for e in events if e["type"] == "text_call"]
    assert not answer.lstrip().startswith("{")
