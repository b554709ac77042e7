"""Issue 29, D1: a model's answer of repeated JSON openers cannot make aforo's scan of it quadratic.

The held-back text (`TextHold`, where a call written as text could begin) was rescanned from its start
on every piece and at every opener: `'{"name":"Read","arguments":'` x 12 000 took 91 s of CPU. The work
is counted here (characters scanned), never timed: it must grow with the answer, not with its square.
`bench/held_text.py` prints the times.
"""

from __future__ import annotations

from itertools import pairwise

from hypothesis import given, settings
from hypothesis import strategies as st

from aforo import reply_stream
from aforo.loop.text_hold import TextHold
from aforo.loop.textcalls import extract_text_tool_calls
from support.text_hold_reference import ReferenceHold

TOOLS = ("Read", "Glob", "Grep", "LS")
CALL = '{"name": "Read", "arguments": {"file_path": "a.py"}}'
# The two, bare brackets, and openers inside the strings of the scans before them (`a{"\"`: each
# `{` starts a scan that then meets the others at the escaped quote).
OPENERS = ('{"name":"Read","arguments":', '{"a":', "[", "[[", '{"', "<tool_call>", "```", '{"x{": ', 'a{"\\"')
# The pieces adversarial answers are made of: openers that never close, strings that break or escape
# their quotes (so scans started at different openers disagree on what is a string), calls, fences.
ATOMS = (
    *OPENERS,
    "{",
    "}",
    "]",
    '"',
    '\\"',
    "\\",
    "\n",
    " ",
    ":",
    ",",
    "a",
    "`",
    "<",
    "</tool_call>",
    "```json\n",
    CALL,
    f"<tool_call>{CALL}</tool_call>",
)


def cut(text: str, cuts: list[int]) -> list[str]:
    bounds = [0, *sorted({c for c in cuts if 0 < c < len(text)}), len(text)]
    return [text[a:b] for a, b in pairwise(bounds)]


def run(hold: TextHold | ReferenceHold, pieces: list[str], text: str) -> list[object]:
    """Everything the hold says: what each feed shows, then what settling shows and keeps as calls."""
    said: list[object] = [hold.feed(piece) for piece in pieces]
    late, held = hold.settle(extract_text_tool_calls(text, TOOLS)[1])
    return [*said, late, [(h.text, h.kind, h.calls) for h in held]]


@settings(max_examples=300, deadline=None)
@given(atoms=st.lists(st.sampled_from(ATOMS), max_size=40), data=st.data())
def test_the_one_pass_scan_says_what_the_rescanning_rule_said(atoms: list[str], data: st.DataObject) -> None:
    text = "".join(atoms)
    pieces = cut(text, data.draw(st.lists(st.integers(1, max(1, len(text))), max_size=30)))
    assert run(TextHold(TOOLS), pieces, text) == run(ReferenceHold(TOOLS), pieces, text)


def scanned(opener: str, repeats: int, piece_chars: int) -> int:
    hold = TextHold(TOOLS)
    text = opener * repeats
    for piece in cut(text, list(range(piece_chars, len(text), piece_chars))):
        hold.feed(piece)
    hold.settle([])
    return hold.scanned


def test_repeated_openers_are_scanned_in_linear_work_streamed_or_whole() -> None:
    for opener in OPENERS:
        for piece_chars in (4, len(opener) * 12_000):  # streamed in small pieces, or shown whole at the end
            for repeats in (3_000, 12_000):
                # Rescanning looked at up to 2 000 characters (the hold limit) or the whole rest at every
                # opener and every piece: hundreds of times the answer here, growing with its square.
                work = scanned(opener, repeats, piece_chars)
                assert work <= 6 * len(opener) * repeats, (opener, piece_chars, repeats, work)


def test_an_answer_step_padded_with_blanks_is_not_looked_at_again() -> None:
    # `{` then blanks, a piece at a time: what waits for `"answer"` is the part begun, not all of it.
    stream = reply_stream.AnswerStream()
    for piece in ["{", *[" \n"] * 50_000, '"ans', 'wer"', " " * 1_000, ':"', "hi"]:
        shown = stream.feed(piece)
        assert len(stream._head) <= len('"answer"')
    assert shown == "hi" and stream.streaming_answer


def test_a_held_piece_that_repeats_a_call_run_once_is_shown_not_a_crash() -> None:
    # Found by the stress of the property above: settling took the one call run twice (ValueError).
    hold = TextHold(TOOLS)
    listed = f"[{CALL}, {CALL}]"
    assert hold.feed(f"Reading: {listed}") == "Reading: "
    late, held = hold.settle([("Read", {"file_path": "a.py"})])
    assert late == listed and held == []
