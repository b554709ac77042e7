"""An answer that says nothing is never the run's answer: the model is asked once more for one in words,
and a second that says nothing ends the run `empty_answer` (exit 6)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from aforo.providers.fake import FakeProvider, FakeTurn
from support.cli import run_cli
from support.live_server import LiveServer
from support.scenario import make_agent
from test_constrained_cli import llamacpp_steps, workspace


def _answer_schema(body: dict[str, Any]) -> dict[str, Any]:
    schema = body["response_format"]["json_schema"]["schema"]
    options = schema.get("oneOf", [schema])
    return next(o for o in options if "answer" in o["properties"])["properties"]["answer"]


def copies_the_placeholder(body: dict[str, Any]) -> dict[str, Any]:
    """What the 0.5B model did at the server's default temperature: `...`, wherever the grammar lets it."""
    pattern = _answer_schema(body).get("pattern")
    if pattern is None or re.search(pattern, "..."):
        return {"answer": "..."}
    return {"answer": "alpha.py defines f0 and f1 (alpha.py:1-5)."}


def test_an_answer_that_says_nothing_is_asked_again_and_the_placeholder_cannot_come_back(
    tmp_path: Path,
) -> None:
    bodies: list[dict[str, Any]] = []
    with LiveServer(llamacpp_steps(copies_the_placeholder, bodies)) as server:
        run = run_cli("-w", str(workspace(tmp_path)), "--base-url", server.url, "-m", "m", "--json", "what?")
    assert run.code == 0, run.err
    events = run.events()
    result = events[-1]
    assert (result["ending"], result["answer"]) == ("end_turn", "alpha.py defines f0 and f1 (alpha.py:1-5).")
    chats = [b for b in bodies if b.get("max_tokens") != 1]
    assert len(chats) == 2
    # The empty answer was not kept: the second request is the first one again, with the worded schema.
    assert chats[1]["messages"] == chats[0]["messages"]
    assert "pattern" not in _answer_schema(chats[0]) and "pattern" in _answer_schema(chats[1])
    # The placeholder never reached the screen: nothing is shown before an answer's first word.
    assert "".join(e["text"] for e in events if e["type"] == "text_delta") == result["answer"]
    said = [e["step"] for e in events if e["type"] == "info" and "step" in e]
    assert said == ["the answer said nothing ('...'); asked again for one in words"]
    # Nothing in the reply format is a value to copy.
    system = chats[0]["messages"][0]["content"]
    assert '"..."' not in system and '"file_path"' not in system


def test_an_answer_that_says_nothing_twice_ends_empty_answer_with_exit_6(tmp_path: Path) -> None:
    # Held to a letter first, it copies the format's words instead: that says nothing either.
    bodies: list[dict[str, Any]] = []
    with LiveServer(llamacpp_steps(lambda body: {"answer": "Answer: ..."}, bodies)) as server:
        run = run_cli("-w", str(workspace(tmp_path)), "--base-url", server.url, "-m", "m", "--json", "what?")
    assert run.code == 6, run.err
    result = run.events()[-1]
    assert (result["ending"], result["exit_code"], result["answer"]) == ("empty_answer", 6, "")
    assert "said nothing" in result["error"]
    assert len([b for b in bodies if b.get("max_tokens") != 1]) == 2


def test_with_tool_definitions_an_empty_answer_is_asked_again_too(tmp_path: Path) -> None:
    provider = FakeProvider([FakeTurn(" ... "), FakeTurn("It is alpha.py.")])
    agent, _rec, _ = make_agent(tmp_path, provider)
    result = agent.run("which?")
    assert (result.reason, result.answer, result.turns) == ("end_turn", "It is alpha.py.", 2)
    assert [r.worded for r in provider.requests] == [False, True]
    assert [m.text for m in agent.messages] == ["which?", "It is alpha.py."]

    provider = FakeProvider([FakeTurn(""), FakeTurn("…")])
    agent, _rec, _ = make_agent(tmp_path, provider)
    result = agent.run("which?")
    assert (result.reason, result.answer) == ("empty_answer", "")
    assert [m.text for m in agent.messages] == ["which?"]
