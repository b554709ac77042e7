"""An answer that loops word for word is stopped after its first copy, the stream closed, the user told.

Seen with Qwen2.5-Coder 1.5B at temperature 0 on `make demo`: four good sentences, then "The file is not
used in the project." until the 2 048-token limit (110 s, ending `max_tokens`); asked what a package does,
one word 437 times (issue 41). A table of identical rows or code of identical lines is no loop: it was cut
at its first copy, the next row, the closing fence and the sentence after lost (issue 39 D15).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from aforo.events import Warning
from aforo.messages import MessageEnd, Request, StreamEvent, StreamText, Usage
from aforo.repeats import MANY_CHARS, Repeats
from aforo.stream import collect
from dialects.openai_app import Reply, make_openai_app
from support.cli import run_cli
from support.live_server import LiveServer

GOOD = (
    "The `wordfreq/counter.py` file contains three functions: `words`, `count_words`, and `top_words`. "
    "The `words` function splits a text into lower-case words."
)
LOOP = " The file is not used in the project."


def fed(text: str, piece: int = 7) -> int | None:
    repeats = Repeats()
    for i in range(0, len(text), piece):
        if repeats.feed(text[i : i + piece]):
            return repeats.loop_at
    return None


def test_a_loop_of_sentences_is_cut_after_its_first_copy() -> None:
    cut = fed(GOOD + LOOP * 60)
    assert cut == len(GOOD + LOOP)


def test_repeated_rules_short_lines_and_table_rows_are_no_loop() -> None:
    assert fed("=" * 400) is None
    assert fed("x = 1\n" * 300) is None
    assert fed("| a | b |\n" * 100) is None
    # Three copies of a sentence are said, not looped: the fourth is the loop.
    assert fed(GOOD + LOOP * 3 + " And that is all.") is None


class Looping:
    """A provider whose answer loops for ever, and says whether its stream was closed."""

    name = "looping"

    def __init__(self) -> None:
        self.closed = False
        self.sent = 0

    def stream(self, request: Request, cancel: threading.Event | None = None) -> Iterator[StreamEvent]:
        try:
            yield StreamText(GOOD)
            while self.sent < 10_000:
                self.sent += 1
                yield StreamText(LOOP)
            yield MessageEnd(Usage(10, output_tokens=9999), "max_tokens")
        finally:
            self.closed = True


def test_the_stream_is_closed_and_a_warning_says_what_was_cut() -> None:
    provider = Looping()
    said: list[Any] = []
    request = Request("m", (), (), (), 2048)
    reply = collect(provider, request, progress=said.append)  # type: ignore[arg-type]
    assert reply.text == GOOD + LOOP and reply.end.stop_reason == "end_turn"
    assert provider.closed and provider.sent < 100  # not read to the end
    (warning,) = [e for e in said if isinstance(e, Warning)]
    assert "repeating itself word for word" in warning.message
    assert f"stopped after {len(GOOD + LOOP)} characters" in warning.message


def test_a_looping_answer_ends_end_turn_with_its_first_copy(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\n")
    with LiveServer(make_openai_app(lambda body: Reply(text=GOOD + LOOP * 200))) as server:
        flags = ("-w", str(tmp_path), "--base-url", server.url, "-m", "m", "--context-window", "8192")
        run = run_cli(*flags, "--json", "--no-search", "Explain a.py.")
    assert run.code == 0, run.err
    result = run.events()[-1]
    assert result["ending"] == "end_turn" and result["answer"] == GOOD + LOOP
    assert any(e["type"] == "warning" and "repeating itself" in e["message"] for e in run.events())


CELLS = st.sampled_from(["n/a", "0", "-", "yes", "`None`", "x", "TODO", "1.0"])
NAMES = st.sampled_from(["total", "x", "self.count", "row[0]", "out"])


@settings(max_examples=150, deadline=None)
@given(
    st.lists(CELLS, min_size=1, max_size=5),
    st.integers(4, 80),
    NAMES,
    st.sampled_from(["", "    ", "\t"]),
    st.integers(1, 90),
)
def test_tables_of_identical_rows_and_code_of_identical_lines_are_kept_whole(
    cells: list[str], rows: int, name: str, indent: str, piece: int
) -> None:
    row = "| " + " | ".join(cells) + " |\n"
    header = "| " + " | ".join(f"col{i}" for i in range(len(cells))) + " |\n|" + "---|" * len(cells) + "\n"
    statement = f"{indent}{name} = compute({name}, 1)\n"
    text = (
        f"The table:\n\n{header}{row * rows}| last | row |\n\nThe code:\n\n```python\n"
        f"{statement * rows}```\n\nThat is all the file does."
    )
    assert fed(text, piece) is None


UNITS = st.sampled_from(["word ", "word\n", "word", "\n", "\n\n", " ", "ok. ", "-", "Yes.\n", "a b "])


@settings(max_examples=150, deadline=None)
@given(UNITS, st.sampled_from(["", GOOD, GOOD + "\n\n", "# Title\n"]), st.integers(1, 90))
def test_a_word_or_a_few_characters_repeated_hundreds_of_times_are_a_loop(
    unit: str, before: str, piece: int
) -> None:
    text = before + unit * max(437, 2 * MANY_CHARS // len(unit))
    cut = fed(text, piece)
    assert cut is not None
    # Stopped once it had come over MANY_CHARS characters (and a check's worth), kept to its first copy.
    assert cut <= len(before) + 2 * len(unit)
    assert text[:cut].startswith(before.rstrip())


def test_a_rule_of_equals_signs_is_no_loop_but_a_page_of_them_is() -> None:
    assert fed("Title\n" + "=" * 80 + "\n\nText.") is None
    assert fed("=" * (MANY_CHARS + 200)) == 1


class Streaming:
    """A provider that streams a text in small pieces, then ends."""

    name = "streaming"

    def __init__(self, text: str) -> None:
        self.text = text

    def stream(self, request: Request, cancel: threading.Event | None = None) -> Iterator[StreamEvent]:
        for i in range(0, len(self.text), 5):
            yield StreamText(self.text[i : i + 5])
        yield MessageEnd(Usage(10, output_tokens=99), "end_turn")


def test_an_answer_with_a_table_of_identical_rows_is_shown_whole() -> None:
    text = (
        "Each field:\n\n| field | default | since |\n|---|---|---|\n"
        + "| n/a | n/a | n/a |\n" * 6
        + "| name | `x` | 1 |\n\n"
        "```python\n" + "    total = total + 1\n" * 6 + "```\n\nThe rest is in `setup`."
    )
    said: list[Any] = []
    reply = collect(Streaming(text), Request("m", (), (), (), 2048), progress=said.append)  # type: ignore[arg-type]
    assert reply.text == text
    assert not [e for e in said if isinstance(e, Warning)]


def test_an_answer_of_one_word_repeated_is_stopped() -> None:
    said: list[Any] = []
    reply = collect(Streaming(GOOD + " package" * 2000), Request("m", (), (), (), 2048), progress=said.append)  # type: ignore[arg-type]
    assert reply.text == GOOD + " package"
    (warning,) = [e for e in said if isinstance(e, Warning)]
    assert "repeating itself" in warning.message
