"""A tool call the model writes as text is shown once, as a call; everything else streams as it came.

`TextHold` is tested on its own (any cut of the stream into pieces, the real model's answers) and in the
loop (the events a run emits: no call's text in `text_delta`, a `text_call` event, a late release when
the agent does not run the call).
"""

from __future__ import annotations

import json
import random
from itertools import pairwise
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aforo.events import TextCall, TextDelta
from aforo.loop.text_hold import BARE_HOLD_CHARS, TextHold
from aforo.loop.textcalls import extract_text_tool_calls
from aforo.providers.fake import FakeProvider, FakeTurn
from support.scenario import make_agent

TOOLS = ("Read", "Glob", "Grep", "LS")
REAL = Path(__file__).parent / "data" / "real_outputs"
FENCED_CALL = '```json\n{"name": "Read", "arguments": {"file_path": "a.py"}}\n```'


def stream(text: str, cuts: list[int]) -> tuple[list[str], TextHold]:
    """Feed `text` cut at `cuts`; what each feed showed, and the hold (not yet settled)."""
    hold = TextHold(TOOLS)
    bounds = [0, *sorted(set(c for c in cuts if 0 < c < len(text))), len(text)]
    return [hold.feed(text[a:b]) for a, b in pairwise(bounds)], hold


def shown_and_calls(text: str, cuts: list[int]) -> tuple[str, list[str]]:
    shown, hold = stream(text, cuts)
    _rest, calls = extract_text_tool_calls(text, TOOLS)
    late, held = hold.settle(calls)
    return "".join(shown) + late, [h.text for h in held]


@pytest.mark.parametrize("path", sorted(REAL.glob("*.json")), ids=lambda p: p.stem)
def test_the_real_models_answers_show_no_call_text_however_they_are_cut(path: Path) -> None:
    text = json.loads(path.read_text())["content"]
    _rest, calls = extract_text_tool_calls(text, TOOLS)
    for seed in range(25):
        rnd = random.Random(seed)
        cuts = [rnd.randint(1, len(text)) for _ in range(len(text) // 3)]
        shown, held = shown_and_calls(text, cuts)
        # Nothing is lost or invented: the shown text and the held calls are the answer, in pieces.
        assert sorted(shown + "".join(held)) == sorted(text)
        for piece in held:
            assert piece not in shown
        assert [c for h in held for c in extract_text_tool_calls(h, TOOLS)[1]] == calls


def test_prose_streams_at_once_and_a_fenced_call_is_never_shown() -> None:
    answer = f"I will read it.\n{FENCED_CALL}\nThen I explain."
    shown, hold = stream(answer, list(range(1, len(answer))))  # one character at a time
    assert "".join(shown[:15]) == "I will read it."  # no delay before the fence begins
    late, held = hold.settle([("Read", {"file_path": "a.py"})])
    assert "".join(shown) + late == "I will read it.\n\nThen I explain."
    assert [h.text for h in held] == [FENCED_CALL]


@pytest.mark.parametrize(
    ("prose", "released_by"),
    [
        ("a set {1, 2} and more", "{1"),  # `{` not followed by a key
        ("see [the docs](x.md) now", "[t"),  # a Markdown link
        ("a <b>bold</b> word", "<b"),  # a tag that is not <tool_call>
        ("inline `code` here", "`c"),  # one backtick is no fence
    ],
)
def test_what_cannot_be_a_call_is_released_as_soon_as_that_is_known(prose: str, released_by: str) -> None:
    hold = TextHold(TOOLS)
    cut = prose.index(released_by) + len(released_by)
    shown = hold.feed(prose[:cut])
    assert shown == prose[:cut]
    assert hold.feed(prose[cut:]) == prose[cut:]


def test_json_that_is_no_call_is_shown_once_it_closes() -> None:
    hold = TextHold(TOOLS)
    assert hold.feed('Config: {"debug": tr') == "Config: "
    assert hold.feed("ue} done") == '{"debug": true} done'


def test_a_tagged_call_and_a_bare_call_are_held() -> None:
    for call in (
        '<tool_call>{"name": "LS", "arguments": {}}</tool_call>',
        '{"name": "Glob", "pattern": "*.py"}',
    ):
        shown, held = shown_and_calls(f"ok {call} ", list(range(1, 60)))
        assert shown == "ok  " and held == [call]


def test_a_call_the_agent_does_not_run_is_shown_after_all() -> None:
    # An answer cut by the output limit, or with structured calls: its text calls are not run.
    shown, hold = stream(f"Here: {FENCED_CALL}", [3, 9, 20])
    late, held = hold.settle([])
    assert held == [] and "".join(shown) + late == f"Here: {FENCED_CALL}"


def test_a_stray_opening_brace_does_not_hold_the_rest_of_the_answer() -> None:
    hold = TextHold(TOOLS)
    shown = hold.feed('He wrote {"unclosed and went on ' + "word " * (BARE_HOLD_CHARS // 5))
    assert shown.startswith('He wrote {"unclosed') and hold.settle([])[0] == ""


def test_a_long_code_block_streams_once_it_is_too_long_to_be_a_call() -> None:
    hold = TextHold(TOOLS)
    code = "```python\n" + "x = 1\n" * 10_000
    shown = hold.feed(code)
    assert shown == code  # released whole once over the limit, then streamed
    assert hold.feed("y = 2\n```\nafter {") == "y = 2\n```\nafter "  # its closing fence opens nothing


# Whole constructs an answer is made of: prose, JSON that is no call, calls in each form, Markdown.
CONSTRUCTS = [
    "Some prose ",
    "words. ",
    "\n",
    "\n\n",
    '{"debug": true}',
    FENCED_CALL,
    '{"name": "LS"}',
    "[link](x.md)",
    "```python\nx = {1: 2}\n```",
    "<b>bold</b>",
    "`code`",
    '<tool_call>{"name": "Glob", "arguments": {"pattern": "*"}}</tool_call>',
    "a [1] b ",
    "{not json}",
    "- [ ] todo\n",
]
# Fragments that make broken, ambiguous text (unclosed tags and strings, stray brackets and fences).
FRAGMENTS = [
    "{",
    "}",
    "[",
    "]",
    '"',
    "\\",
    "`",
    "``",
    "```",
    "<",
    "<tool",
    "<tool_call>",
    "</tool_call>",
    ": ",
]


@settings(max_examples=200, deadline=None)
@given(parts=st.lists(st.sampled_from(CONSTRUCTS), max_size=10), data=st.data())
def test_an_answer_shows_everything_but_its_calls_however_it_is_cut(
    parts: list[str], data: st.DataObject
) -> None:
    text = "".join(parts)
    cuts = data.draw(st.lists(st.integers(1, max(1, len(text))), max_size=20))
    shown, held = shown_and_calls(text, cuts)
    _rest, calls = extract_text_tool_calls(text, TOOLS)
    if not calls:
        assert shown == text and held == []  # no call: exactly the text, in order
    else:
        run = [c for piece in held for c in extract_text_tool_calls(piece, TOOLS)[1]]
        assert sorted(map(repr, run)) == sorted(map(repr, calls))  # each call held, as a call, once


@settings(max_examples=200, deadline=None)
@given(parts=st.lists(st.sampled_from(CONSTRUCTS + FRAGMENTS), max_size=25), data=st.data())
def test_broken_text_is_never_lost_nor_invented(parts: list[str], data: st.DataObject) -> None:
    text = "".join(parts)
    cuts = data.draw(st.lists(st.integers(1, max(1, len(text))), max_size=20))
    shown, held = shown_and_calls(text, cuts)
    # Where the pieces and the whole-answer parse disagree, a held piece is shown at the end instead.
    assert sorted(shown + "".join(held)) == sorted(text)


# --- in the loop ---------------------------------------------------------------------------------------


def test_a_text_call_is_an_event_of_its_own_and_never_a_text_delta(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("print('hi')\n")
    provider = FakeProvider([FakeTurn(f"Let me look.\n{FENCED_CALL}"), FakeTurn("It prints hi.")])
    agent, rec, _ = make_agent(tmp_path, provider)
    agent.live_text = True
    result = agent.run("what does a.py do?")
    assert result.reason == "end_turn" and result.tool_calls == 1
    assert result.answer == "It prints hi."
    text = "".join(e.text for e in rec.events if isinstance(e, TextDelta))
    assert '"file_path"' not in text and "Let me look." in text and "It prints hi." in text
    calls = [e for e in rec.events if isinstance(e, TextCall)]
    assert [c.text for c in calls] == [FENCED_CALL]
    assert calls[0].calls == ({"name": "Read", "input": {"file_path": "a.py"}},)
    kinds = [e.type for e in rec.events if e.type != "progress"]
    # The call's own event comes after the text, before the turn ends and the tool starts.
    assert kinds.index("text_call") < kinds.index("turn_end") < kinds.index("tool_start")


def test_held_answers_go_through_the_same_hold(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("print('hi')\n")
    provider = FakeProvider([FakeTurn(FENCED_CALL), FakeTurn("Done.")])
    agent, rec, _ = make_agent(tmp_path, provider)  # live_text False: shown once the turn is checked
    agent.run("read a.py")
    assert "".join(e.text for e in rec.events if isinstance(e, TextDelta)) == "Done."
    assert len([e for e in rec.events if isinstance(e, TextCall)]) == 1


def test_calls_in_an_answer_cut_by_the_output_limit_are_shown_not_run(tmp_path: Path) -> None:
    provider = FakeProvider([FakeTurn(f"Reading {FENCED_CALL}", stop_reason="max_tokens")])
    agent, rec, _ = make_agent(tmp_path, provider)
    agent.live_text = True
    result = agent.run("read a.py")
    assert result.reason == "max_tokens" and result.tool_calls == 0
    assert FENCED_CALL in "".join(e.text for e in rec.events if isinstance(e, TextDelta))
    assert not [e for e in rec.events if isinstance(e, TextCall)]
