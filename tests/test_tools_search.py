"""Glob and Grep through the real ripgrep of the wheel, against real temp directories."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from aforo.errors import ToolError
from aforo.protocols import ToolContext, ToolOutput
from aforo.tools import Glob, Grep, ToolRegistry, ripgrep
from aforo.tools.deadline import Interrupted
from aforo.tools.ripgrep import RgProcess, rg_binary


@pytest.fixture(params=["no-git", "git"])
def ws(tmp_path: Path, request: pytest.FixtureRequest) -> Path:
    """A project with ignored files, with and without a .git directory."""
    root = tmp_path / "ws"
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "build").mkdir()
    if request.param == "git":
        (root / ".git").mkdir()
        (root / ".git" / "config.py").write_text("needle = 'in .git'\n")
    (root / ".gitignore").write_text("build/\nsecret_*.py\n")
    files = {
        "src/app.py": "def main():\n    return needle()\n",
        "src/pkg/util.py": "def needle():\n    return 1\n",
        "src/secret_keys.py": "needle = 'ignored by .gitignore'\n",
        "build/out.py": "needle = 'ignored dir'\n",
        "README.md": "The needle is documented here.\n",
    }
    for i, (name, text) in enumerate(files.items()):
        path = root / name
        path.write_text(text)
        os.utime(path, (1_000_000 + i, 1_000_000 + i))  # README newest, app oldest
    return root


def glob(ws: Path, **args: object) -> ToolOutput:
    return Glob().run(dict(args), ToolContext(workspace=ws))


def grep(ws: Path, **args: object) -> ToolOutput:
    return Grep().run(dict(args), ToolContext(workspace=ws))


def test_rg_comes_from_the_wheel() -> None:
    assert Path(rg_binary()).parent == Path(sys.executable).parent


def test_missing_rg_is_a_clear_tool_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python"))
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ToolError, match="ripgrep"):
        rg_binary()


# --- Glob -----------------------------------------------------------------------------------------


def test_glob_respects_gitignore_newest_first(ws: Path) -> None:
    out = glob(ws, pattern="*.py")
    assert out.content.splitlines() == ["src/pkg/util.py", "src/app.py"]


def test_glob_with_path_is_relative_to_it_but_prints_workspace_paths(ws: Path) -> None:
    assert glob(ws, pattern="pkg/*.py", path="src").content == "src/pkg/util.py"


def test_glob_no_match(ws: Path) -> None:
    out = glob(ws, pattern="*.rs")
    assert not out.is_error and "No files match" in out.content


def test_glob_lists_ignored_dir_only_never(ws: Path) -> None:
    assert "build" not in glob(ws, pattern="**").content
    assert ".git/" not in glob(ws, pattern="**").content


def test_glob_caps_with_a_note(tmp_path: Path) -> None:
    for i in range(12):
        (tmp_path / f"f{i}.txt").write_text("")
    out = Glob(max_entries=5).run({"pattern": "*.txt"}, ToolContext(workspace=tmp_path)).content
    assert len(out.splitlines()) == 6
    assert "7 more files" in out


def test_glob_does_not_follow_symlinks_out(ws: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "leak.py").write_text("needle\n")
    (ws / "src" / "link").symlink_to(outside, target_is_directory=True)
    assert "leak" not in glob(ws, pattern="*.py").content


def test_glob_path_outside_is_refused(ws: Path) -> None:
    with pytest.raises(ToolError, match="outside the workspace"):
        glob(ws, pattern="*", path="..")


def test_glob_pattern_starting_with_dash(ws: Path) -> None:
    (ws / "-rf.txt").write_text("")
    assert glob(ws, pattern="-rf*").content == "-rf.txt"


# --- Grep -----------------------------------------------------------------------------------------


def test_grep_content_respects_gitignore(ws: Path) -> None:
    out = grep(ws, pattern="needle")
    assert out.content.splitlines() == [
        "README.md:1:The needle is documented here.",
        "src/app.py:2:    return needle()",
        "src/pkg/util.py:1:def needle():",
    ]


def test_grep_glob_does_not_unignore_files(ws: Path) -> None:
    # rg's own --glob overrides .gitignore; the tool must not.
    out = grep(ws, pattern="needle", glob="*.py", output_mode="files_with_matches")
    assert out.content.splitlines() == ["src/app.py", "src/pkg/util.py"]


def test_grep_modes(ws: Path) -> None:
    files = grep(ws, pattern="needle", path="src", output_mode="files_with_matches").content
    assert files.splitlines() == ["src/app.py", "src/pkg/util.py"]
    count = grep(ws, pattern="e", path="src/pkg", output_mode="count").content
    assert count.splitlines() == ["src/pkg/util.py:2", "(2 matches in 1 files)"]


def test_grep_gives_its_facts_in_each_mode(ws: Path) -> None:
    # The line that stays in the conversation when the result's body is cleared.
    assert grep(ws, pattern="needle").facts == "Grep 'needle' in .: 3 matching lines"
    files = grep(ws, pattern="needle", path="src", output_mode="files_with_matches")
    assert files.facts == "Grep 'needle' in src: 2 files match"
    count = grep(ws, pattern="e", path="src/pkg", output_mode="count")
    assert count.facts == "Grep 'e' in src/pkg: 2 matches in 1 files"
    near = grep(ws, pattern="NEEDLE", path="src/app.py", ignore_case=True, context=1)
    assert near.facts == "Grep 'NEEDLE' in src/app.py: 2 lines, matches and context"


def test_grep_single_file_ignore_case_and_context(ws: Path) -> None:
    out = grep(ws, pattern="NEEDLE", path="src/app.py", ignore_case=True, context=1).content
    assert out.splitlines() == ["src/app.py-1-def main():", "src/app.py:2:    return needle()"]


def test_grep_context_separators(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("hit\na\nb\nc\nd\nhit\n")
    out = grep(tmp_path, pattern="hit", context=1).content
    assert out.splitlines() == ["f.txt:1:hit", "f.txt-2-a", "--", "f.txt-5-d", "f.txt:6:hit"]


def test_grep_max_results_with_a_note(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("hit\n" * 50)
    out = Grep().run({"pattern": "hit", "max_results": 10}, ToolContext(workspace=tmp_path)).content
    assert len([line for line in out.splitlines() if line.startswith("f.txt:")]) == 10
    assert "40 more lines" in out


def test_grep_invalid_regex_is_an_error_with_rgs_message(ws: Path) -> None:
    with pytest.raises(ToolError, match="regex parse error"):
        grep(ws, pattern="needle(")


def test_grep_pattern_starting_with_dash_is_a_pattern(tmp_path: Path) -> None:
    (tmp_path / "opts.txt").write_text("use -v for verbose\n--files is a flag\n")
    assert grep(tmp_path, pattern="-v").content == "opts.txt:1:use -v for verbose"
    assert grep(tmp_path, pattern="--files").content == "opts.txt:2:--files is a flag"


def test_grep_no_match_is_not_an_error(ws: Path) -> None:
    out = grep(ws, pattern="haystack")
    assert not out.is_error and "No matches" in out.content


def test_grep_does_not_follow_symlinks_out(ws: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "leak.txt").write_text("needle SECRET\n")
    (ws / "link").symlink_to(outside, target_is_directory=True)
    (ws / "leak.txt").symlink_to(outside / "leak.txt")
    assert "SECRET" not in grep(ws, pattern="needle").content
    with pytest.raises(ToolError, match="symlink"):
        grep(ws, pattern="needle", path="link")


@pytest.mark.timeout(15)
def test_grep_skips_fifos_in_a_tree_and_refuses_one_by_name(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("needle\n")
    os.mkfifo(tmp_path / "pipe")
    assert grep(tmp_path, pattern="needle").content == "a.txt:1:needle"
    with pytest.raises(ToolError, match="not a regular file"):
        grep(tmp_path, pattern="needle", path="pipe")


def test_grep_missing_path(ws: Path) -> None:
    with pytest.raises(ToolError, match="does not exist"):
        grep(ws, pattern="x", path="nope")


def test_grep_max_chars_keeps_output_small(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text(("hit " + "x" * 100 + "\n") * 1000)
    out = Grep().run({"pattern": "hit", "max_results": 1000}, ToolContext(workspace=tmp_path, max_chars=500))
    assert len(out.content) < 2000
    assert "more lines not shown" in out.content


def test_grep_long_lines_are_shortened_by_rg(tmp_path: Path) -> None:
    (tmp_path / "min.js").write_text("needle" + "x" * 100_000 + "\n")
    assert len(grep(tmp_path, pattern="needle").content) < 2000


# --- the call's deadline and cancel -----------------------------------------------------------------


@pytest.mark.timeout(20)
def test_rg_is_killed_at_the_calls_deadline(tmp_path: Path) -> None:
    # rg blocks opening a FIFO named on its command line: a hermetic stand-in for a slow search.
    os.mkfifo(tmp_path / "pipe")
    ctx = ToolContext(tmp_path, deadline=time.monotonic() + 0.3)
    with pytest.raises(Interrupted) as err, RgProcess(["-e", "x", "--", "./pipe"], tmp_path, ctx) as proc:
        assert list(proc.records()) == []
    assert not err.value.cancelled


@pytest.mark.timeout(20)
def test_rg_is_killed_when_the_call_is_cancelled(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    cancel = threading.Event()
    threading.Timer(0.2, cancel.set).start()
    with (
        pytest.raises(Interrupted) as err,
        RgProcess(["-e", "x", "--", "./pipe"], tmp_path, ToolContext(tmp_path, cancel=cancel)) as proc,
    ):
        assert list(proc.records()) == []
    assert err.value.cancelled


@pytest.mark.parametrize("tool", ["Glob", "Grep"])
def test_a_call_already_stopped_starts_no_search(tmp_path: Path, tool: str) -> None:
    (tmp_path / "a.py").write_text("needle\n")
    cancel = threading.Event()
    cancel.set()
    run = Glob().run if tool == "Glob" else Grep().run
    with pytest.raises(Interrupted):
        run({"pattern": "*.py" if tool == "Glob" else "needle"}, ToolContext(tmp_path, cancel=cancel))


@pytest.mark.timeout(30)
def test_glob_with_a_huge_gitignore_gets_one_deadline_for_both_searches(tmp_path: Path) -> None:
    # Building rg's matcher for 20 000 ignore globs takes seconds, and Glob runs rg twice: both runs
    # share the call's one deadline, so the call ends at it with an error naming the limit.
    (tmp_path / ".gitignore").write_text("".join(f"dir{i}/sub{i}/*.tmp{i}\n" for i in range(20_000)))
    (tmp_path / "a.py").write_text("")
    out = ToolRegistry([Glob()], tmp_path, seconds=0.2).execute("Glob", {"pattern": "*.py"})
    assert out.is_error
    assert "tool_seconds (0.2 seconds" in out.content


# --- files rg cannot read ---------------------------------------------------------------------------


@pytest.fixture
def unreadable(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A workspace with one file and one directory (chmod 000) that the rg of the tools cannot read."""
    base = Path(tempfile.mkdtemp(prefix="aforo-unreadable-"))
    try:
        if os.geteuid() == 0:
            # Root reads a chmod-000 file: run rg as nobody instead, through a wrapper that drops
            # privileges, so rg meets the permission error a user would.
            setpriv = shutil.which("setpriv")
            if setpriv is None:
                pytest.skip("running as root without setpriv: cannot make a file unreadable for rg")
            base.chmod(0o755)
            # rg stats its own binary to sort by time: nobody must reach it, and a checkout may sit in a
            # directory only root can enter (`mktemp -d`), so it runs from a copy here.
            rg = base / "rg"
            try:
                os.link(rg_binary(), rg)
            except OSError:
                shutil.copy2(rg_binary(), rg)
            wrapper = base / "rg-as-nobody"
            nobody = f"{setpriv} --reuid=65534 --regid=65534 --clear-groups"
            wrapper.write_text(f'#!/bin/sh\nexec {nobody} {rg} "$@"\n')
            wrapper.chmod(0o755)
            monkeypatch.setattr(ripgrep, "rg_binary", lambda: str(wrapper))
        ws = base / "ws"
        (ws / "src").mkdir(parents=True)
        (ws / "locked").mkdir()
        for path in (ws, ws / "src"):
            path.chmod(0o755)
        (ws / "src" / "app.py").write_text("def main():\n    return 1\n")
        (ws / "src" / "secret.py").write_text("needle = 1\n")
        (ws / "src" / "secret.py").chmod(0)
        (ws / "locked" / "hidden.py").write_text("needle = 2\n")
        (ws / "locked").chmod(0)
        yield ws
    finally:
        for path in base.rglob("*"):
            if path.is_dir() and not path.is_symlink():
                path.chmod(0o755)
        shutil.rmtree(base)


def test_grep_with_no_match_and_an_unreadable_file_answers_no_matches(unreadable: Path) -> None:
    out = grep(unreadable, pattern="haystack")
    assert not out.is_error
    assert out.content.startswith("No matches for 'haystack'")
    assert "src/secret.py: Permission denied" in out.content
    assert "locked: Permission denied" in out.content


def test_grep_shows_matches_and_names_what_it_could_not_read(unreadable: Path) -> None:
    out = grep(unreadable, pattern="return", path="src")
    assert out.content.splitlines()[0] == "src/app.py:2:    return 1"
    assert "src/secret.py: Permission denied" in out.content


def test_grep_of_one_unreadable_file_is_not_a_failure(unreadable: Path) -> None:
    out = grep(unreadable, pattern="needle", path="src/secret.py")
    assert not out.is_error and "No matches" in out.content and "secret.py: Permission denied" in out.content


def test_glob_lists_what_it_can_and_names_an_unreadable_directory(unreadable: Path) -> None:
    out = glob(unreadable, pattern="*.py")
    lines = out.content.splitlines()
    assert set(lines[:2]) == {"src/app.py", "src/secret.py"}
    assert "locked: Permission denied" in lines[2]


def test_a_bad_regex_still_fails_the_whole_call(unreadable: Path) -> None:
    with pytest.raises(ToolError, match="regex parse error"):
        grep(unreadable, pattern="needle(")
