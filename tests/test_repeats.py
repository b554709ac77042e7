"""An answer that loops word for word is stopped after its first copy, the stream closed, the user told.

Seen with Qwen2.5-Coder 1.5B at temperature 0 on `make demo`: four good sentences, then "The file is not
used in the project." until the 2 048-token limit (110 s, ending `max_tokens`).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from aforo.events import Warning
from aforo.messages import MessageEnd, Request, StreamEvent, StreamText, Usage
from aforo.repeats import Repeats
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
