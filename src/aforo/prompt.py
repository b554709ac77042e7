"""The system prompt: aforo's base instructions, then the project's AGENTS.md (SPEC §1.4).

Both live outside `messages`, so neither clearing nor compaction touches them; they are sent whole on
every request, so every line costs context on every turn (`/context` shows how much).
"""

from __future__ import annotations

from pathlib import Path

from aforo.messages import SystemPart

INSTRUCTIONS_FILE = "AGENTS.md"
# AGENTS.md larger than this is cut: it is resent on every turn of a small window.
MAX_INSTRUCTIONS_CHARS = 16_000

# The workspace is named, not spelled as an absolute path: tools take relative paths, the model's
# answers then do not depend on where the checkout lives (the same run reproduces on any machine), and
# the user's home directory does not leak into every request.
BASE = """You are aforo, a read-only coding assistant. You work in the workspace "{workspace}".
You can only read: Glob finds files, Grep searches their contents, Read shows a file with line numbers,
LS lists a directory. Paths are relative to the workspace. Call a tool whenever you need to see code;
never guess what a file contains. When you know the answer, reply concisely and cite the files (and
lines) you used."""


def load_instructions(workspace: Path) -> str | None:
    path = workspace / INSTRUCTIONS_FILE
    if not path.is_file():
        return None
    content = path.read_text(encoding="utf-8", errors="replace").strip()
    if not content:
        return None
    if len(content) > MAX_INSTRUCTIONS_CHARS:
        content = content[:MAX_INSTRUCTIONS_CHARS] + "\n[... AGENTS.md cut: it is resent on every turn ...]"
    return (
        f'# Project instructions\n<project_instructions path="{INSTRUCTIONS_FILE}">\n'
        f"{content}\n</project_instructions>"
    )


def system_prompt(workspace: Path) -> tuple[SystemPart, ...]:
    parts = [SystemPart(BASE.format(workspace=workspace.resolve().name or "/"), "system prompt")]
    instructions = load_instructions(workspace)
    if instructions:
        parts.append(SystemPart(instructions, INSTRUCTIONS_FILE))
    return tuple(parts)
