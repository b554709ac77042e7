"""Constrained steps (aforo.reply_format): the schema, the reply format, the conversation in step form, the
parsing of a step, and the answer decoded as it streams."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from aforo import reply_format, reply_stream
from aforo.context.counting import Meter
from aforo.context.tokens import CHARS_PER_TOKEN, estimate_request
from aforo.messages import Message, Request, SystemPart, TextBlock, ToolResult, ToolUse
from aforo.tools.registry import default_registry

TOOLS = default_registry(Path(".")).specs
SCHEMA = Draft202012Validator(reply_format.schema(TOOLS))


def test_a_step_is_one_tool_form_or_the_answer() -> None:
    valid = [
        {"read": ["a.py", "src/b.py"]},
        {"grep": "def main"},
        {"glob": "**/*.toml"},
        {"ls": "src"},
        {"answer": "It returns a Counter (counter.py:19)."},
    ]
    invalid = [
        {"read": "a.py"},  # Read takes a list
        {"read": []},
        {"answer": "x", "read": ["a.py"]},  # one thing at a time
        {"tool": "Read", "file_path": "a.py"},  # not a shape the model is given
        {"answer": 3},
        # Only the first argument: given optional ones, the 0.5B model filled them with noise
        # ("limit": 1 read one line, a Glob "path" of "src/alpha.py").
        {"read": ["a.py"], "limit": 1},
        {"grep": "x", "glob": "*.py"},
    ]
    assert [SCHEMA.is_valid(v) for v in valid] == [True] * len(valid)
    assert [SCHEMA.is_valid(v) for v in invalid] == [False] * len(invalid)
    only = Draft202012Validator(reply_format.schema(TOOLS, answer_only=True))
    assert only.is_valid({"answer": "x"}) and not only.is_valid({"read": ["a.py"]})


def test_the_reply_format_names_each_tool_once_and_does_not_change_when_only_the_answer_may_come() -> None:
    text = reply_format.instructions(TOOLS)
    assert text.splitlines() == [
        "Reply with one JSON object with one of these keys:",
        '"read": a list of file paths. Read files with line numbers, only those the question needs.',
        '"find": a list of names. Find where a name (function, class, variable) is defined and used, as '
        "path:line, only those the question needs.",
        '"grep": a pattern. Search file contents for a regex (ripgrep, skipping .gitignored files).',
        "\"glob\": a pattern. Find files by name ('*.py', 'src/**/test_*.py'), newest first, skipping "
        ".gitignored files.",
        '"ls": a path. List a directory (default: the workspace root).',
        # Said nearest the answer: without it the 1.5B padded `make demo`'s answer (issue 37).
        '"answer": your answer to the question, in words, once you have read what it needs: only what the '
        "lines show, then stop.",
    ]
    asked = Request("m", (SystemPart("base"),), TOOLS, (Message.user("q"),), 100, constrained=True)
    only = Request(
        "m", (SystemPart("base"),), TOOLS, (Message.user("q"),), 100, constrained=True, answer_only=True
    )
    # The prompt stays the same, so the server's cache of it still holds; only the schema narrows.
    assert reply_format.system_text(asked) == reply_format.system_text(only) == f"base\n\n{text}"


def test_parse_reads_every_form_and_refuses_what_is_not_a_step() -> None:
    assert reply_format.parse('{"read": ["a.py", "b.py"]}', TOOLS) == reply_format.Step(
        calls=(("Read", {"file_path": "a.py"}), ("Read", {"file_path": "b.py"}))
    )
    assert reply_format.parse('{"grep": "TODO"}', TOOLS) == reply_format.Step(
        calls=(("Grep", {"pattern": "TODO"}),)
    )
    assert reply_format.parse(' {"answer": "done"} ', TOOLS) == reply_format.Step(answer="done")
    for text in ("", "plain prose", "[1, 2]", '{"read"', '{"tool": "Read"}', '{"answer": 5}'):
        assert reply_format.parse(text, TOOLS) is None, text


def _uses(paths: list[str]) -> tuple[ToolUse, ...]:
    return tuple(ToolUse(f"c{i}", "Read", {"file_path": p}) for i, p in enumerate(paths))


@settings(max_examples=100, deadline=None)
@given(st.lists(st.text(min_size=1, max_size=30), min_size=1, max_size=6))
def test_calls_rendered_as_a_step_parse_back_to_the_same_calls(paths: list[str]) -> None:
    text = reply_format.step_text(_uses(paths), TOOLS)
    # A path named twice is one call (the first time it is named).
    distinct = dict.fromkeys(paths)
    assert reply_format.parse(text, TOOLS) == reply_format.Step(
        calls=tuple(("Read", {"file_path": p}) for p in distinct)
    )


def test_a_batch_that_names_a_path_again_reads_it_once() -> None:
    # What the 0.5B model wrote after a compaction whose evidence list named two files.
    step = reply_format.parse(
        '{"read": ["counter.py", "cli.py", "counter.py", "cli.py", "counter.py"]}', TOOLS
    )
    assert step == reply_format.Step(
        calls=(("Read", {"file_path": "counter.py"}), ("Read", {"file_path": "cli.py"}))
    )


def test_the_conversation_in_step_form_shows_the_model_its_own_json_and_results_by_call() -> None:
    uses = (*_uses(["a.py", "b.py"]), ToolUse("g", "Grep", {"pattern": "main"}))
    messages = [
        Message.user("where is main?"),
        Message("assistant", uses),
        Message(
            "user",
            (
                ToolResult("c0", "1\tdef a(): ..."),
                ToolResult("c1", "b.py does not exist", is_error=True),
                ToolResult("g", "a.py:3:main()"),
            ),
        ),
        Message.assistant('a.py calls "main" at a.py:3'),
        Message("user", (TextBlock("and b?"),)),
    ]
    assert reply_format.render(messages, TOOLS) == [
        {"role": "user", "content": "where is main?"},
        {"role": "assistant", "content": '{"read": ["a.py", "b.py"]}\n{"grep": "main"}'},
        {
            "role": "user",
            "content": "Result of Read a.py:\n1\tdef a(): ...\n\nError from Read b.py:\nb.py does not exist"
            "\n\nResult of Grep main:\na.py:3:main()",
        },
        {"role": "assistant", "content": '{"answer": "a.py calls \\"main\\" at a.py:3"}'},
        {"role": "user", "content": "and b?"},
    ]
    # The run's question follows the newest results (a small model answers what it read last); not
    # elsewhere, and not in the conversation itself.
    asked = reply_format.render([*messages[:3]], TOOLS, question="where is main?")
    assert asked[-1]["content"].endswith("a.py:3:main()\n\nwhere is main?")
    assert reply_format.render(messages, TOOLS, question="and b?") == reply_format.render(messages, TOOLS)


def _feed(pieces: list[str]) -> tuple[str, reply_stream.AnswerStream]:
    stream = reply_stream.AnswerStream()
    return "".join(stream.feed(p) for p in pieces), stream


def _split(text: str, cuts: list[int]) -> list[str]:
    points = sorted({c % (len(text) + 1) for c in cuts})
    return [text[a:b] for a, b in zip([0, *points], [*points, len(text)], strict=True)]


@settings(max_examples=300, deadline=None)
@given(
    st.text(),
    st.lists(st.integers(0, 10_000), max_size=12),
    st.booleans(),
    st.sampled_from(["", " ", "\n  "]),
)
def test_an_answer_streams_exactly_whatever_the_pieces(
    answer: str, cuts: list[int], ascii_only: bool, space: str
) -> None:
    # Escapes (\\n, \\", \\uXXXX and surrogate pairs) may be split anywhere between pieces.
    text = "{" + space + '"answer"' + space + ":" + space + json.dumps(answer, ensure_ascii=ascii_only) + "}"
    shown, stream = _feed(_split(text, cuts))
    rest, calls = stream.finish(TOOLS)
    assert shown + rest == answer and calls == []


@settings(max_examples=100, deadline=None)
@given(st.lists(st.text(min_size=1, max_size=20), min_size=1, max_size=4), st.lists(st.integers(0, 500)))
def test_a_call_step_shows_nothing_and_ends_as_its_calls(paths: list[str], cuts: list[int]) -> None:
    text = json.dumps({"read": paths})
    shown, stream = _feed(_split(text, cuts))
    assert shown == ""
    assert stream.finish(TOOLS) == ("", [("Read", {"file_path": p}) for p in dict.fromkeys(paths)])


def test_text_that_is_no_step_is_given_out_whole_at_the_end() -> None:
    # A server that ignored the schema: its text goes on as text (the text-call parser may read it).
    for text in ("Sure! Here is the answer.", '{"name": "Read", "arguments": {"file_path": "a.py"}}'):
        shown, stream = _feed([text[:5], text[5:]])
        assert shown == "" and stream.finish(TOOLS) == (text, [])


def test_an_answer_cut_short_keeps_what_streamed() -> None:
    shown, stream = _feed(['{"answer": "The fun', "ction returns"])
    assert shown == "The function returns" and stream.finish(TOOLS) == ("", [])


def test_the_estimate_counts_the_question_repeated_after_the_newest_results() -> None:
    question = "Which function in app/handlers.py returns the status 404?"
    use = ToolUse("a", "Read", {"file_path": "app/handlers.py"})
    result = Message("user", (ToolResult("a", "x\n"),))
    read = (Message.user(question), Message("assistant", (use,)), result)
    request = Request(
        "m", (), TOOLS, read, 1024, temperature=0.0, constrained=True, answer_only=False, question=question
    )
    without = replace(request, question="")
    wire = sum(len(t["content"]) for t in reply_format.wire_messages(request))
    grown = wire - sum(len(t["content"]) for t in reply_format.wire_messages(without))
    assert grown == len(question) + 2  # the wire form: the results, a blank line, the question
    estimated = (estimate_request(request) - estimate_request(without)) * CHARS_PER_TOKEN
    assert abs(estimated - grown) < CHARS_PER_TOKEN * 2
    assert Meter(None, lambda e: None).raw(request) == estimate_request(request)
    # Before any result the question is the last message itself: nothing is repeated.
    asked = request.with_messages(read[:1])
    assert estimate_request(asked) == estimate_request(replace(asked, question=""))


def test_the_reply_format_holds_no_value_the_model_could_copy_as_an_answer_or_a_path() -> None:
    # Shown `{"answer": "..."}` the 0.5B model answered `...`; shown `["file_path", ...]` it read a file
    # named `file_path`. No JSON value of any kind is written in the format now.
    text = reply_format.instructions(TOOLS)
    for copyable in ('"..."', '"file_path"', '"pattern"', '"path"', "{", "["):
        assert copyable not in text, copyable


def test_an_answer_says_nothing_when_it_has_no_word_or_only_the_formats_words() -> None:
    nothing = ["", "   ", "...", " . . ", "…", "?!", '{"answer": "..."}', "Answer: ...", "your answer"]
    something = [
        "42",
        "list",
        "Yes.",
        "In the workspace root.",
        "It returns a Counter (counter.py:19).",
        "数据",
    ]
    assert [t for t in nothing if not reply_format.says_nothing(t, TOOLS)] == []
    assert [t for t in something if reply_format.says_nothing(t, TOOLS)] == []


def test_asked_again_the_answer_must_start_with_a_letter_or_a_digit() -> None:
    worded = Draft202012Validator(reply_format.schema(TOOLS, worded=True))
    only = Draft202012Validator(reply_format.schema(TOOLS, answer_only=True, worded=True))
    for validator in (worded, only):
        assert not validator.is_valid({"answer": "..."}) and not validator.is_valid({"answer": ""})
        assert validator.is_valid({"answer": "It returns 3 (a.py:2)."})
    assert worded.is_valid({"read": ["a.py"]}) and not only.is_valid({"read": ["a.py"]})
    # The request carries it to the schema the providers send.
    ask = Request("m", (), TOOLS, (Message.user("q"),), 100, constrained=True, worded=True)
    assert reply_format.request_schema(ask) == reply_format.schema(TOOLS, worded=True)
    assert reply_format.request_schema(replace(ask, worded=False)) == reply_format.schema(TOOLS)
