"""aforo's own formats are no answer (issue 37): each format aforo shows the model, copied back alone,
is told apart by its shape (aforo.loop.copied); an answer with words of its own is not.

The formats are taken from what aforo really writes (the pre-search's block, the tools' results, the
reply format), so a change of wording there that this check no longer sees fails here.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aforo.loop.copied import copied_format
from aforo.navigate.guide import Navigator
from aforo.providers.fake import FakeProvider, FakeTurn
from aforo.reply_format import instructions
from aforo.tools.registry import default_registry
from support.scenario import make_agent
from test_navigate_presearch import first_results, workspace


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = workspace(tmp_path_factory.mktemp("copied") / "ws")
    (root / "pkg/long.py").write_text("".join(f"def f{i}():\n    return {i}\n" for i in range(400)))
    return root


def specs(ws: Path):  # type: ignore[no-untyped-def]
    return default_registry(ws).specs


def presearch_block(ws: Path) -> str:
    provider = FakeProvider([FakeTurn("Done.")])
    agent, _, _ = make_agent(ws, provider)
    agent.guide = Navigator(ws, 4096).guide
    agent.run("Where is group defined? Which is longer, pkg/core.py or pkg/util.py?")
    (found,) = first_results(provider.requests[0])
    return found.content


def test_the_pre_search_block_its_heading_and_each_of_its_places_are_copies(ws: Path) -> None:
    block = presearch_block(ws)
    assert copied_format(block, specs(ws))
    heading = next(line for line in block.splitlines() if line.startswith("Before asking you"))
    assert copied_format(heading, specs(ws)) == "the heading of what aforo found"
    places = [line for line in block.splitlines() if line.startswith("pkg/") and ":" in line.split()[0]]
    assert places == ["pkg/decorators.py:263 defines group", "pkg/core.py:1 imports group"]
    assert copied_format("\n".join(places), specs(ws)) == "a list of places"
    named = block.splitlines()[0]
    assert named.startswith("The files the question names")
    assert copied_format(named, specs(ws)) == "the heading of what aforo found"


def test_one_bare_place_answers_a_question_of_where(ws: Path) -> None:
    """colorama, held out, after two compactions: "In which file did you find deinit?" ->
    `initialise.py:65` (right), twice, and the question ended `empty_answer`."""
    asked = "In which file did you find deinit?"
    assert copied_format("initialise.py:65", specs(ws), asked) == ""
    assert copied_format("`pkg/core.py:1`.", specs(ws), "Where is group defined?") == ""
    # Not an answer to a question of anything else, nor two places, nor a place with aforo's label.
    assert copied_format("initialise.py:65", specs(ws), "What does deinit do?") == "a list of places"
    assert copied_format("a.py:1\nb.py:2", specs(ws), asked) == "a list of places"
    assert copied_format("pkg/core.py:1 imports group", specs(ws), asked) == "a list of places"


@pytest.mark.parametrize(
    ("tool", "args", "kind"),
    [
        ("Grep", {"pattern": "return 1"}, "a list of places"),
        ("Find", {"name": "group"}, ""),  # its heading, then places
        ("Read", {"file_path": "pkg/long.py"}, ""),
    ],
)
def test_a_tool_result_copied_as_the_answer_is_a_copy(
    ws: Path, tool: str, args: dict[str, str], kind: str
) -> None:
    out = default_registry(ws).execute(tool, args)
    assert not out.is_error, out.content
    said = copied_format(out.content if tool != "Read" else out.content.splitlines()[0], specs(ws))
    assert said and kind in said


def test_the_reply_format_and_the_names_of_calls_are_copies(ws: Path) -> None:
    assert copied_format(json.dumps({"read": ["pkg/core.py"]}), specs(ws)) == "the reply format's keys"
    assert (
        copied_format(instructions(specs(ws)).splitlines()[0], specs(ws)) == "the heading of what aforo found"
    )
    assert copied_format("Read pkg/core.py, Read pkg/util.py", specs(ws)) == "the names of tool calls"
    assert copied_format("Read a.py and Grep group.", specs(ws)) == "the names of tool calls"
    assert copied_format("- `pkg/core.py:1`\n- `pkg/util.py:3`", specs(ws)) == "a list of places"


@pytest.mark.parametrize(
    "answer",
    [
        "The group decorator is defined in pkg/decorators.py:263.",
        "pkg/decorators.py",  # a file named as the answer: not a format of aforo's
        "pkg/decorators.py:263 is where it is defined.",
        "It reads the file:\npkg/core.py:1\nand then imports group.",
        "```python\ndef group(name=None):\n    return name\n```",
        "Read the README first.",
        "1. pkg/core.py imports group\n2. pkg/decorators.py defines it",
    ],
)
def test_an_answer_with_words_of_its_own_is_no_copy(ws: Path, answer: str) -> None:
    assert copied_format(answer, specs(ws)) == ""
