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
from aforo.messages import Message, TextBlock, ToolResult, ToolUse
from aforo.navigate.guide import Navigator
from aforo.providers.fake import FakeProvider, FakeTurn
from aforo.reply_format import instructions, render
from aforo.tools.registry import default_registry
from support.scenario import make_agent
from test_navigate_presearch import first_results, workspace
from test_navigate_truth import overview_workspace


def busy(root: Path) -> Path:
    """A name used in more lines than Find shows, and a long file, beside the pre-search's workspace."""
    workspace(root)
    (root / "pkg/long.py").write_text("".join(f"def f{i}():\n    return {i}\n" for i in range(400)))
    calls = "".join(f"def caller{i}():\n    return helper()\n\n\n" for i in range(12))
    (root / "pkg/busy.py").write_text(f"def helper():\n    return 0\n\n\n{calls}")
    return root


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return busy(tmp_path_factory.mktemp("copied") / "ws")


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


def result_headings(ws: Path) -> list[str]:
    """The first line of a Read's result and of a failed one, as the reply format renders the
    conversation for the model."""
    read = ToolUse("c1", "Read", {"file_path": "pkg/util.py"})
    failed = ToolUse("c2", "Read", {"file_path": "pkg/nowhere.py"})
    messages = [
        Message("user", (TextBlock("What is in util?"),)),
        Message("assistant", (read, failed)),
        Message("user", (ToolResult("c1", "1\timport os"), ToolResult("c2", "no such file", is_error=True))),
    ]
    parts = render(messages, specs(ws))[-1]["content"].split("\n\n")
    assert len(parts) == 2
    return [part.splitlines()[0] for part in parts]


def test_each_heading_aforo_writes_is_told_apart_as_its_writer_words_it(ws: Path, tmp_path: Path) -> None:
    """Each heading as the code that writes it renders it, picked by where it stands in the result and
    never by its words: a heading reworded where it is written is still known for a copy here."""
    tools = default_registry(ws)

    def shown(name: str, args: dict[str, object]) -> list[str]:
        out = tools.execute(name, args)
        assert not out.is_error, out.content
        return out.content.splitlines()

    found = shown("Find", {"name": "helper"})
    overview = Navigator(overview_workspace(tmp_path / "about"), 8192, cache=False).guide(
        "What does this package do?", (), set()
    )
    presearch = presearch_block(ws).split("\n\n")[0].splitlines()
    headings = [
        shown("LS", {})[0],  # the listing's first line: the directory and its count
        shown("Read", {"file_path": "pkg/busy.py"})[0],  # a whole Python file's outline
        shown("Read", {"file_path": "pkg/long.py"})[0],  # a long file's view: its length
        found[0],  # the definitions' heading
        found[2],  # the uses' heading, after the one definition: more uses than it shows
        shown("Grep", {"pattern": "helper", "max_results": 2})[-1],  # what it left out
        presearch[-1],  # the pre-search's heading, last of its first paragraph
        presearch[0],  # the files the question names, with their lengths
        overview.messages[1].tool_results[0].content.splitlines()[0],  # an overview's heading
        instructions(specs(ws)).splitlines()[0],  # the reply format's first line
        *result_headings(ws),  # a tool's result and a tool's error, as the model is shown them
    ]
    assert len(found) == 2 + 1 + 8 and len(presearch) > 1
    told = ("the heading of what aforo found", "a Read result's heading")
    assert [h for h in headings if copied_format(h, specs(ws)) not in told] == []


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
