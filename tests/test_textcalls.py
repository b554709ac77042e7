"""The text tool-call fallback, on outputs recorded from the real model and on synthetic variants."""

from __future__ import annotations

import json
import re
import string
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aforo.loop.textcalls import extract_text_tool_calls

TOOLS = frozenset({"Glob", "Grep", "Read", "LS"})
RECORDED = sorted((Path(__file__).parent / "data" / "real_outputs").glob("*.json"))


def calls(text: str, tools: frozenset[str] = TOOLS) -> list[tuple[str, dict[str, Any]]]:
    return extract_text_tool_calls(text, tools)[1]


# --- recorded outputs of Qwen2.5-Coder 0.5B on llama-server (scripts/record-real-outputs) ---------


def test_there_are_recorded_outputs() -> None:
    assert len(RECORDED) >= 3


@pytest.mark.parametrize("path", RECORDED, ids=[p.stem for p in RECORDED])
def test_recorded_output_gives_the_recorded_calls(path: Path) -> None:
    record = json.loads(path.read_text())
    rest, found = extract_text_tool_calls(record["content"], record["tools"])
    assert [[name, args] for name, args in found] == record["expected_calls"]
    assert rest == record["expected_rest"]
    # Every recognized call left the text; what stays (prose, unknown tools' JSON) holds no call.
    assert extract_text_tool_calls(rest, record["tools"]) == (rest, [])


# --- the shapes models write -----------------------------------------------------------------------


def test_fenced_json_block_as_qwen_writes_it() -> None:
    text = 'I will read it.\n```json\n{"name": "Read", "arguments": {"file_path": "cli.py"}}\n```'
    assert extract_text_tool_calls(text, TOOLS) == ("I will read it.", [("Read", {"file_path": "cli.py"})])


def test_fence_without_language_and_inline_fence() -> None:
    assert calls('```\n{"name": "Glob", "arguments": {"pattern": "*.py"}}\n```') == [
        ("Glob", {"pattern": "*.py"})
    ]
    assert calls('```{"name": "LS", "arguments": {"path": "."}}```') == [("LS", {"path": "."})]


def test_bare_json_object_in_prose() -> None:
    text = 'Let me look: {"name": "Grep", "arguments": {"pattern": "def main"}} then answer.'
    rest, found = extract_text_tool_calls(text, TOOLS)
    assert found == [("Grep", {"pattern": "def main"})]
    assert rest == "Let me look:  then answer."


def test_several_calls_in_order_fenced_tagged_and_listed() -> None:
    text = (
        '<tool_call>\n{"name": "Glob", "arguments": {"pattern": "**/*.py"}}\n</tool_call>\n'
        '```json\n{"name": "Read", "arguments": {"file_path": "a.py"}}\n'
        '{"name": "Read", "arguments": {"file_path": "b.py"}}\n```'
    )
    assert calls(text) == [
        ("Glob", {"pattern": "**/*.py"}),
        ("Read", {"file_path": "a.py"}),
        ("Read", {"file_path": "b.py"}),
    ]
    listed = '```json\n[{"name": "Read", "arguments": {"file_path": "a.py"}}, {"name": "LS"}]\n```'
    assert calls(listed) == [("Read", {"file_path": "a.py"}), ("LS", {})]


@pytest.mark.parametrize(
    "obj",
    [
        {"name": "Read", "parameters": {"file_path": "x"}},
        {"tool": "Read", "parameters": {"file_path": "x"}},
        {"tool": "Read", "args": {"file_path": "x"}},
        {"tool": "Read", "input": {"file_path": "x"}},
        {"tool_name": "Read", "tool_input": {"file_path": "x"}},
        {"function": {"name": "Read", "arguments": {"file_path": "x"}}},
        {"type": "function", "id": "c1", "function": {"name": "Read", "arguments": '{"file_path": "x"}'}},
        {"name": "Read", "arguments": '{"file_path": "x"}'},
        {"name": "functions.Read", "arguments": {"file_path": "x"}},
        {"name": "Read", "file_path": "x"},
        {"tool_calls": [{"function": {"name": "Read", "arguments": {"file_path": "x"}}}]},
    ],
)
def test_common_variants(obj: dict[str, Any]) -> None:
    assert calls(f"```json\n{json.dumps(obj)}\n```") == [("Read", {"file_path": "x"})]
    assert calls(json.dumps(obj)) == [("Read", {"file_path": "x"})]


def test_tool_call_tags_hermes_style_also_unclosed() -> None:
    body = '{"name": "Read", "arguments": {"file_path": "x"}}'
    assert extract_text_tool_calls(f"<tool_call>\n{body}\n</tool_call>", TOOLS) == (
        "",
        [("Read", {"file_path": "x"})],
    )
    # A stream cut right after the JSON (stop sequence, max_tokens) leaves the tag open.
    assert calls(f"<tool_call>\n{body}") == [("Read", {"file_path": "x"})]


def test_fence_inside_tag_and_tag_inside_fence_count_once() -> None:
    body = '{"name": "Read", "arguments": {"file_path": "x"}}'
    assert calls(f"<tool_call>\n```json\n{body}\n```\n</tool_call>") == [("Read", {"file_path": "x"})]
    assert calls(f"```\n<tool_call>{body}</tool_call>\n```") == [("Read", {"file_path": "x"})]


def test_python_literal_in_a_fence() -> None:
    assert calls("```python\n{'name': 'Read', 'arguments': {'file_path': 'x'}}\n```") == [
        ("Read", {"file_path": "x"})
    ]


def test_name_matching_exact_first_then_case_insensitive() -> None:
    assert calls('{"name": "read", "arguments": {"file_path": "x"}}') == [("Read", {"file_path": "x"})]
    assert calls('{"name": "GLOB", "arguments": {"pattern": "*"}}') == [("Glob", {"pattern": "*"})]
    # Two tools differing only by case: the exact one wins.
    both = frozenset({"read", "Read"})
    assert calls('{"name": "read", "arguments": {}}', both) == [("read", {})]
    assert calls('{"name": "Read", "arguments": {}}', both) == [("Read", {})]


def test_a_name_followed_by_its_argument_as_qwen_05b_writes_it() -> None:
    text = '```json\n{"name": "Read wordfreq/counter.py", "arguments": {"file_path": "counter.py"}}\n```'
    assert calls(text) == [("Read", {"file_path": "counter.py"})]
    assert calls('{"name": "read(file_path)", "arguments": {}}') == [("Read", {})]
    # The first word must be a whole tool name: "Readme" and "Read_all" are not "Read".
    assert calls('{"name": "Readme", "arguments": {}}') == []
    assert calls('{"name": "Read_all files", "arguments": {}}') == []


def test_missing_or_null_arguments_mean_none() -> None:
    assert calls('{"name": "LS"}') == [("LS", {})]
    assert calls('{"name": "LS", "arguments": null}') == [("LS", {})]


# --- ordinary JSON stays text ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        '```json\n{"version": "0.2.0", "files": 5}\n```',
        '{"name": "wordfreq", "version": "0.2.0"}',
        '```json\n{"name": "Write", "arguments": {"file_path": "x"}}\n```',
        '{"name": "Bash", "arguments": {"command": "rm -rf /"}}',
        '[{"name": "Read", "description": "reads a file"}, {"name": "Glob", "description": "finds files"}]',
        '{"name": "Read", "arguments": "not json at all"}',
        '{"name": "Read", "arguments": [1, 2]}',
        '{"name": ["Read"], "arguments": {}}',
        '{"result": {"name": "Read", "arguments": {"file_path": "x"}}}',
        '```json\n{"name": "Read", "arguments": {"file_path": "x"\n```',
        "The tool Read takes {file_path}. Use [offset, limit] for parts.",
        "",
    ],
)
def test_not_a_call(text: str) -> None:
    assert extract_text_tool_calls(text, TOOLS) == (text, [])


def test_a_list_with_one_non_call_is_not_a_call() -> None:
    text = '[{"name": "Read", "arguments": {}}, {"name": "Bash", "arguments": {}}]'
    assert calls(text) == []


def test_no_tools_means_no_calls() -> None:
    text = '{"name": "Read", "arguments": {"file_path": "x"}}'
    assert extract_text_tool_calls(text, frozenset()) == (text, [])


def test_fenced_calls_win_over_bare_json_elsewhere() -> None:
    text = (
        'The config is {"name": "Read", "arguments": {"file_path": "example"}}.\n'
        '```json\n{"name": "Glob", "arguments": {"pattern": "*.toml"}}\n```'
    )
    rest, found = extract_text_tool_calls(text, TOOLS)
    assert found == [("Glob", {"pattern": "*.toml"})]
    assert rest.startswith("The config is {")


@given(st.text(max_size=300))
def test_never_crashes_and_text_without_braces_is_untouched(text: str) -> None:
    rest, found = extract_text_tool_calls(text, TOOLS)
    if not any(c in text for c in "{[") and "'" not in text:
        assert (rest, found) == (text, [])
    for name, args in found:
        assert name in TOOLS and isinstance(args, dict)


# --- hostile text: deep, unbalanced, long ---------------------------------------------------------
# Each of these raised RecursionError (or took quadratic time) before the scanner was made linear and
# flat; speed by input size lives in bench/textcalls.py.

CALL = '{"name": "Read", "arguments": {"file_path": "x"}}'


@pytest.mark.parametrize("opener", ["[", "{", '{"a": ', '{"name": "Read", "arguments": ', "[" * 3 + "{"])
def test_thousands_of_openers_are_text(opener: str) -> None:
    for count in (1000, 20_000):
        text = opener * count
        assert extract_text_tool_calls(text, TOOLS) == (text, [])
        fenced = f"```json\n{text}\n```"
        assert extract_text_tool_calls(fenced, TOOLS) == (fenced, [])


def test_nested_calls_deeper_than_the_limit_do_not_crash() -> None:
    text = '{"name": "Read", "arguments": ' * 1000 + "{}" + "}" * 1000
    rest, found = extract_text_tool_calls(text, TOOLS)
    # The outer levels are too deep to parse; the outermost one within the limit is a Read call whose
    # arguments are the levels inside it: an error result for the model (no such parameter), no crash.
    [(name, args)] = found
    assert name == "Read" and set(args) == {"name", "arguments"}
    assert rest.startswith('{"name": "Read", "arguments": ' * (1000 - 64)) and rest.endswith("}")


def test_a_call_after_thousands_of_open_brackets_is_still_found() -> None:
    assert extract_text_tool_calls("[" * 2000 + CALL, TOOLS) == ("[" * 2000, [("Read", {"file_path": "x"})])
    # Closed around it, the brackets make one JSON value, a list of lists: not a call, as before.
    text = "[" * 2000 + CALL + "]" * 2000
    assert extract_text_tool_calls(text, TOOLS) == (text, [])


def test_arguments_nested_past_the_limit_are_not_a_call() -> None:
    deep_args = "[" * 5000 + "]" * 5000
    assert calls('{"name": "Read", "arguments": {"file_path": ' + deep_args + "}}") == []
    # OpenAI's wire form: the arguments as a JSON string, nested as deep inside it.
    assert calls(json.dumps({"name": "Read", "arguments": '{"file_path": ' + deep_args + "}"})) == []


def test_a_python_literal_is_read_only_when_small_and_shallow() -> None:
    small = "```python\n{'name': 'Read', 'arguments': {'file_path': 'x'}}\n```"
    assert calls(small) == [("Read", {"file_path": "x"})]
    long_path = "x" * 20_000
    assert calls(f"```python\n{{'name': 'Read', 'arguments': {{'file_path': '{long_path}'}}}}\n```") == []
    deep = "```python\n{'name': 'Read', 'arguments': {'a': " + "(" * 500 + ")" * 500 + "}}\n```"
    assert calls(deep) == []


def test_unclosed_tags_and_fences_in_bulk() -> None:
    for text in (
        "<tool_call>" * 10_000,
        "```" * 10_001,
        "<tool_call>" + " " * 50_000 + "x",
        "```json" + "a" * 50_000,
    ):
        assert extract_text_tool_calls(text, TOOLS) == (text, [])


def test_many_calls_in_one_answer_are_all_found_in_order() -> None:
    text = "\n".join(
        f'<tool_call>{{"name": "Read", "arguments": {{"file_path": "f{i}"}}}}</tool_call>'
        for i in range(3000)
    )
    rest, found = extract_text_tool_calls(text, TOOLS)
    assert rest == "" and found == [("Read", {"file_path": f"f{i}"}) for i in range(3000)]


def test_a_stray_quote_in_prose_does_not_hide_a_later_call() -> None:
    assert calls(f'He said "use the tool: {CALL}') == [("Read", {"file_path": "x"})]
    assert calls(f'[a list with a "broken string\n{CALL}') == [("Read", {"file_path": "x"})]


ADVERSARIAL = (
    "[", "]", "{", "}", '"', "\\", ":", ",", "'", "`", "```", "```json\n", "<tool_call>", "</tool_call>",
    '{"name": ', '"Read"', '"arguments": ', '{"file_path": "x"}', CALL, "\n", " ", "a", "1",
    "{'name': 'Read'", "(",
)  # fmt: skip


@settings(deadline=None, max_examples=300)
@given(st.lists(st.tuples(st.sampled_from(ADVERSARIAL), st.integers(1, 300)), max_size=12))
def test_adversarial_text_never_raises_and_only_returns_known_calls(runs: list[tuple[str, int]]) -> None:
    text = "".join(piece * count for piece, count in runs)
    rest, found = extract_text_tool_calls(text, TOOLS)
    if not found:
        assert rest == text
    for name, args in found:
        assert name in TOOLS and isinstance(args, dict)
    assert len(rest) <= len(text)


prose = st.text(alphabet=st.characters(blacklist_characters='{}[]"`<\\'), max_size=80)
paths = st.text(alphabet=string.ascii_letters + string.digits + "/._-", min_size=1, max_size=40)


@settings(deadline=None)
@given(prose, st.sampled_from(sorted(TOOLS)), paths, prose)
def test_a_call_in_prose_is_found_exactly(before: str, name: str, path: str, after: str) -> None:
    call = json.dumps({"name": name, "arguments": {"file_path": path}})
    rest, found = extract_text_tool_calls(f"{before}{call}{after}", TOOLS)
    assert found == [(name, {"file_path": path})]
    assert rest == re.sub(r"\n{3,}", "\n\n", before + after).strip()
