"""Glob and Grep through the real ripgrep of the wheel, against real temp directories."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from aforo.errors import ToolError
from aforo.protocols import ToolContext, ToolOutput
from aforo.tools import Glob, Grep
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


@pytest.mark.timeout(20)
def test_rg_is_killed_at_its_deadline(tmp_path: Path) -> None:
    # rg blocks opening a FIFO named on its command line: a hermetic stand-in for a slow search.
    os.mkfifo(tmp_path / "pipe")
    with RgProcess(["-e", "x", "--", "pipe"], tmp_path, timeout=0.5) as proc:
        assert list(proc.records()) == []
    outcome = proc.finish()
    assert outcome.timed_out and not outcome.failed
