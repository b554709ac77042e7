"""What aforo reads: the workspace only, whoever asks (the model through a tool, or aforo itself for
AGENTS.md), each read bounded before it is made (issue 12, breach 2, and the "files read" promise)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from aforo.limits import AGENTS_MD_BYTES, TOKENIZER_BYTES
from dialects.openai_app import Call, Reply, make_openai_app
from support.cli import run_cli
from support.live_server import LiveServer

SECRET = "aws_secret_access_key = OUTSIDE-THE-WORKSPACE-0123456789"


def setup(tmp_path: Path) -> tuple[Path, Path]:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "app.py").write_text("print('hi')\n")
    outside = tmp_path / "credentials"
    outside.write_text(SECRET + "\n")
    return ws, outside


def sent(bodies: list[dict[str, Any]]) -> str:
    return json.dumps(bodies)


def test_the_model_cannot_read_outside_the_workspace(tmp_path: Path) -> None:
    ws, outside = setup(tmp_path)
    (ws / "link").symlink_to(outside)
    bodies: list[dict[str, Any]] = []
    paths = ["../credentials", str(outside), "link", "~/../" + str(outside)]

    def model(body: dict[str, Any]) -> Reply:
        bodies.append(body)
        # Two paths a step: four reads at the tool cap do not all fit a 4096 window's room for results,
        # and a read that does not fit is deferred, not run, which would leave its path untested.
        step = paths[2 * (len(bodies) - 1) : 2 * len(bodies)]
        if step:
            return Reply(
                calls=[Call("Read", json.dumps({"file_path": p})) for p in step],
                prompt_tokens=300 * len(bodies),
            )
        return Reply(text="done", prompt_tokens=300 * len(bodies))

    with LiveServer(make_openai_app(model)) as server:
        run = run_cli("-w", str(ws), "--base-url", server.url, "-m", "test-model", "--json", "read them")
    assert run.code == 0, run.out
    ends = [e for e in run.events() if e["type"] == "tool_end"]
    assert len(ends) == len(paths) and not any(e["ok"] for e in ends)
    assert "OUTSIDE-THE-WORKSPACE" not in sent(bodies)


def test_agents_md_that_leads_out_of_the_workspace_is_not_sent(tmp_path: Path) -> None:
    """The breach: `ln -s ~/.aws/credentials AGENTS.md` put the target in every system prompt."""
    ws, outside = setup(tmp_path)
    (ws / "AGENTS.md").symlink_to(outside)
    bodies: list[dict[str, Any]] = []
    with LiveServer(
        make_openai_app(lambda b: bodies.append(b) or Reply(text="ok", prompt_tokens=300))
    ) as server:
        run = run_cli("-w", str(ws), "--base-url", server.url, "-m", "test-model", "hi")
    assert run.code == 0, run.err
    assert bodies and "OUTSIDE-THE-WORKSPACE" not in sent(bodies)
    assert "AGENTS.md was not used" in run.err


def test_a_huge_agents_md_is_bounded_before_it_is_read(tmp_path: Path) -> None:
    ws, _ = setup(tmp_path)
    with (ws / "AGENTS.md").open("wb") as fh:
        fh.write(b"Be brief. " * 4000)
        fh.truncate(2 * 1024**3)  # 2 GiB on paper (sparse): reading it whole would take that much memory
    bodies: list[dict[str, Any]] = []
    with LiveServer(
        make_openai_app(lambda b: bodies.append(b) or Reply(text="ok", prompt_tokens=4600))
    ) as server:
        run = run_cli(
            "-w", str(ws), "--base-url", server.url, "-m", "test-model", "--context-window", "32768", "hi",
            timeout=30,
        )  # fmt: skip
    assert run.code == 0, run.err
    system = bodies[0]["messages"][0]["content"]
    assert system.count("Be brief.") <= int(AGENTS_MD_BYTES.value) // len("Be brief. ") + 1
    assert AGENTS_MD_BYTES.name in run.err


def test_a_huge_tokenizer_the_project_file_names_is_refused_before_it_is_read(tmp_path: Path) -> None:
    """The breach: `tokenizer = "tok.json"` in the workspace, a 400 MB sparse file: read whole (466 MB of
    memory) before the tokenizers library found it was no tokenizer."""
    ws, _ = setup(tmp_path)
    (ws / ".aforo.toml").write_text('tokenizer = "tok.json"\n')
    with (ws / "tok.json").open("wb") as fh:
        fh.write(b'{"version": "1.0", "model": {"type": "WordLevel", "vocab": {')
        fh.truncate(400 * 1024**2)
    bodies: list[dict[str, Any]] = []
    with LiveServer(
        make_openai_app(lambda b: bodies.append(b) or Reply(text="ok", prompt_tokens=300))
    ) as server:
        run = run_cli("-w", str(ws), "--base-url", server.url, "-m", "test-model", "hi", timeout=30)
    assert run.code == 2, run.err
    assert TOKENIZER_BYTES.name in run.err and "tok.json is 419,430,400 bytes" in run.err
    assert "Traceback" not in run.err and bodies == []
