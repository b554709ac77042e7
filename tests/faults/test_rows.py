"""The rows of issue 13's table whose depth is tested elsewhere (hypothesis properties, every tool's
edge), each exercised here once as the issue describes it: a hostile answer through the real CLI, the
tools through the registry the agent calls them through, with its deadline.

- redaction of 80 KB of `/` and of `sk-` x 26 667 (34-44 s each; a 100 KB answer stalled a run 80 s):
  depth in tests/test_redact_adversarial.py, speed by size in bench/redaction.py;
- an answer of 1000 `[` or of nested `{"name":…,"arguments":` (a RecursionError): tests/test_textcalls.py,
  bench/textcalls.py;
- Read at offset 29 999 990 of a 60 MB file (22 s, no deadline): tests/test_tools_read.py;
- Grep over a tree with an unreadable file and no match (the call failed), Glob with a 200k-line
  .gitignore (two 30 s ripgrep timers in sequence): tests/test_tools_search.py;
- file names with newlines in LS and Glob (two entries): tests/test_tools_names.py.
"""

from __future__ import annotations

import dataclasses
import json
import random
import time
from pathlib import Path

import pytest
from starlette.responses import Response

from aforo.limits import CHILD_MEMORY_BYTES, TOOL_SECONDS, MiB
from aforo.tools import LS, Glob, Grep, Read, ripgrep
from aforo.tools.registry import ToolRegistry
from faults.server import ok_sse
from faults.test_cli_faults import aforo, said
from test_tools_names import NAMES, ws
from test_tools_search import unreadable

__all__ = ["aforo", "unreadable", "ws"]  # fixtures of the suites the rows come from

SK_RUN = "sk-" * 26_667  # the 80 KB
SLASH_RUN = "/" * 80_000


def session_texts(home: Path, role: str = "assistant") -> list[str]:
    """Every text of `role` of every session saved under `home`."""
    texts = []
    for path in (home / "sessions").glob("*.json"):
        for message in json.loads(path.read_text())["messages"]:
            if message["role"] == role:
                texts += [b["text"] for b in message["content"] if b.get("type") == "text"]
    return texts


# --- what the model answers -------------------------------------------------------------------------


@pytest.mark.timeout(60)  # a hang guard: each of the two runs took 34-44 s to redact before
@pytest.mark.parametrize("hostile", [SLASH_RUN, SK_RUN], ids=["slashes", "sk- prefixes"])
def test_80_kb_of_slashes_and_of_sk_prefixes_are_saved_whole(
    aforo: object, aforo_home: Path, hostile: str
) -> None:
    # As an answer the loop stop ends them now (one character or three, repeated: issue 41), so the
    # 80 KB reach the session as the question, which is saved (and redacted) the same way.
    window = ("--context-window", "65536")  # 80 KB is some 20 000 tokens
    run = aforo(lambda n: ok_sse("Nothing to add."), *window, prompt=hostile)  # type: ignore[operator]
    assert run.code == 0, said(run)
    assert hostile in session_texts(aforo_home, "user")  # no secret in it: redaction keeps every character


# Spaces that vary at random between the levels: the same level again and again is a loop, which the
# loop stop would end before the parser saw the thousandth.
_SPACES = random.Random(13)
NESTED = "".join('{"name": "Read", "arguments":' + " " * _SPACES.randint(1, 8) for _ in range(1000))
CLOSED = "".join("}" + " " * _SPACES.randint(0, 8) for _ in range(1000))


@pytest.mark.parametrize(
    "answer", ["[" * 1000, NESTED + "{}" + CLOSED], ids=["1000 brackets", "1000 nested calls"]
)
def test_an_answer_the_text_call_parser_once_recursed_on_ends_the_run_normally(
    aforo: object, aforo_home: Path, answer: str
) -> None:
    def behave(n: int) -> Response:
        return ok_sse(answer if n == 1 else "done")

    run = aforo(behave)  # type: ignore[operator]
    assert run.code == 0, said(run)
    texts = session_texts(aforo_home)
    # The brackets say nothing (only punctuation): not an answer, so the model is asked again; of the
    # nested calls, the outermost one within json_depth is read as a Read call with arguments it does
    # not take (an error result), and the model goes on. Either way the parser survived to "done".
    assert "done" in texts
    assert "[" * 1000 not in texts


# --- the tools, as the agent calls them ---------------------------------------------------------------


def test_read_at_offset_29_999_990_of_a_60_mb_file_answers_within_its_deadline(tmp_path: Path) -> None:
    with (tmp_path / "big.log").open("wb") as fh:
        for _ in range(30):
            fh.write(b"x\n" * 1_000_000)  # 60 MB, 30 000 000 lines
    args = {"file_path": "big.log", "offset": 29_999_990}
    out = ToolRegistry([Read()], tmp_path).execute("Read", args)
    assert not out.is_error, out.content
    assert out.content.startswith("29999990\tx\n") and "30000000\tx" in out.content
    assert "of 30000000." in out.content
    cut = ToolRegistry([Read()], tmp_path, seconds=0.002).execute("Read", args)
    assert cut.is_error and f"{TOOL_SECONDS.name} (0.002 seconds" in cut.content


def test_grep_with_an_unreadable_file_and_no_match_answers_no_matches(unreadable: Path) -> None:
    out = ToolRegistry([Grep()], unreadable).execute("Grep", {"pattern": "haystack"})
    assert not out.is_error, out.content
    assert out.content.startswith("No matches for 'haystack'")
    assert "src/secret.py: Permission denied" in out.content


def test_glob_with_a_200k_line_gitignore_ends_at_one_deadline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # ripgrep grows by about 140 MB a second over these rules: capped at 256 MiB (child_memory_bytes,
    # lower here than aforo's), however late a busy machine kills it (591 MB once, uncapped), it may
    # end by that cap first on a fast machine; either way once, within the one deadline.
    monkeypatch.setattr(
        ripgrep, "CHILD_MEMORY_BYTES", dataclasses.replace(CHILD_MEMORY_BYTES, value=256 * MiB)
    )
    (tmp_path / ".gitignore").write_text("".join(f"dir{i}/sub{i}/*.tmp{i}\n" for i in range(200_000)))
    (tmp_path / "a.py").write_text("")
    started = time.monotonic()
    out = ToolRegistry([Glob()], tmp_path, seconds=1.5).execute("Glob", {"pattern": "*.py"})
    took = time.monotonic() - started
    ended = [
        name for name in (f"{TOOL_SECONDS.name} (1.5 seconds", CHILD_MEMORY_BYTES.name) if name in out.content
    ]
    assert out.is_error and len(ended) == 1, out.content
    assert took < 2.9  # one deadline for the call; Glob's two ripgrep runs in sequence took two


@pytest.mark.parametrize("tool", ["LS", "Glob"])
def test_a_file_name_with_a_newline_is_one_entry(ws: Path, tool: str) -> None:
    registry = ToolRegistry([LS(), Glob()], ws)
    out = registry.execute(tool, {} if tool == "LS" else {"pattern": "*"})
    lines = out.content.splitlines()
    assert "a\\nb.txt" in lines and "a" not in lines and "b.txt" not in lines
    assert len([line for line in lines if line in NAMES.values()]) == len(NAMES)
