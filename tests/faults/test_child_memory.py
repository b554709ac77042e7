"""A workspace cannot make a child process take the machine's memory (issue 29, D6).

ripgrep compiles every rule of the workspace's ignore files in memory: a 200 000-line .gitignore took
it to 3.8 GB. rg now runs with its address space capped (`child_memory_bytes`); a run the cap ends is a
tool error naming the limit and the ignore file. The tests set a small cap, so none of them takes more.
The map's listing reaches the same cap: the run goes on without the map, said once (issue 39 D2).
"""

from __future__ import annotations

import dataclasses
import functools
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from aforo.events import Warning
from aforo.limits import CHILD_MEMORY_BYTES, MiB
from aforo.loop.cited import Checker
from aforo.navigate import index as index_module
from aforo.navigate.guide import Navigator
from aforo.navigate.index import build_index
from aforo.protocols import ToolContext
from aforo.tools import ripgrep
from aforo.tools.glob_tool import Glob
from aforo.tools.grep_tool import Grep
from aforo.tools.registry import ToolRegistry
from aforo.tools.symbol_cache import SymbolCache
from faults.server import misbehaving_app, openai_chunk, sse
from support.cli import AFORO
from support.live_server import LiveServer

SMALL_CAP = 32 * MiB

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="reads the child's limits in /proc")


@pytest.fixture
def small_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        ripgrep, "CHILD_MEMORY_BYTES", dataclasses.replace(CHILD_MEMORY_BYTES, value=SMALL_CAP)
    )


def workspace(tmp_path: Path, ignore_lines: int) -> Path:
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "src" / "app.py").write_text("def main():\n    return 'needle'\n")
    rules = "".join(f"build/dir{i}/pattern_{i:06d}_*.tmp\n" for i in range(ignore_lines))
    (ws / ".gitignore").write_text(rules)
    return ws


def data_limit(pid: int) -> str:
    for line in Path(f"/proc/{pid}/limits").read_text().splitlines():
        if line.startswith("Max data size"):
            return line.split()[3]
    raise AssertionError("no data size line")


def test_ripgrep_runs_under_the_child_memory_cap(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    # More matching output than a pipe holds, so rg waits for us to read while we look at its limits.
    (ws / "big.txt").write_text("needle\n" * 200_000)
    with ripgrep.RgProcess(["-e", "needle", "--", "."], ws, ToolContext(workspace=ws)) as proc:
        cap = data_limit(proc._proc.pid)
        proc.stop()
    assert cap == str(int(CHILD_MEMORY_BYTES.value)), f"rg ran with a data size limit of {cap}"


@pytest.mark.usefixtures("small_cap")
@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("Grep", {"pattern": "needle"}),
        ("Grep", {"pattern": "needle", "glob": "*.py"}),
        ("Glob", {"pattern": "**/*.py"}),
    ],
)
def test_a_200_000_line_gitignore_ends_at_the_cap_with_an_error_naming_it(
    tmp_path: Path, tool: str, args: dict[str, str]
) -> None:
    ws = workspace(tmp_path, 200_000)
    out = ToolRegistry([Grep(), Glob()], ws).execute(tool, args)
    assert out.is_error, out.content
    assert "ripgrep ran out of memory" in out.content
    assert f"child_memory_bytes ({SMALL_CAP:,} bytes" in out.content
    # The likely cause, named with its size.
    assert "the workspace's .gitignore is 7.0 MiB" in out.content
    assert "Traceback" not in out.content and "internal error" not in out.content


@pytest.mark.usefixtures("small_cap")
@pytest.mark.parametrize(
    ("tool", "args", "found"),
    [
        ("Grep", {"pattern": "needle"}, "src/app.py"),
        ("Grep", {"pattern": "needle", "glob": "*.py"}, "src/app.py"),
        ("Glob", {"pattern": "**/*.py"}, "src/app.py"),
    ],
)
def test_an_ordinary_gitignore_works_within_the_same_cap(
    tmp_path: Path, tool: str, args: dict[str, str], found: str
) -> None:
    # A large project's .gitignore: 300 rules.
    ws = workspace(tmp_path, 300)
    out = ToolRegistry([Grep(), Glob()], ws).execute(tool, args)
    assert not out.is_error, out.content
    assert found in out.content


@pytest.mark.usefixtures("small_cap")
def test_the_map_goes_on_without_a_listing_that_reaches_the_cap(tmp_path: Path) -> None:
    # Issue 39 D2: the cap's error is a LimitExceeded, which the map's builder let through (it caught
    # only tool errors): a traceback on every question.
    ws = workspace(tmp_path, 200_000)
    index = build_index(SymbolCache(ws))
    assert index.files == {}
    assert index.unlisted is not None
    assert "ripgrep ran out of memory" in index.unlisted and "child_memory_bytes" in index.unlisted


@pytest.mark.usefixtures("small_cap")
def test_the_guide_says_once_that_the_map_and_the_pre_search_are_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = workspace(tmp_path, 200_000)
    listings: list[Path] = []

    def counted(cwd: Path, ctx: ToolContext, paths: tuple[str, ...] = ()) -> set[str]:
        listings.append(cwd)
        return ripgrep.list_files(cwd, ctx, paths)

    monkeypatch.setattr(index_module, "list_files", counted)
    navigator = Navigator(ws, 32768, cache=False)
    first = navigator.guide("where is main defined?", (), ())
    second = navigator.guide("and what does it return?", (), ())
    (warning,) = first.events
    assert isinstance(warning, Warning)
    assert "repository map and the pre-search are off" in warning.message
    assert ".gitignore is 7.0 MiB" in warning.message
    assert first.messages == () and second.messages == () and second.events == ()
    assert len(listings) == 1  # not listed again for the next question: it would meet the same cap


@pytest.mark.usefixtures("small_cap")
def test_an_answers_citations_are_checked_without_a_listing_that_reaches_the_cap(tmp_path: Path) -> None:
    # The check of an answer's citations lists the workspace too: past the cap, it caught only tool
    # errors, and "It is in src/app.py:1." ended the run in a traceback. The cited path itself counts.
    ws = workspace(tmp_path, 200_000)
    verdicts = Checker(ws)("`main` is defined in src/app.py:1.")
    assert verdicts and all(v.held for v in verdicts), verdicts


def test_a_question_in_a_workspace_with_a_200_000_line_gitignore_is_answered(tmp_path: Path) -> None:
    # The user's case end to end: aforo itself runs under a data limit below child_memory_bytes, which
    # its rg then gets (a child cannot raise its hard limit).
    ws = workspace(tmp_path, 200_000)
    cap = 200 * MiB
    app = misbehaving_app(lambda n: sse([openai_chunk("It is in src/app.py."), openai_chunk(finish="stop")]))
    with LiveServer(app) as server:
        args = [
            "-w",
            str(ws),
            "--base-url",
            f"{server.url}/v1",
            "--server",
            "openai",
            "-m",
            "m",
            "--context-window",
            "8192",
        ]
        run = subprocess.run(
            [AFORO, *args, "where is main defined?"],
            capture_output=True,
            text=True,
            timeout=120,
            env=os.environ.copy(),
            preexec_fn=functools.partial(resource.setrlimit, resource.RLIMIT_DATA, (cap, cap)),
        )
    assert run.returncode == 0, run.stderr
    assert "Traceback" not in run.stderr
    assert len(app.state.bodies) == 1
    assert "It is in src/app.py." in run.stdout
    assert run.stderr.count("The repository map and the pre-search are off") == 1
    assert "ripgrep ran out of memory" in run.stderr
