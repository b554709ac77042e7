"""AGENTS.md is read like a tool reads a file: confined to the workspace and bounded before reading."""

from __future__ import annotations

import os
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from aforo.limits import AGENTS_MD_BYTES
from aforo.loop.prompt import load_instructions, overview, system_prompt
from dialects.openai_app import Reply, make_openai_app
from support.cli import run_cli
from support.live_server import LiveServer


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (tmp_path / "credentials").write_text("[default]\naws_secret_access_key = OUTSIDE-SECRET\n")
    return root


def test_agents_md_keeps_its_wrapping(ws: Path) -> None:
    (ws / "AGENTS.md").write_text("Always answer in Spanish.\n")
    prompt = system_prompt(ws)
    assert [part.name for part in prompt.parts] == ["system prompt", "workspace files", "AGENTS.md"]
    assert prompt.parts[2].text == (
        '# Project instructions\n<project_instructions path="AGENTS.md">\n'
        "Always answer in Spanish.\n</project_instructions>"
    )
    assert prompt.warnings == ()


def test_no_agents_md_is_no_part_and_no_warning(ws: Path) -> None:
    prompt = system_prompt(ws)  # an empty workspace: no files to list either
    assert [part.name for part in prompt.parts] == ["system prompt"] and prompt.warnings == ()


def test_the_workspace_files_are_listed_and_ignored_files_are_not(ws: Path) -> None:
    (ws / "src" / "app").mkdir(parents=True)
    for name in ("src/app/main.py", "src/app/util.py", "README.md", "build/out.bin", "esc\x1b[2J.txt"):
        (ws / name).parent.mkdir(parents=True, exist_ok=True)
        (ws / name).write_text("x\n")
    (ws / ".gitignore").write_text("build/\n")
    (ws / ".git").mkdir()  # ripgrep honours .gitignore in a git checkout
    listing = next(p.text for p in system_prompt(ws).parts if p.name == "workspace files")
    # Whole paths (a small model drops a directory given apart: `config.py` for app/config.py); a name
    # from the workspace is escaped, never raw on a terminal.
    assert (
        listing
        == "The workspace's files:\n.gitignore README.md esc\\x1b[2J.txt src/app/main.py src/app/util.py"
    )


def test_a_workspace_too_large_to_list_is_shown_by_its_top_level_entries() -> None:
    files = [f"src/m{i:03d}.py" for i in range(200)] + ["tests/test_a.py", "setup.py"]
    assert (
        overview(files, max_chars=600) == "The workspace's files:\nsetup.py src/ (200 files) tests/ (1 file)"
    )
    assert overview(files[:2], max_chars=600) == "The workspace's files:\nsrc/m000.py src/m001.py"
    assert overview([f"d{i}/x.py" for i in range(500)], max_chars=600) is None  # not even the top fits


@pytest.mark.parametrize("target", ["/etc/passwd", "../credentials"])
def test_a_symlink_out_of_the_workspace_is_ignored_with_a_warning(ws: Path, target: str) -> None:
    (ws / "AGENTS.md").symlink_to(target)
    prompt = system_prompt(ws)
    assert [part.name for part in prompt.parts] == ["system prompt"]
    assert "root:" not in prompt.parts[0].text and "OUTSIDE-SECRET" not in prompt.parts[0].text
    [warning] = prompt.warnings
    assert "AGENTS.md" in warning and "outside the workspace" in warning


def test_a_symlink_to_a_file_inside_is_followed(ws: Path) -> None:
    (ws / "docs").mkdir()
    (ws / "docs" / "agents.md").write_text("Use tabs.\n")
    (ws / "AGENTS.md").symlink_to("docs/agents.md")
    instructions = load_instructions(ws)
    assert instructions.text is not None and "Use tabs." in instructions.text
    assert instructions.warning is None


@pytest.mark.timeout(10)
def test_a_fifo_is_refused_without_blocking(ws: Path) -> None:
    os.mkfifo(ws / "AGENTS.md")
    instructions = load_instructions(ws)
    assert instructions.text is None
    assert instructions.warning is not None and "FIFO" in instructions.warning


def test_a_huge_agents_md_is_cut_without_being_read_whole(ws: Path) -> None:
    with (ws / "AGENTS.md").open("wb") as f:
        f.write(b"Use tabs.\n" + b"x" * 100)
        f.truncate(64 << 20)  # sparse: 64 MiB on paper, nothing on disk
    tracemalloc.start()
    try:
        instructions = load_instructions(ws)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20
    assert instructions.text is not None and "Use tabs." in instructions.text
    assert "AGENTS.md cut" in instructions.text
    assert instructions.warning is not None and AGENTS_MD_BYTES.name in instructions.warning


def test_the_cut_is_at_the_limit_and_splits_no_character(ws: Path) -> None:
    (ws / "AGENTS.md").write_text("é" * 100)  # 200 bytes
    instructions = load_instructions(ws, max_bytes=51)
    assert instructions.text is not None
    body = instructions.text.split("\n")[2]
    assert body == "é" * 25  # 50 bytes: the 51st is half a character, dropped rather than shown as U+FFFD
    assert load_instructions(ws, max_bytes=200).warning is None


def test_the_cli_warns_and_sends_nothing_from_outside(ws: Path) -> None:
    (ws / "AGENTS.md").symlink_to("../credentials")
    seen: list[dict[str, Any]] = []

    def answer(body: dict[str, Any]) -> Reply:
        seen.append(body)
        return Reply(text="ok", prompt_tokens=500)

    with LiveServer(make_openai_app(answer)) as server:
        run = run_cli("-w", str(ws), "--base-url", server.url, "-m", "test-model", "hi")
    assert run.code == 0, run.err
    assert "OUTSIDE-SECRET" not in str(seen)
    assert "AGENTS.md was not used" in run.err


def test_the_base_prompt_asks_for_no_more_than_the_question_needs_and_only_what_the_lines_show(
    ws: Path,
) -> None:
    # With the reply format's answer line, this ended `make demo`'s padding on the 1.5B (issue 37).
    text = system_prompt(ws).parts[0].text
    assert "Answer in as few sentences as the question needs" in " ".join(text.split())
    assert "say only what the lines you read show" in text
    assert "stop once the question is answered" in text
