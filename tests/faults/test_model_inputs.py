"""Tool calls no model should send, end to end: a clear tool error, the run goes on (issue 39, D3, D9, D14).

D3: `Read` with `"limit": 1e400` (JSON's infinity) was an OverflowError traceback where the call's
evidence is named, before the tool's own check could refuse it. D9: `Find` with a 100 000-character name
in a 32 768-token window: the summary request repeated the whole input in the result's label, which no
shrinking step touches, so compaction failed and the run ended `context_overflow`. D14: `Read
pkg/core.py:` + 5 000 digits was "internal error in tool Read: ValueError".
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from aforo.context.ledger import evidence_source, short_input
from aforo.limits import LABEL_CHARS
from aforo.messages import ToolUse
from faults.server import misbehaving_app, openai_chunk, sse
from support.cli import CliRun, run_cli
from support.live_server import LiveServer

ANSWER = "The file defines f."


def _one_call(
    tmp_path: Path, tool: str, args: dict[str, Any], window: int = 8192
) -> tuple[CliRun, list[Any]]:
    """aforo asked about a workspace by a model that sends one call, then answers."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "core.py").write_text("def f():\n    return 1\n")

    def behave(n: int) -> object:
        if n == 1:
            call = {"index": 0, "id": "c1", "type": "function"}
            call["function"] = {"name": tool, "arguments": json.dumps(args)}
            return sse([openai_chunk(delta={"tool_calls": [call]}), openai_chunk(finish="tool_calls")])
        return sse([openai_chunk(ANSWER), openai_chunk(finish="stop")])

    app = misbehaving_app(behave)  # type: ignore[arg-type]
    with LiveServer(app) as server:
        flags = ("-w", str(tmp_path), "--base-url", f"{server.url}/v1", "--server", "openai", "-m", "m")
        run = run_cli(*flags, "--context-window", str(window), "--no-search", "--json", "what is in pkg?")
    assert "Traceback" not in run.err, run.err
    return run, app.state.bodies


def _tool_error(run: CliRun) -> str:
    (end,) = [e for e in run.events() if e["type"] == "tool_end"]
    assert end["ok"] is False
    assert "internal error" not in end["error"]
    return str(end["error"])


def test_a_read_limit_of_1e400_is_a_tool_error_and_the_run_goes_on(tmp_path: Path) -> None:
    # json.dumps writes float("inf") as Infinity; the model's 1e400 reads as the same number.
    run, bodies = _one_call(tmp_path, "Read", {"file_path": "pkg/core.py", "limit": float("inf")})
    assert run.code == 0, run.err
    assert "'limit'" in _tool_error(run)
    assert run.run_end()["reason"] == "end_turn" and len(bodies) == 2


@pytest.mark.parametrize("field", ["offset", "limit"])
@pytest.mark.parametrize("value", [float("inf"), float("nan"), 1e300, "ten", True, "9" * 5_000])
def test_the_evidence_of_a_read_names_numbers_no_line_can_have(field: str, value: object) -> None:
    source = evidence_source(ToolUse("c1", "Read", {"file_path": "a.py", field: value}))
    assert source.startswith("Read a.py")
    assert len(source) < 2 * LABEL_CHARS.value


def test_a_line_number_of_5000_digits_is_a_tool_error(tmp_path: Path) -> None:
    run, bodies = _one_call(tmp_path, "Read", {"file_path": "pkg/core.py:" + "1" * 5_000})
    assert run.code == 0, run.err
    error = _tool_error(run)
    assert "names no line" in error and "5,000 digits" in error
    assert len(bodies) == 2


def test_a_100_000_character_name_leaves_room_to_compact(tmp_path: Path) -> None:
    name = "x" * 100_000
    run, bodies = _one_call(tmp_path, "Find", {"name": name}, window=32_768)
    assert run.code == 0, run.err
    assert run.run_end()["reason"] == "end_turn"
    assert ANSWER in "".join(e.get("text", "") for e in run.events() if e["type"] == "text_delta")
    # The summary request quotes the name up to label_chars; the answer came after it.
    summary = json.dumps(bodies[1])
    assert len(bodies) == 3 and "x" * 1000 not in summary and "100,000 characters" in summary


def test_a_label_quotes_each_long_value_cut_once_and_unique() -> None:
    long, other = "a" * 5_000, "a" * 4_999 + "b"
    quoted = short_input({"name": long, "paths": [long], "n": 3})
    assert len(quoted["name"]) == LABEL_CHARS.value and "5,000 characters" in quoted["name"]
    assert len(quoted["paths"]) == LABEL_CHARS.value and quoted["n"] == 3
    assert short_input(quoted) == quoted  # what a summary request quotes is named the same when read back
    assert short_input({"name": other})["name"] != quoted["name"]
