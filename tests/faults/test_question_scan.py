"""A long question or piped text is read in linear time before the first request (issue 39, D1).

The path and range patterns of the pre-search backtracked inside long words: 16 000 characters of
`a1.x` took 16.5 s before the first request, and 1 MiB piped with no question (the piped text is the
question then) sent nothing in 120 s. The time per size is bench/question_scan.py's; here, what the
scans find is checked against a plain oracle (the path pattern tried from every place, as before), and
the hostile questions of the issue reach the server.
"""

from __future__ import annotations

import re
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from aforo.navigate.terms import MAX_RANGE, question_paths
from faults.server import misbehaving_app, openai_chunk, sse
from support.cli import run_cli
from support.live_server import LiveServer

# The oracle: a path is any run of path characters ending in a slash and a name or in an extension,
# tried from every place of the text (the pattern before the fix, quadratic on long words).
ORACLE = re.compile(
    r"@?[\w./-]*(/[\w.-]+|\.(py|pyi|js|jsx|ts|tsx|go|rs|java|c|h|cc|cpp|hpp|rb|md|rst|txt|toml|json|ya?ml|cfg|ini|sh))\b"
)
# No digit: no numbered range, so every path of the text is the oracle's.
PIECES = ["a", "b", "_", ".", "/", "-", "@", " ", "py", "md", "json", "c", "x", "\n", "`", "é", "…", ","]


def oracle_paths(text: str) -> tuple[str, ...]:
    found = (m.group(0).lstrip("@").rstrip(".") for m in ORACLE.finditer(text))
    return tuple(dict.fromkeys(p for p in found if p))


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=40).map("".join))
def test_the_paths_of_a_question_are_the_oracles(text: str) -> None:
    assert question_paths(text) == oracle_paths(text)


STEMS = ["mod", "t", "src/part_", "my-file", "@test"]
SEPARATORS = [" … ", "…", " to ", " through ", " - ", " ... ", "-", "..."]
WORDS = st.lists(st.sampled_from(["Read", "all", "the", "files", "and", "say", "which", "is", "longest"]))


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(STEMS),
    st.integers(0, 40),
    st.integers(0, 40),
    st.integers(1, 3),
    st.sampled_from([".py", ".md", ".txt"]),
    st.sampled_from(SEPARATORS),
    WORDS,
    WORDS,
)
def test_a_numbered_range_names_every_file_in_it(
    stem: str, first: int, last: int, width: int, ext: str, sep: str, before: list[str], after: list[str]
) -> None:
    a, b = f"{stem}{first:0{width}d}{ext}", f"{stem}{last:0{width}d}{ext}"
    question = " ".join([*before, f"{a}{sep}{b}", *after]) + "?"
    name = stem.lstrip("@")
    if first < last and last - first < MAX_RANGE:
        expected = tuple(f"{name}{n:0{width}d}{ext}" for n in range(first, last + 1))
    else:  # no range: its two ends, as written
        expected = tuple(dict.fromkeys([a.lstrip("@"), b.lstrip("@")]))
    assert question_paths(question) == expected


def test_a_number_of_thousands_of_digits_is_no_range() -> None:
    # int() refuses more than 4 300 digits: a range's ends are read only when they are short.
    digits = "1" * 5_000
    assert question_paths(f"f{digits}.py to f{digits}2.py") == (f"f{digits}.py", f"f{digits}2.py")


def _first_request(tmp_path: Path, *words: str, stdin: str = "", window: str = "32768") -> list[object]:
    (tmp_path / "a.py").write_text("def f():\n    return 1\n")
    app = misbehaving_app(lambda n: sse([openai_chunk("Fine."), openai_chunk(finish="stop")]))
    with LiveServer(app) as server:
        args = ("-w", str(tmp_path), "--base-url", f"{server.url}/v1", "--server", "openai", "-m", "m")
        # Far more than the few seconds a linear scan takes here: before, these never got to a request.
        run = run_cli(*args, "--context-window", window, *words, stdin=stdin, timeout=100)
    assert run.code == 0, run.err
    assert "Traceback" not in run.err
    bodies: list[object] = app.state.bodies
    return bodies


def test_one_mib_piped_with_no_question_reaches_the_server(tmp_path: Path) -> None:
    bodies = _first_request(tmp_path, stdin="a1.x" * (1024 * 1024 // 4))
    assert len(bodies) == 1


def test_a_question_of_one_long_word_of_slashes_reaches_the_server(tmp_path: Path) -> None:
    question = "where is " + "a/" * 50_000
    bodies = _first_request(tmp_path, question, window="131072")
    assert len(bodies) == 1
    assert question in str(bodies[0])  # the question as typed
