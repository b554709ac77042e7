"""The citations of an answer, found and checked against plain facts (aforo.citations).

The examples are the issue's (37), from held-out runs of the 1.5B: a function "defined in `X.py` at
line 587 and `__init__.py` at line 2596" where that `__init__.py` has about a hundred lines, and a
decorator "defined in `_make.py` at line 1361" where the symbol index has its one definition elsewhere.
"""

from __future__ import annotations

import string

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aforo.citations import Citation, Definition, Facts, check, find, matches, wanted

FACTS = Facts(
    files={"src/pkg/__init__.py": 103, "src/pkg/_make.py": 3100, "src/pkg/_next_gen.py": 220, "main.py": 392},
    definitions={
        "attrs": [Definition("src/pkg/_next_gen.py", 40, 38)],
        "find_dotenv": [Definition("main.py", 275, 275)],
    },
)


def verdicts(text: str) -> list[tuple[str, bool, str]]:
    return [(v.citation.text, v.held, v.fact) for v in check(find(text, 64), FACTS)]


def test_a_line_past_the_end_of_the_file_does_not_hold_and_the_fact_says_its_length() -> None:
    said = "It is defined in `_make.py` at line 587 and `__init__.py` at line 2596."
    assert verdicts(said) == [
        ("_make.py at line 587", True, ""),
        ("__init__.py at line 2596", False, "`src/pkg/__init__.py` has 103 lines; there is no line 2596"),
    ]


def test_a_definition_the_index_has_elsewhere_does_not_hold_and_the_fact_says_where() -> None:
    said = "The `attrs` decorator is defined in `_make.py` at line 1361."
    assert verdicts(said) == [
        (
            "attrs decorator is defined in _make.py at line 1361",
            False,
            "`_make.py` defines no `attrs`; `attrs` is defined in `src/pkg/_next_gen.py` at line 40",
        )
    ]


def test_a_definition_at_the_wrong_line_of_the_right_file_does_not_hold() -> None:
    assert verdicts("find_dotenv is defined in main.py at line 12.") == [
        (
            "find_dotenv is defined in main.py at line 12",
            False,
            "`find_dotenv` is not defined at line 12; `find_dotenv` is defined in `main.py` at line 275",
        )
    ]
    # Its decorators' lines count as its definition: the index's start to its `def` line.
    assert verdicts("`attrs` is defined in `_next_gen.py` at line 38")[0][1] is True


def test_the_places_an_answer_writes_are_found_in_each_form() -> None:
    said = (
        "See main.py:275, `main.py:280-290`, line 12 of _make.py, `main.py` (line 3), and nope.py. "
        "The `find_dotenv` function is defined in the `main.py` file at line 275. os.path and "
        "Signer.sign are no files; neither is e.g. or v1.2."
    )
    found = [(c.path, c.start, c.end, c.name) for c in find(said, 64)]
    # `main.py:275` says no more than the definition said at that line: it is checked once, as that.
    assert found == [
        ("main.py", 280, 290, None),
        ("_make.py", 12, None, None),
        ("main.py", 3, None, None),
        ("nope.py", None, None, None),
        ("main.py", 275, None, "find_dotenv"),
    ]
    assert [v.held for v in check(find(said, 64), FACTS)] == [True, True, True, False, True]


def test_a_list_of_lines_each_is_checked_and_a_bare_path_beside_its_lines_is_not_counted_twice() -> None:
    cited = find("`main.py` is long: see main.py at lines 100, 200 and 400.", 64)
    assert [(c.path, c.start) for c in cited] == [("main.py", 100), ("main.py", 200), ("main.py", 400)]
    assert [v.held for v in check(cited, FACTS)] == [True, True, False]
    # The 1.5B on packaging (held out): the file named as a file.
    cited = find("The `ast` module is imported in the `_parser.py` file at lines 9 and 332.", 64)
    assert [(c.path, c.start) for c in cited] == [("_parser.py", 9), ("_parser.py", 332)]


def test_a_name_the_index_does_not_define_is_judged_by_its_file_alone() -> None:
    assert verdicts("`os.getenv` is defined in main.py.") == [("os.getenv is defined in main.py", True, "")]
    assert verdicts("`getenv` is defined in `os.py`.")[0][2] == "there is no file `os.py` in the workspace"


def test_at_most_the_limit_is_found_and_what_the_check_needs_is_said() -> None:
    text = " ".join(f"main.py:{n}" for n in range(1, 200))
    assert len(find(text, 64)) == 64
    assert wanted(find("attrs is defined in _make.py; see main.py:3", 64)) == (
        {"_make.py", "main.py"},
        {"attrs"},
    )


def test_a_cited_path_names_the_file_itself_or_any_file_it_is_the_tail_of() -> None:
    files = ["src/click/core.py", "core.py", "src/xcore.py", "tests/click/core.py"]
    assert matches("core.py", files) == ["src/click/core.py", "core.py", "tests/click/core.py"]
    assert matches("click/core.py", files) == ["src/click/core.py", "tests/click/core.py"]
    assert matches("./core.py", files) == ["core.py"]


NAMES = st.text(string.ascii_lowercase + "_", min_size=1, max_size=12).filter(lambda s: s.strip("_"))
PROSE = st.text(string.ascii_letters + " ,", max_size=40)


@given(NAMES, st.integers(1, 5000), st.integers(1, 5000), PROSE, PROSE)
def test_a_line_holds_exactly_when_it_is_within_the_file(
    name: str, length: int, line: int, before: str, after: str
) -> None:
    path = f"pkg/{name}.py"
    facts = Facts({path: length}, {})
    [verdict] = check(find(f"{before} {name}.py:{line} {after}", 64), facts)
    assert verdict.citation == Citation(f"{name}.py:{line}", f"{name}.py", line)
    assert verdict.held is (line <= length)
    if not verdict.held:
        lines = "line" if length == 1 else "lines"
        assert verdict.fact == f"`{path}` has {length} {lines}; there is no line {line}"


@given(NAMES, st.integers(1, 400), st.integers(0, 400), st.integers(1, 400))
def test_a_range_holds_exactly_when_its_last_line_is_within_the_file(
    name: str, start: int, more: int, length: int
) -> None:
    [verdict] = check(find(f"see {name}.py:{start}-{start + more}", 64), Facts({f"{name}.py": length}, {}))
    assert verdict.held is (start + more <= length)


@given(NAMES, NAMES, st.integers(1, 300))
def test_a_definition_holds_exactly_when_the_index_has_it_in_that_file(
    name: str, module: str, line: int
) -> None:
    facts = Facts({"a.py": 500, f"{module}.py": 500}, {name: [Definition("a.py", line, line)]})
    [verdict] = check(find(f"`{name}` is defined in `{module}.py`", 64), facts)
    assert verdict.held is (module == "a")
    if module != "a":
        assert (
            verdict.fact == f"`{module}.py` defines no `{name}`; `{name}` is defined in `a.py` at line {line}"
        )


@given(st.text(max_size=300))
def test_any_text_is_read_without_error_and_every_citation_gets_one_verdict(text: str) -> None:
    cited = find(text, 64)
    assert len(check(cited, FACTS)) == len(cited) <= 64


def test_a_path_cited_from_above_the_workspace_names_its_file() -> None:
    # The workspace is `.../src/click`; the model cites from the project's top.
    facts = Facts({"core.py": 3000, "parser/x.py": 10}, {}, root=("work", "click-8.1.7", "src", "click"))
    assert [
        v.held for v in check(find("src/click/core.py:455, click/core.py and lib/core.py", 64), facts)
    ] == [
        True,
        True,
        False,
    ]
    assert matches("click/parser/x.py", facts.files, facts.root) == ["parser/x.py"]


def test_a_name_written_as_a_call_is_the_name() -> None:
    [cited] = find("`find_dotenv()` is defined in `main.py` (line 275).", 64)
    assert (cited.name, cited.path, cited.start) == ("find_dotenv", "main.py", 275)
    [cited] = find("The decorator `attrs` is defined in `_make.py`.", 64)
    assert (cited.name, cited.path) == ("attrs", "_make.py")


@pytest.mark.timeout(10)  # quadratic, these took minutes (the faults suite's 80 KB answers)
@pytest.mark.parametrize(
    "text",
    ["/" * 80_000 + "\n" + "sk-" * 26_667, "a" * 80_000, "a/" * 40_000 + "b.py", "is defined in " * 6_000],
)
def test_a_long_hostile_answer_is_read_in_linear_time(text: str) -> None:
    assert len(find(text, 64)) <= 1


def test_a_definition_said_with_its_file_first_is_checked_as_one() -> None:
    # The 1.5B after two compactions (held-out session dotenv-h): "In `cli.py`, the function
    # `find_dotenv` is defined." Only the file was checked, and it exists.
    assert verdicts("In `__init__.py`, the function `find_dotenv` is defined.") == [
        (
            "In __init__.py, the function find_dotenv is defined",
            False,
            "`__init__.py` defines no `find_dotenv`; `find_dotenv` is defined in `main.py` at line 275",
        )
    ]
    assert verdicts("In main.py, at line 275, find_dotenv is defined.")[0][1:] == (True, "")
    assert verdicts("in main.py (line 12) the find_dotenv function is defined")[0][1] is False
    # "it is defined" names nothing: the path alone is checked.
    assert [c.name for c in find("In `main.py`, it is defined.", 8)] == [None]


def test_a_file_that_defines_a_name_is_checked_as_a_definition() -> None:
    # A new user on more-itertools, after one correction: "The file `more_itertools/recipes.py` defines
    # the `split_after` and `split_at` functions" (more.py does); only the file was checked.
    assert verdicts("The file `__init__.py` defines the `find_dotenv` function.") == [
        (
            "__init__.py defines the find_dotenv function",
            False,
            "`__init__.py` defines no `find_dotenv`; `find_dotenv` is defined in `main.py` at line 275",
        )
    ]
    assert verdicts("`main.py` defines `find_dotenv` at line 275.")[0][1:] == (True, "")
    assert verdicts("main.py defines a find_dotenv function, on line 12")[0][1] is False


def test_a_file_s_line_count_the_answer_states_is_judged_against_the_file() -> None:
    # The 1.5B on attrs: "The file `src/attr/_funcs.py` has 73 lines." (it has 522).
    assert verdicts("The file `src/pkg/_next_gen.py` has 73 lines.") == [
        ("src/pkg/_next_gen.py has 73 lines", False, "`src/pkg/_next_gen.py` has 220 lines")
    ]
    assert verdicts("`main.py` is 392 lines long and _make.py (3100 lines) is longer.") == [
        ("main.py is 392 lines long", True, ""),
        ("_make.py (3100 lines)", True, ""),
    ]
    assert verdicts("__init__.py (104 lines)")[0][1:] == (False, "`src/pkg/__init__.py` has 103 lines")
    # No exact count of the whole file: not judged as one.
    assert [c.lines for c in find("main.py has about 400 lines; main.py has 3 lines that import os", 8)] == [
        None
    ]


def test_every_file_of_a_definition_said_in_several_is_checked() -> None:
    # The 1.5B on attrs: "Factory is defined in src/attr/_make.py and src/attr/__init__.py", where
    # __init__.py only imports it; only the first file was read.
    said = "The attrs decorator is defined in `_next_gen.py` and `__init__.py`."
    assert verdicts(said) == [
        ("attrs decorator is defined in _next_gen.py", True, ""),
        (
            "attrs decorator is defined in _next_gen.py and __init__.py",
            False,
            "`__init__.py` defines no `attrs`; `attrs` is defined in `src/pkg/_next_gen.py` at line 40",
        ),
    ]
    cited = find("`attrs` is defined in _next_gen.py at line 40, _make.py at line 9, and in nope.py.", 64)
    assert [(c.path, c.start, c.name) for c in cited] == [
        ("_next_gen.py", 40, "attrs"),
        ("_make.py", 9, "attrs"),
        ("nope.py", None, "attrs"),
    ]
    assert [v.held for v in check(cited, FACTS)] == [True, False, False]
    # A file with a clause of its own is not said to define it.
    cited = find("`attrs` is defined in _next_gen.py, and __init__.py imports it.", 64)
    assert [(c.path, c.name) for c in cited] == [("_next_gen.py", "attrs"), ("__init__.py", None)]
