"""The map and the pre-search wired into a run: the real `aforo` console script against a real
OpenAI-compatible server on 127.0.0.1, whose request bodies show what the model was sent."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from dialects.openai_app import Reply, make_openai_app
from support.cli import run_cli
from support.live_server import LiveServer


class Recorder:
    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []

    def __call__(self, body: dict[str, Any]) -> Reply:
        self.bodies.append(body)
        return Reply(
            text="group is defined in pkg/decorators.py at line 263.",
            prompt_tokens=len(json.dumps(body)) // 4,
        )


def workspace(root: Path) -> Path:
    pkg = root / "pkg"
    pkg.mkdir(parents=True)
    filler = "".join(f"def helper_{n}():\n    return {n}\n" for n in range(131))
    (pkg / "decorators.py").write_text(filler + "def group(name=None):\n    return name\n")
    for n in range(60):  # more files than the system prompt's list holds
        (pkg / f"feature_module_number_{n:03}.py").write_text(f"def feature_{n}():\n    return {n}\n")
    return root


def test_a_run_sends_the_map_and_the_pre_search(tmp_path: Path) -> None:
    ws = workspace(tmp_path / "ws")
    model = Recorder()
    with LiveServer(make_openai_app(model)) as server:
        flags = ("-w", str(ws), "--base-url", server.url, "-m", "test-model", "--context-window", "8192")
        run = run_cli(*flags, "--json", "where is the group decorator defined?")
        off = run_cli(*flags, "--json", "--no-search", "where is the group decorator defined?")
    assert run.code == off.code == 0, run.err + off.err
    system = model.bodies[0]["messages"][0]["content"]
    assert "pkg/decorators.py: def group:263" in system
    results = [m["content"] for m in model.bodies[0]["messages"] if m["role"] == "tool"]
    assert (
        len(results) == 1 and "pkg/decorators.py:263 defines group\n263\tdef group(name=None):" in results[0]
    )
    starts = [e for e in run.events() if e["type"] == "tool_start"]
    assert [(e["name"], e["input"]) for e in starts] == [("Grep", {"pattern": r"\b(group)\b"})]
    # --no-search: the question alone; the map stays.
    assert not [m for m in model.bodies[-1]["messages"] if m["role"] == "tool"]
    assert "pkg/decorators.py: def group:263" in model.bodies[-1]["messages"][0]["content"]
