"""What the answer and the other lines look like: Markdown on a terminal, plain text in a pipe or with
--plain, words never cut at the edge, /context within the width, a discarded answer marked."""

from __future__ import annotations

import io
import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aforo.cli.answer import Blocks, WrappedAnswer
from aforo.cli.context_view import render_context
from aforo.cli.render import DISCARDED, HumanRenderer, JsonRenderer
from aforo.cli.sanitize import safe_console
from aforo.context.breakdown import Breakdown, Section
from aforo.events import SCHEMA_VERSION, Progress, TextDelta, ToolEnd, TurnEnd, event_to_dict
from aforo.messages import Usage

ANSI = re.compile(r"\x1b\[[0-9;]*m")
MARKDOWN = (
    "# Counter\n\nIt counts **words** with `words()`:\n\n"
    "```python\ndef words(text):\n    return text.lower().split()\n```\n\n"
    "- one item\n- two items\n"
)


class Terminal(io.StringIO):
    """A stream that says it is a terminal."""

    def isatty(self) -> bool:
        return True


def render(events: list[object], out: io.StringIO, **kwargs: object) -> str:
    renderer = HumanRenderer(out, io.StringIO(), **kwargs)  # type: ignore[arg-type]
    for event in events:
        renderer(event)  # type: ignore[arg-type]
    return out.getvalue()


def pieces(text: str, size: int = 7) -> list[TextDelta]:
    return [TextDelta(text=text[i : i + size]) for i in range(0, len(text), size)]


def end_turn(truncated: bool = False) -> TurnEnd:
    return TurnEnd(turn=1, usage=Usage(100, 0, 0, 20), context=100, window=4096, truncated=truncated)


def test_on_a_terminal_the_answer_is_markdown_with_highlighted_code(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TERM", "xterm-256color")
    shown = render([*pieces(MARKDOWN), end_turn()], Terminal())
    plain = ANSI.sub("", shown)
    assert "**" not in plain and "```" not in plain and "# Counter" not in plain
    assert "Counter" in plain and "words" in plain and "• one item" in plain
    code = next(line for line in shown.splitlines() if "def" in line and "words" in line)
    assert len(set(ANSI.findall(code))) >= 3, "the code block is highlighted (several colours)"


def test_piped_or_plain_the_answer_is_the_text_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TERM", "xterm-256color")
    piped = render([*pieces(MARKDOWN), end_turn()], io.StringIO())
    assert piped.startswith(MARKDOWN) and "\x1b" not in piped
    plain = ANSI.sub("", render([*pieces(MARKDOWN), end_turn()], Terminal(), plain=True))
    assert plain.startswith(MARKDOWN)


def test_markdown_is_printed_a_block_at_a_time_as_each_completes() -> None:
    out = Terminal()
    renderer = HumanRenderer(out, io.StringIO())
    renderer(TextDelta(text="First paragraph, still being"))
    assert out.getvalue() == ""  # a half paragraph cannot be wrapped yet
    renderer(TextDelta(text=" written.\n\nSecond"))
    assert "First paragraph, still being written." in out.getvalue() and "Second" not in out.getvalue()
    renderer(end_turn())
    assert "Second" in out.getvalue()


def test_blocks_end_at_blank_lines_closing_fences_and_headings() -> None:
    splitter = Blocks()
    text = "Para\nline\n\n```\na\n\nb\n```\n# Head\n1. one\n\n   more of one\n2. two\n\nEnd"
    blocks = [b for i in range(0, len(text), 3) for b in splitter.feed(text[i : i + 3])]
    blocks += splitter.rest()
    assert blocks == ["Para\nline", "```\na\n\nb\n```", "# Head", "1. one\n\n   more of one\n2. two", "End"]


words = st.text(alphabet=st.characters(whitelist_categories=("Ll", "Lu", "Nd")), min_size=1, max_size=14)


@settings(max_examples=200, deadline=None)
@given(
    lines=st.lists(st.lists(words, max_size=30), min_size=1, max_size=4),
    width=st.integers(15, 60),
    step=st.integers(1, 9),
)
def test_plain_text_wraps_at_word_boundaries(lines: list[list[str]], width: int, step: int) -> None:
    text = "\n".join(" ".join(ws) for ws in lines)
    out = io.StringIO()
    writer = WrappedAnswer(out, lambda: width)
    for i in range(0, len(text), step):
        writer.feed(text[i : i + step])
    writer.end()
    wrapped = out.getvalue()
    assert all(len(row) <= width for row in wrapped.splitlines())
    assert wrapped.split() == text.split()  # every word whole, in order: none was cut (all fit the width)


def breakdown() -> Breakdown:
    sizes = [
        ("system prompt", 120),
        ("AGENTS.md", 54),
        ("tool definitions", 594),
        ("user messages", 108),
        ("assistant messages", 345),
        ("tool results", 900),
        ("cleared results", 0),
    ]
    return Breakdown(
        sections=tuple(Section(n, t) for n, t in sizes),
        used=2121,
        free=951,
        reserve=1024,
        window=4096,
        window_source="llama.cpp /props",
        counter="x",
        exact=True,
    )


@pytest.mark.parametrize("width", [30, 50, 80, 200])
def test_context_fits_the_width(width: int) -> None:
    out = io.StringIO()
    render_context(breakdown(), safe_console(out, width=width))
    rows = out.getvalue().splitlines()
    assert all(len(row.rstrip()) <= width for row in rows), out.getvalue()
    bar = next(row for row in rows if row.startswith("["))
    assert len(bar) == min(62, width)  # 60 cells and its brackets, fewer on a narrow terminal
    assert bar.count("_") == round((len(bar) - 2) * 1024 / 4096)  # the reserve keeps its share


def test_a_streamed_answer_from_a_truncated_prompt_is_marked_discarded() -> None:
    shown = render(
        [TextDelta(text="A confident answer without the task."), end_turn(truncated=True)], io.StringIO()
    )
    assert shown.index("A confident answer") < shown.index(DISCARDED)
    assert DISCARDED not in render([end_turn(truncated=True)], io.StringIO())  # nothing was shown


def test_a_tool_result_says_its_size() -> None:
    end = ToolEnd(id="c1", name="Read", duration_ms=3.2, ok=True, bytes=2048, lines=40, tokens=512)
    assert "  ok (3 ms; 40 lines, 2.0 KiB, ~512 tokens)" in render([end], io.StringIO())


def test_json_lines_carry_the_version_and_no_progress() -> None:
    out = io.StringIO()
    renderer = JsonRenderer(out)
    renderer(Progress(phase="prompt", done=1, total=2))
    renderer(TextDelta(text="hi"))
    assert [json.loads(line) for line in out.getvalue().splitlines()] == [
        {"v": SCHEMA_VERSION, "type": "text_delta", "text": "hi"}
    ]
    assert event_to_dict(TextDelta(text="x"))["v"] == 1
