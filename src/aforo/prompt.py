"""The system prompt: aforo's base instructions, then the project's AGENTS.md (SPEC §1.4).

Both live outside `messages`, so neither clearing nor compaction touches them; they are sent whole on
every request, so every line costs context on every turn (`/context` shows how much).

AGENTS.md comes from the workspace, which is not trusted: it is read like a tool reads a file (confined
to the workspace, a regular file only, never blocking) and at most `agents_md_bytes` of it is read at
all. When it cannot be used, or is cut, the caller gets a warning to show instead of a silent change.
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass
from pathlib import Path

from aforo.errors import ToolError
from aforo.limits import AGENTS_MD_BYTES
from aforo.messages import SystemPart
from aforo.tools.names import show
from aforo.tools.workspace import open_regular, resolve

INSTRUCTIONS_FILE = "AGENTS.md"

# The workspace is named, not spelled as an absolute path: tools take relative paths, the model's
# answers then do not depend on where the checkout lives (the same run reproduces on any machine), and
# the user's home directory does not leak into every request.
BASE = """You are aforo, a read-only coding assistant. You work in the workspace "{workspace}".
You can only read: Glob finds files, Grep searches their contents, Read shows a file with line numbers,
LS lists a directory. Paths are relative to the workspace. Call a tool whenever you need to see code;
never guess what a file contains. When you know the answer, reply concisely and cite the files (and
lines) you used."""


@dataclass(frozen=True)
class Instructions:
    """The project instructions block for the system prompt (None: nothing to send), and why not all."""

    text: str | None
    warning: str | None = None


@dataclass(frozen=True)
class SystemPrompt:
    parts: tuple[SystemPart, ...]
    # For the user, not the model: AGENTS.md was ignored or cut.
    warnings: tuple[str, ...] = ()


def load_instructions(workspace: Path, max_bytes: int = int(AGENTS_MD_BYTES.value)) -> Instructions:
    try:
        path = resolve(workspace, INSTRUCTIONS_FILE)
        if not path.exists():
            return Instructions(None)
        with open_regular(path, INSTRUCTIONS_FILE) as f:
            raw = f.read(max_bytes + 1)
    except ToolError as exc:
        return Instructions(None, f"{INSTRUCTIONS_FILE} was not used: {exc}")
    cut = len(raw) > max_bytes
    # Not final when cut: a character split by the cut is dropped rather than shown as U+FFFD.
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    content = decoder.decode(raw[:max_bytes], final=not cut).strip()
    if not content:
        return Instructions(None)
    warning = None
    if cut:
        content += "\n[... AGENTS.md cut: it is resent on every turn ...]"
        warning = (
            f"{INSTRUCTIONS_FILE} is longer than {max_bytes:,} bytes; only its beginning is sent "
            f"(the {AGENTS_MD_BYTES.name} limit: it is resent on every turn)"
        )
    text = (
        f'# Project instructions\n<project_instructions path="{INSTRUCTIONS_FILE}">\n'
        f"{content}\n</project_instructions>"
    )
    return Instructions(text, warning)


def system_prompt(workspace: Path) -> SystemPrompt:
    parts = [SystemPart(BASE.format(workspace=show(workspace.resolve().name) or "/"), "system prompt")]
    instructions = load_instructions(workspace)
    if instructions.text:
        parts.append(SystemPart(instructions.text, INSTRUCTIONS_FILE))
    warnings = (instructions.warning,) if instructions.warning else ()
    return SystemPrompt(tuple(parts), warnings)
