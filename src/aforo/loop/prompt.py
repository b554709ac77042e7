"""The system prompt: aforo's base instructions, the workspace's files, the project's AGENTS.md (SPEC §1.4).

Both live outside `messages`, so neither clearing nor compaction touches them; they are sent whole on
every request, so every line costs context on every turn (`/context` shows how much).

The list of files is what a small model lacks most: without it Qwen2.5-Coder 0.5B guesses paths
(`stopwords.txt` for `wordfreq/stopwords.py`, AGENTS.md for everything) instead of searching. It is the
files ripgrep would search (ignore files honoured), as whole paths (given apart from its directory, a
file's name is what the 0.5B model asked for: `config.py` for `app/config.py`), within `overview_chars`;
a workspace too large for that gets the repository map instead (aforo.navigate: its source files with
what they define, within what is left of the fixed prompt's share of the window), else its top-level
entries with file counts. Names are escaped (`names.show`): they come from the workspace.

AGENTS.md comes from the workspace, which is not trusted: it is read like a tool reads a file (confined
to the workspace, a regular file only, never blocking) and at most `agents_md_bytes` of it is read at
all. When it cannot be used, or is cut, the caller gets a warning to show instead of a silent change.
"""

from __future__ import annotations

import codecs
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from aforo.errors import LimitExceeded, ToolError
from aforo.limits import AGENTS_MD_BYTES, OVERVIEW_CHARS
from aforo.messages import SystemPart
from aforo.navigate.repomap import MAP_PART
from aforo.protocols import ToolContext
from aforo.tools.names import show
from aforo.tools.ripgrep import list_files
from aforo.tools.workspace import open_regular, resolve

INSTRUCTIONS_FILE = "AGENTS.md"
OVERVIEW = "workspace files"
# Listing the files is a help, not a need: a huge tree that takes longer than this goes without one.
OVERVIEW_SECONDS = 2.0

# The workspace is named, not spelled as an absolute path: tools take relative paths, the model's
# answers then do not depend on where the checkout lives (the same run reproduces on any machine), and
# the user's home directory does not leak into every request.
# Every token of it is resent on every turn of a small window: what the tools do is said once, by them
# (their definitions, or the reply format of constrained steps), not again here.
# The length and grounding instruction (issue 37) goes with the reply format's "answer" line, which says
# it again nearest the answer: measured on `make demo` (docs/real-code.md, "Padding"), this sentence
# alone made the 1.5B pad more, the two together ended its answer after what the file shows.
BASE = """You are aforo, a read-only coding assistant in the workspace "{workspace}"; paths are relative \
to it. Look at the code before you answer: never guess what a file contains. Answer in as few sentences \
as the question needs, say only what the lines you read show, cite the files and lines you used \
(file:line), and stop once the question is answered."""


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


def fits(files: list[str], max_chars: int = int(OVERVIEW_CHARS.value)) -> bool:
    """Whether the whole list of `files` fits in the overview."""
    return len(" ".join(show(name) for name in files)) <= max_chars


def overview(files: list[str], max_chars: int = int(OVERVIEW_CHARS.value)) -> str | None:
    """The files' paths, or the top-level entries with how many
    files each holds when that is longer than `max_chars`; None when even that does not fit."""
    text = " ".join(show(name) for name in sorted(files))
    if len(text) > max_chars:
        tops: dict[str, int] = defaultdict(int)
        for name in files:
            head, sep, _ = name.partition("/")
            tops[show(head) + ("/" if sep else "")] += 1
        text = " ".join(_top(t, n) for t, n in sorted(tops.items()))
    if not text or len(text) > max_chars:
        return None
    return f"The workspace's files:\n{text}"


def _top(entry: str, files: int) -> str:
    if not entry.endswith("/"):
        return entry
    return f"{entry} ({files} file{'' if files == 1 else 's'})"


def workspace_files(workspace: Path) -> list[str]:
    ctx = ToolContext(workspace, deadline=time.monotonic() + OVERVIEW_SECONDS)
    try:
        return sorted(list_files(workspace.resolve(), ctx))
    # rg's memory cap (a 200 000-line .gitignore): no overview; the map's index says why (issue 39 D2).
    except (ToolError, LimitExceeded):
        return []


def system_prompt(workspace: Path, repo_map: Callable[[int], str | None] | None = None) -> SystemPrompt:
    """`repo_map(chars)`: the repository map, given the characters the rest of the system prompt takes,
    for a workspace whose files do not fit the overview (None: no map)."""
    parts = [SystemPart(BASE.format(workspace=show(workspace.resolve().name) or "/"), "system prompt")]
    instructions = load_instructions(workspace)
    if instructions.text:
        parts.append(SystemPart(instructions.text, INSTRUCTIONS_FILE))
    files = workspace_files(workspace)
    mapped = None if repo_map is None or fits(files) else repo_map(sum(len(p.text) for p in parts))
    if mapped:
        parts.insert(1, SystemPart(mapped, MAP_PART))
    elif listing := overview(files):
        parts.insert(1, SystemPart(listing, OVERVIEW))
    warnings = (instructions.warning,) if instructions.warning else ()
    return SystemPrompt(tuple(parts), warnings)
