"""File names with newlines, escapes and bytes that are not UTF-8: one line each, valid UTF-8, reachable."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aforo.errors import ToolError
from aforo.protocols import ToolContext
from aforo.tools import LS, Glob, Grep, Read
from aforo.tools.names import show, unshow

# Every code point, lone surrogates included (os.fsdecode makes those of undecodable bytes).
ANY_TEXT = st.text(st.characters(exclude_categories=()))


@given(ANY_TEXT)
def test_show_is_one_line_of_valid_utf8_and_unshow_reverses_it(name: str) -> None:
    shown = show(name)
    assert len(shown.splitlines()) <= 1
    shown.encode("utf-8")  # no lone surrogate left
    assert unshow(shown) == name


@given(st.binary(min_size=1).filter(lambda b: b"\0" not in b and b"/" not in b))
def test_any_byte_name_round_trips(raw: bytes) -> None:
    assert os.fsencode(unshow(show(os.fsdecode(raw)))) == raw


@pytest.mark.parametrize(
    ("name", "shown"),
    [
        ("a\nb.txt", "a\\nb.txt"),
        ("esc\x1b[2J.txt", "esc\\x1b[2J.txt"),
        (os.fsdecode(b"caf\xe9.py"), "caf\\xe9.py"),
        ("café.py", "café.py"),
        ("back\\slash", "back\\\\slash"),
        ("sep\u2028\x85.txt", "sep\\u2028\\u0085.txt"),
    ],
)
def test_show_examples(name: str, shown: str) -> None:
    assert show(name) == shown


def test_a_backslash_that_starts_no_escape_is_kept() -> None:
    assert unshow("src\\main.py") == "src\\main.py"


# Names as bytes, so the non-UTF-8 one is exactly what a Latin-1 checkout would hold.
NAMES = {
    b"a\nb.txt": "a\\nb.txt",
    b"esc\x1b[2J.txt": "esc\\x1b[2J.txt",
    b"caf\xe9.py": "caf\\xe9.py",
}


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "d\nir").mkdir(parents=True)
    for raw in NAMES:
        with open(os.path.join(os.fsencode(root), raw), "wb") as f:
            f.write(b"needle " + raw.replace(b"\n", b" ") + b"\n")
    (root / "d\nir" / "inner.txt").write_text("needle inner\n")
    return root


def run(tool: Glob | Grep | LS | Read, ws: Path, **args: object) -> str:
    out = tool.run(dict(args), ToolContext(ws))
    json.dumps(out.content, ensure_ascii=False).encode("utf-8")  # what the next request does with it
    return out.content


def test_ls_shows_each_name_on_one_line(ws: Path) -> None:
    lines = run(LS(), ws).splitlines()
    assert lines[0] == "./ (4 entries)"
    assert sorted(lines[1:]) == sorted([*NAMES.values(), "d\\nir/"])


def test_glob_shows_each_name_on_one_line(ws: Path) -> None:
    lines = run(Glob(), ws, pattern="*").splitlines()
    assert sorted(lines) == sorted([*NAMES.values(), "d\\nir/inner.txt"])


@pytest.mark.parametrize("mode", ["content", "files_with_matches", "count"])
def test_grep_shows_each_path_on_one_line(ws: Path, mode: str) -> None:
    lines = run(Grep(), ws, pattern="needle", output_mode=mode).splitlines()
    paths = [line.partition(":")[0] for line in lines if not line.startswith("(")]
    assert sorted(paths) == sorted([*NAMES.values(), "d\\nir/inner.txt"])


@pytest.mark.parametrize("raw", list(NAMES))
def test_a_listed_name_passed_back_reaches_the_file(ws: Path, raw: bytes) -> None:
    shown = NAMES[raw]
    assert run(Read(), ws, file_path=shown).startswith("1\tneedle ")
    assert run(Grep(), ws, pattern="needle", path=shown, output_mode="files_with_matches") == shown


def test_a_listed_directory_passed_back_to_ls_and_grep(ws: Path) -> None:
    assert run(LS(), ws, path="d\\nir").splitlines()[1:] == ["inner.txt"]
    assert run(Grep(), ws, pattern="needle", path="d\\nir") == "d\\nir/inner.txt:1:needle inner"


def test_a_literal_name_that_looks_escaped_is_still_reachable(ws: Path) -> None:
    (ws / "x\\n.txt").write_text("literal\n")
    assert run(Read(), ws, file_path="x\\n.txt") == "1\tliteral"
    assert "x\\\\n.txt" in run(LS(), ws)
    assert run(Read(), ws, file_path="x\\\\n.txt") == "1\tliteral"


def test_an_error_about_a_strange_name_shows_it_escaped(ws: Path) -> None:
    with pytest.raises(ToolError) as err:
        Read().run({"file_path": "caf\\xe9.py/nope"}, ToolContext(ws))
    assert "caf\\xe9.py/nope" in str(err.value)
    str(err.value).encode("utf-8")
