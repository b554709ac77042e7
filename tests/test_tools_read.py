"""Read and LS against real files, including hostile ones (binary, huge, invalid UTF-8, FIFOs, devices)."""

from __future__ import annotations

import os
import socket
import threading
import time
import warnings
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from aforo.errors import LimitExceeded, ToolError
from aforo.limits import LINE_DIGITS
from aforo.protocols import ToolContext
from aforo.tools import LS, Read, read_tool
from aforo.tools.deadline import Interrupted
from aforo.tools.outline import MAX_NAMES
from aforo.tools.read_tool import MAX_LINE_CHARS
from aforo.tools.registry import default_registry


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


def read(ws: Path, max_chars: int | None = None, **args: object) -> str:
    return Read().run(dict(args), ToolContext(workspace=ws, max_chars=max_chars)).content


def test_lines_are_numbered_where_blocks_start_and_every_ten_lines(ws: Path) -> None:
    (ws / "a.txt").write_text("alpha\nbeta\n")
    assert read(ws, file_path="a.txt") == "1\talpha\nbeta"
    body = ["def f():", "    x = 1", "", "def g():", *[f"    y{i} = {i}" for i in range(12)], "", ""]
    (ws / "b.txt").write_text("\n".join(body) + "\n")
    out = read(ws, file_path="b.txt").splitlines()
    numbered = [line.split("\t", 1)[0] for line in out if "\t" in line]
    # Block starts (1, 4: after the blank line 3) and then every ten lines (14); blank lines never.
    assert numbered == ["1", "4", "14"]
    assert out[1] == "    x = 1" and out[2] == "" and out[13] == "14\t    y9 = 9"


def numbered_lines(out: str) -> list[tuple[int, str]]:
    """Read's output back as (line number, text): a line that starts with digits and a tab carries its
    number, every other line is the one after the line above it; the notes in parentheses end it."""
    shown: list[tuple[int, str]] = []
    for line in out.split("\n"):
        number, tab, text = line.partition("\t")
        if tab and number.isdigit():
            shown.append((int(number), text))
        elif shown and not line.startswith("(showing lines") and not line.startswith("(note:"):
            shown.append((shown[-1][0] + 1, line))
    return shown


def test_a_line_that_starts_like_a_number_is_always_numbered(ws: Path) -> None:
    # A TSV row "7<TAB>x" shown bare would read as line 7: it carries its own number instead.
    (ws / "t.tsv").write_text("id\tname\n7\tx\n8\ty\n")
    assert read(ws, file_path="t.tsv") == "1\tid\tname\n2\t7\tx\n3\t8\ty"


def test_last_line_without_newline_and_crlf(ws: Path) -> None:
    (ws / "a.txt").write_bytes(b"one\r\ntwo\r\nthree")
    assert read(ws, file_path="a.txt") == "1\tone\ntwo\nthree"


def test_offset_and_limit_say_the_total_and_how_to_go_on(ws: Path) -> None:
    (ws / "a.txt").write_text("".join(f"line {i}\n" for i in range(1, 11)))
    out = read(ws, file_path="a.txt", offset=3, limit=2)
    assert out.splitlines()[:2] == ["3\tline 3", "line 4"]
    assert "of 10" in out
    assert "offset=5" in out


def test_whole_file_has_no_partial_note(ws: Path) -> None:
    (ws / "a.txt").write_text("x\ny\n")
    assert "showing" not in read(ws, file_path="a.txt")


def test_offset_past_the_end(ws: Path) -> None:
    (ws / "a.txt").write_text("x\ny\n")
    out = Read().run({"file_path": "a.txt", "offset": 9}, ToolContext(workspace=ws))
    assert not out.is_error
    assert "2 lines" in out.content and "past the end" in out.content


def test_a_line_number_is_read_up_to_line_digits_digits_and_refused_past_them(ws: Path) -> None:
    (ws / "a.txt").write_text("x\ny\n")
    longest = "9" * int(LINE_DIGITS.value)
    assert "past the end" in read(ws, file_path=f"a.txt:{longest}")
    with pytest.raises(ToolError, match="names no line"):
        read(ws, file_path=f"a.txt:{longest}9")


def test_empty_file(ws: Path) -> None:
    (ws / "empty.txt").write_text("")
    assert "empty" in read(ws, file_path="empty.txt")


def test_huge_file_reads_only_the_window(ws: Path) -> None:
    n = 300_000
    (ws / "big.txt").write_text("".join(f"row {i}\n" for i in range(1, n + 1)))
    out = read(ws, file_path="big.txt", offset=250_000, limit=3)
    assert numbered_lines(out)[:3] == [
        (250_000, "row 250000"),
        (250_001, "row 250001"),
        (250_002, "row 250002"),
    ]
    assert f"of {n}" in out and "offset=250003" in out


def test_default_limit_is_applied(ws: Path) -> None:
    (ws / "big.txt").write_text("".join(f"{i}\n" for i in range(5000)))
    out = Read(default_limit=100).run({"file_path": "big.txt"}, ToolContext(workspace=ws)).content
    assert out.count("\n") == 100  # 100 lines and one note
    assert "of 5000" in out and "offset=101" in out


def test_sparse_gigabyte_file_is_not_scanned_to_the_end(ws: Path) -> None:
    big = ws / "sparse.log"
    with big.open("wb") as f:
        f.write(b"head 1\nhead 2\n" + b"x" * 10_000 + b"\n")
        f.truncate(1 << 30)  # NUL bytes after the first 8 KiB: not seen by the binary sniff
    out = read(ws, file_path="sparse.log", limit=2)
    assert out.splitlines()[:2] == ["1\thead 1", "head 2"]
    assert "at least" in out


def test_long_lines_are_cut(ws: Path) -> None:
    (ws / "min.js").write_text("a" * 50_000 + "\nnext\n")
    out = read(ws, file_path="min.js")
    first, second = out.splitlines()[:2]
    assert len(first) < MAX_LINE_CHARS + 100 and "line cut" in first
    assert second == "next"


def test_a_multibyte_character_split_by_the_cut_is_not_invalid_utf8(ws: Path) -> None:
    (ws / "wide.txt").write_text("é" * 10_000 + "\n")
    out = read(ws, file_path="wide.txt")
    assert "not valid UTF-8" not in out and "line cut" in out


def test_binary_file_is_an_error(ws: Path) -> None:
    (ws / "img.png").write_bytes(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR" + bytes(range(256)))
    with pytest.raises(ToolError, match="binary file"):
        read(ws, file_path="img.png")


def test_invalid_utf8_is_replaced_with_a_note(ws: Path) -> None:
    (ws / "latin1.txt").write_bytes("caf\xe9 ol\xe9\n".encode("latin-1"))
    out = read(ws, file_path="latin1.txt")
    assert "caf\ufffd ol\ufffd" in out
    assert "not valid UTF-8" in out


def test_max_chars_stops_early_and_says_where_to_continue(ws: Path) -> None:
    (ws / "a.txt").write_text("".join(f"{'x' * 90} {i}\n" for i in range(1, 1001)))
    out = read(ws, max_chars=1000, file_path="a.txt")
    assert len(out) < 3000
    assert "of 1000" in out and "offset=" in out


@pytest.mark.timeout(10)
def test_fifo_is_refused_without_blocking(ws: Path) -> None:
    os.mkfifo(ws / "pipe")
    with pytest.raises(ToolError, match="FIFO"):
        read(ws, file_path="pipe")


def test_socket_is_refused(tmp_path: Path) -> None:
    ws = tmp_path
    path = ws / "s.sock"
    if len(str(path)) > 100:
        pytest.skip("temp path too long for an AF_UNIX socket")
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind(str(path))
        with pytest.raises(ToolError, match="socket"):
            read(ws, file_path="s.sock")
    finally:
        server.close()


@pytest.mark.timeout(10)
def test_device_through_a_symlink_is_refused(ws: Path) -> None:
    (ws / "zero").symlink_to("/dev/zero")
    with pytest.raises(ToolError, match="outside the workspace"):
        read(ws, file_path="zero")


def test_directory_is_refused(ws: Path) -> None:
    (ws / "src").mkdir()
    with pytest.raises(ToolError, match="directory"):
        read(ws, file_path="src")


def test_missing_file_says_how_to_find_it(ws: Path) -> None:
    with pytest.raises(ToolError, match=r"does not exist.*Glob"):
        read(ws, file_path="nope.py")


def test_escaping_symlink_is_refused_and_nothing_is_read(ws: Path) -> None:
    secret = ws.parent / "secret.txt"
    secret.write_text("TOKEN=hunter2\n")
    (ws / "innocent.txt").symlink_to(secret)
    with pytest.raises(ToolError) as err:
        read(ws, file_path="innocent.txt")
    assert "hunter2" not in str(err.value)


# --- LS -------------------------------------------------------------------------------------------


def ls(ws: Path, **args: object) -> str:
    return LS().run(dict(args), ToolContext(workspace=ws)).content


def test_ls_sorted_with_dirs_marked(ws: Path) -> None:
    (ws / "b.txt").write_text("")
    (ws / "a").mkdir()
    (ws / "c.py").write_text("")
    (ws / ".env").write_text("")
    assert ls(ws).splitlines()[1:] == [".env", "a/", "b.txt", "c.py"]


def test_ls_subdir_and_symlinks(ws: Path) -> None:
    (ws / "src").mkdir()
    (ws / "src" / "m.py").write_text("")
    (ws / "src" / "up").symlink_to(ws.parent, target_is_directory=True)
    out = ls(ws, path="src")
    assert out.splitlines()[0].startswith("src/")
    assert "m.py" in out and f"up -> {ws.parent}" in out


def test_ls_caps_entries(ws: Path) -> None:
    for i in range(20):
        (ws / f"f{i:02}").write_text("")
    out = LS(max_entries=5).run({}, ToolContext(workspace=ws)).content
    assert "f04" in out and "f05" not in out
    assert "15 more entries" in out


def test_ls_refuses_files_and_outside(ws: Path) -> None:
    (ws / "a.txt").write_text("")
    with pytest.raises(ToolError, match="not a directory"):
        ls(ws, path="a.txt")
    with pytest.raises(ToolError, match="outside the workspace"):
        ls(ws, path="..")


@pytest.mark.timeout(10)
def test_ls_on_a_fifo_does_not_block(ws: Path) -> None:
    os.mkfifo(ws / "pipe")
    with pytest.raises(ToolError, match="not a directory"):
        ls(ws, path="pipe")


# --- skipping, the byte budget, the deadline --------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(
    lines=st.lists(st.sampled_from(["", "a", "bc", "d\r", "é", "xyz" * 5]), max_size=40),
    last_newline=st.booleans(),
    offset=st.integers(min_value=1, max_value=45),
    limit=st.integers(min_value=1, max_value=5),
    chunk=st.integers(min_value=1, max_value=9),
)
def test_any_window_at_any_chunk_size_shows_the_right_lines(
    tmp_path_factory: pytest.TempPathFactory,
    lines: list[str],
    last_newline: bool,
    offset: int,
    limit: int,
    chunk: int,
) -> None:
    # Tiny chunks put the newline Read looks for at every position of a chunk.
    ws = tmp_path_factory.mktemp("ws")
    text = "\n".join(lines) + ("\n" if last_newline and lines else "")
    (ws / "f.txt").write_bytes(text.encode())
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(read_tool, "_CHUNK", chunk)
        out = read(ws, file_path="f.txt", offset=offset, limit=limit)
    file_lines = text.split("\n")
    if file_lines[-1] == "":
        file_lines.pop()  # a final newline ends the last line, it does not start another
    expected = [
        (n, line.removesuffix(chr(13)))
        for n, line in enumerate(file_lines, 1)
        if offset <= n < offset + limit
    ]
    assert numbered_lines(out) == expected
    if not file_lines:
        assert "empty" in out
    elif offset > len(file_lines):
        assert f"has {len(file_lines)} lines" in out and "past the end" in out
    elif offset > 1 or offset + limit <= len(file_lines):
        assert f"of {len(file_lines)}." in out


def test_an_offset_past_the_byte_budget_is_an_error_naming_the_limit(ws: Path) -> None:
    (ws / "log.txt").write_text("".join(f"{i:09}\n" for i in range(1000)))  # 10 bytes a line
    tool = Read(max_bytes=5000)
    assert (
        "400\t000000399"
        in tool.run({"file_path": "log.txt", "offset": 400, "limit": 1}, ToolContext(ws)).content
    )
    with pytest.raises(LimitExceeded, match=r"read_bytes \(5,000 bytes") as err:
        tool.run({"file_path": "log.txt", "offset": 900}, ToolContext(ws))
    assert err.value.limit.name == "read_bytes"


def test_a_count_that_reaches_the_byte_budget_says_at_least(ws: Path) -> None:
    (ws / "log.txt").write_text("".join(f"{i:09}\n" for i in range(1000)))
    out = Read(max_bytes=5000).run({"file_path": "log.txt", "limit": 2}, ToolContext(ws)).content
    assert numbered_lines(out)[:2] == [(1, "000000000"), (2, "000000001")]
    assert "of at least 50" in out
    exact = Read(max_bytes=10_000).run({"file_path": "log.txt", "limit": 2}, ToolContext(ws)).content
    assert "of 1000." in exact


def test_a_call_past_its_deadline_stops_reading(ws: Path) -> None:
    (ws / "a.txt").write_text("x\n" * 10)
    with pytest.raises(Interrupted) as err:
        Read().run({"file_path": "a.txt"}, ToolContext(ws, deadline=time.monotonic() - 1))
    assert not err.value.cancelled


def test_a_cancelled_call_stops_reading(ws: Path) -> None:
    (ws / "a.txt").write_text("x\n" * 10)
    cancel = threading.Event()
    cancel.set()
    with pytest.raises(Interrupted) as err:
        Read().run({"file_path": "a.txt", "offset": 5}, ToolContext(ws, cancel=cancel))
    assert err.value.cancelled


def test_ls_stops_when_cancelled(ws: Path) -> None:
    cancel = threading.Event()
    cancel.set()
    with pytest.raises(Interrupted):
        LS().run({}, ToolContext(ws, cancel=cancel))


def test_a_missing_file_names_files_of_a_like_name(ws: Path) -> None:
    (ws / "wordfreq").mkdir()
    (ws / "wordfreq" / "stopwords.py").write_text("STOP = {'a'}\n")
    (ws / "wordfreq" / "counter.py").write_text("x = 1\n")
    with pytest.raises(ToolError, match=r"stopwords\.txt does not exist") as missing:
        Read().run({"file_path": "stopwords.txt"}, ToolContext(workspace=ws))
    assert "wordfreq/stopwords.py" in str(missing.value) and "counter.py" not in str(missing.value)
    with pytest.raises(ToolError) as unrelated:
        Read().run({"file_path": "zzz_unrelated.md"}, ToolContext(workspace=ws))
    assert "like name" not in str(unrelated.value) and "Glob" in str(unrelated.value)


def test_an_offset_of_0_is_the_first_line(ws: Path) -> None:
    # Through the registry, which checks the arguments against the schema before Read runs.
    (ws / "a.txt").write_text("one\ntwo\n")
    out = default_registry(ws).execute("Read", {"file_path": "a.txt", "offset": 0})
    assert not out.is_error and out.content == "1\tone\ntwo"


def test_a_whole_python_file_starts_with_what_it_defines(ws: Path) -> None:
    (ws / "m.py").write_text(
        '"""Doc."""\n\n'
        "def a():\n    def inner():\n        pass\n\n\n"
        "async def b():\n    pass\n\n\n"
        "class C:\n    def m(self):\n        pass\n\n    class Inner:\n        pass\n\n\n"
        "class D:\n    x = 1\n\n\n"
        "LIMIT = 3\n"
    )
    out = read(ws, file_path="m.py").split("\n")
    # The top level only, in the file's order: not `inner`, `m` or `Inner`.
    assert out[0] == "(2 functions: a, b; 2 classes: C, D)"
    assert out[1] == '1\t"""Doc."""'
    (ws / "one.pyi").write_text("class Only:\n    def go(self) -> None: ...\n")
    assert read(ws, file_path="one.pyi").split("\n")[0] == "(1 class: Only)"


def test_an_outline_names_a_bounded_number_and_counts_them_all(ws: Path) -> None:
    (ws / "many.py").write_text(
        "".join(f"def f{i}():\n    pass\n\n\n" for i in range(30)) + "class K:\n    pass\n"
    )
    first = read(ws, file_path="many.py").split("\n")[0]
    shown = ", ".join(f"f{i}" for i in range(MAX_NAMES))
    assert first == f"(30 functions: {shown}, …; 1 class: …)"


@pytest.mark.parametrize(
    ("name", "text", "args"),
    [
        ("notes.txt", "def f():\n    pass\n", {}),  # not Python: no outline guessed from the text
        ("settings.py", "PORT = 8037\n", {}),  # nothing defined: nothing to say
        ("broken.py", "def f(:\n    pass\n", {}),  # does not parse
        ("part.py", "def f():\n    pass\n\n\ndef g():\n    pass\n", {"limit": 2}),  # a window of it
        ("late.py", "def f():\n    pass\n\n\ndef g():\n    pass\n", {"offset": 2}),
        ("wide.py", f"X = '{'x' * (MAX_LINE_CHARS + 10)}'\n\ndef f():\n    pass\n", {}),  # a line cut short
        ("bad.py", b"def f():\n    return '\xff'\n", {}),  # not valid UTF-8: shown with U+FFFD
    ],
)
def test_no_outline_unless_the_whole_python_file_is_shown_as_it_is(
    ws: Path, name: str, text: str | bytes, args: dict[str, int]
) -> None:
    path = ws / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    assert "function" not in read(ws, file_path=name, **args)


def test_an_outline_is_quiet_about_the_files_own_warnings(ws: Path) -> None:
    # An invalid escape makes ast.parse warn; where warnings are errors (PYTHONWARNINGS=error) that
    # warning would be a SyntaxError and the outline lost. It is the user's file: not our warning.
    (ws / "esc.py").write_text('PATTERN = "\\d+"\n\n\ndef f():\n    pass\n')
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert read(ws, file_path="esc.py").split("\n")[0] == "(1 function: f)"


@pytest.mark.parametrize(
    "body",
    [
        "(" * 300 + ")" * 300,  # SyntaxError: too many nested parentheses
        "\\\n".join(["-" * 1990] * 100) + "1",  # MemoryError: the parser's stack
        "\\\n".join(["a+" * 990] * 400) + "a",  # RecursionError: building the tree
    ],
)
def test_a_file_too_deep_to_parse_is_shown_without_an_outline(ws: Path, body: str) -> None:
    (ws / "deep.py").write_text(f"X = \\\n{body}\n")
    out = read(ws, file_path="deep.py")
    assert out.startswith("1\tX = ") and "line cut" not in out
