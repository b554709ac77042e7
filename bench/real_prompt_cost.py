"""What the fixed part of a request and a Read cost, in the real model's tokens (issue 11): part of
`make bench-real`.

- The system prompt and the tools for a one-line question, counted exactly by llama-server
  (`/apply-template` + `/tokenize`, the counter aforo uses): with constrained steps (the reply format),
  and with tool definitions, full (a large window) and lean (a window up to 8192). Target for a
  4096-token window: at most 10 % of it (410 tokens).
- Read's output against the file's own tokens, over this repository's Python code and the examples:
  target at most 1.15 times; a line number before every line (`{n:>6}\\t`, as before, or `{n}\\t`) is
  counted beside it.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import httpx

from aforo.loop.prompt import system_prompt
from aforo.messages import Message, Request, ToolSpec
from aforo.protocols import ToolContext
from aforo.servers.counters import LlamaCppCounter
from aforo.tools.read_tool import Read
from aforo.tools.registry import default_registry

ROOT = Path(__file__).resolve().parents[1]
WINDOW = 4096
PROMPT_SHARE = 0.10
READ_RATIO = 1.15


def tokens(client: httpx.Client, server: str, text: str) -> int:
    reply = client.post(f"{server}/tokenize", json={"content": text}, timeout=60)
    return len(reply.json()["tokens"])


def prompt_costs(client: httpx.Client, server: str, model: str) -> dict[str, int]:
    workspace = ROOT / "examples" / "tasks" / "trio"
    tools = default_registry(workspace)
    counter = LlamaCppCounter(client, server, model)
    system = system_prompt(workspace).parts
    question = (Message.user("Which file defines the most functions?"),)

    def count(specs: tuple[ToolSpec, ...], constrained: bool) -> int:
        return counter.count(
            Request(model, system, specs, question, 1024, temperature=0.0, constrained=constrained)
        )

    return {
        "constrained steps": count(tools.specs, True),
        "tool definitions, lean (window <= 8192)": count(tools.specs_for(WINDOW), False),
        "tool definitions, full": count(tools.specs, False),
    }


def read_ratios(client: httpx.Client, server: str) -> tuple[int, dict[str, int]]:
    files = sorted((ROOT / "src").rglob("*.py")) + sorted((ROOT / "examples").rglob("*.py"))
    own = 0
    shown = {"Read": 0, "every line {n:>6}\\t": 0, "every line {n}\\t": 0}
    for path in files:
        text = path.read_text(encoding="utf-8")
        if not text.strip():
            continue
        lines = text.splitlines()
        own += tokens(client, server, text)
        out = Read().run({"file_path": path.name}, ToolContext(path.parent)).content
        shown["Read"] += tokens(client, server, out)
        shown["every line {n:>6}\\t"] += tokens(
            client, server, "\n".join(f"{n:>6}\t{x}" for n, x in enumerate(lines, 1))
        )
        shown["every line {n}\\t"] += tokens(
            client, server, "\n".join(f"{n}\t{x}" for n, x in enumerate(lines, 1))
        )
    return own, shown


def main() -> int:
    base_url = os.environ.get("AFORO_REAL_BASE_URL")
    if not base_url:
        print("prompt-cost: run it through `make bench-real` (scripts/real-model run)", file=sys.stderr)
        return 2
    server, model = base_url.removesuffix("/v1"), os.environ.get("AFORO_REAL_MODEL", "")
    with httpx.Client() as client:
        costs = prompt_costs(client, server, model)
        own, shown = read_ratios(client, server)
    print(f"system prompt + tools + a one-line question, exact (llama-server), against a {WINDOW} window:")
    for name, n in costs.items():
        print(f"  {name:42} {n:5} tokens  {n / WINDOW:5.1%}")
    print(
        f"Read's output against the files' own {own:,} tokens (this repository's and the examples' Python):"
    )
    for name, n in shown.items():
        print(f"  {name:42} {n / own:.3f}")
    met = costs["constrained steps"] <= PROMPT_SHARE * WINDOW and shown["Read"] <= READ_RATIO * own
    print(
        f"targets (<= {PROMPT_SHARE:.0%} of {WINDOW}, Read <= {READ_RATIO}x): {'met' if met else 'NOT met'}"
    )
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
