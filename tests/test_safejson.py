"""The JSON loader for untrusted input: the same values as `json.loads`, and a named limit instead of a
`RecursionError` traceback for a document nested deeper than `JSON_DEPTH`."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aforo.errors import LimitExceeded
from aforo.limits import JSON_DEPTH
from aforo.safejson import check_depth, loads

LIMIT = int(JSON_DEPTH.value)


def nested(levels: int, inner: str = "1") -> str:
    return "[" * levels + inner + "]" * levels


def test_a_document_nested_ten_thousand_deep_is_refused_by_name() -> None:
    with pytest.raises(RecursionError):
        json.loads(nested(100_000))  # what a server or a session file could do before
    with pytest.raises(LimitExceeded) as err:
        loads(nested(100_000), "session file /x/s.json")
    assert err.value.limit is JSON_DEPTH
    assert "session file /x/s.json" in str(err.value) and "json_depth" in str(err.value)


def test_the_limit_itself_is_allowed_one_more_is_not() -> None:
    assert loads(nested(LIMIT)) == json.loads(nested(LIMIT))
    with pytest.raises(LimitExceeded):
        loads(nested(LIMIT + 1))
    objects = '{"a": ' * (LIMIT + 1) + "1" + "}" * (LIMIT + 1)
    with pytest.raises(LimitExceeded):
        loads(objects)


def test_brackets_inside_strings_do_not_count() -> None:
    text = json.dumps(["[" * 1000, '\\"[{' * 500, {"k": "}" * 1000}])
    assert loads(text) == json.loads(text)


def test_an_unbalanced_document_still_gets_the_parsers_error() -> None:
    with pytest.raises(json.JSONDecodeError):
        loads('{"a": [1, 2}')
    with pytest.raises(json.JSONDecodeError):
        loads('"unterminated [[[[')
    with pytest.raises(json.JSONDecodeError):
        loads("]]]]" + nested(3))


def test_bytes_are_decoded_as_json_loads_decodes_them() -> None:
    value = {"text": "Ünïcödé 🚀", "n": [1, 2.5, None, True]}
    for encoding in ("utf-8", "utf-16", "utf-32"):
        assert loads(json.dumps(value, ensure_ascii=False).encode(encoding)) == value
    with pytest.raises(LimitExceeded):
        loads(nested(LIMIT + 1).encode("utf-16"))


def test_check_depth_on_its_own() -> None:
    check_depth(nested(LIMIT), "a body")
    with pytest.raises(LimitExceeded, match="a body is nested more than"):
        check_depth(nested(LIMIT + 1), "a body")


def depth(value: Any) -> int:
    if isinstance(value, list):
        return 1 + max((depth(v) for v in value), default=0)
    if isinstance(value, dict):
        return 1 + max((depth(v) for v in value.values()), default=0)
    return 0


# Integers past json_integer are refused (tests/faults/test_integers.py).
INT64 = st.integers(1 - 2**63, 2**63 - 1)
json_values = st.recursive(
    st.none() | st.booleans() | INT64 | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=80,
)


@settings(deadline=None)
@given(json_values)
def test_same_values_as_json_loads(value: Any) -> None:
    text = json.dumps(value)
    if depth(value) <= LIMIT:
        assert loads(text) == json.loads(text)
    else:
        with pytest.raises(LimitExceeded):
            loads(text)


PIECES = ("[", "]", "{", "}", '"', "\\", ":", ",", "1", " ", '"a"', "[[[[", "]]]]", "null", "\n")


@settings(deadline=None, max_examples=300)
@given(st.lists(st.tuples(st.sampled_from(PIECES), st.integers(1, 30)), max_size=10))
def test_any_text_parses_as_json_loads_would_or_is_refused(runs: list[tuple[str, int]]) -> None:
    text = "".join(piece * count for piece, count in runs)
    try:
        expected: Any = json.loads(text)
    except (ValueError, RecursionError):
        expected = ValueError
    try:
        got: Any = loads(text)
    except ValueError:
        got = ValueError
    except LimitExceeded:
        return  # deeper than the limit: refused whatever json.loads would have done
    assert got == expected
