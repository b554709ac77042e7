"""`@path` in a prompt attaches the file, as if the model had read it: a Read call and its result.

A mention is `@` at the start of a word followed by a path relative to the workspace (`explain
@src/app.py`); trailing punctuation is not part of it. Each file is read through the Read tool, so the
workspace's confinement, the tool's limits and the context cap apply as to any call the model makes,
and the pair lands in the conversation right after the prompt: the governor clears it later like any
other tool result, and `/undo` brings it back like any other. The prompt keeps its text as typed.

A mention that does not name a readable file stays text (`@dataclass` is a decorator, not a file) and is
attached nowhere; when it looks like a path (it has a `/` or a `.`) or names something that is not a
readable file (a directory), the user is told why it was not attached, before the model is asked
anything.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from aforo.context.stages import Cap
from aforo.errors import ToolError
from aforo.events import EventSink, ToolStart
from aforo.loop.tool_batch import run_batch, tool_end
from aforo.messages import Message, ToolUse, fresh_call_ids
from aforo.tools.registry import ToolRegistry
from aforo.tools.workspace import resolve

MENTION = re.compile(r"(?<!\S)@(\S+)")
_TRAILING = ".,;:!?)]}'\"`"
MAX_COMPLETIONS = 200


@dataclass(frozen=True)
class Attachments:
    messages: tuple[Message, ...] = ()  # the Read calls, then their results: empty when none was attached
    notes: tuple[str, ...] = ()  # for the user: the mentions left as text, and why


def mentioned_paths(prompt: str) -> list[str]:
    """The paths mentioned in `prompt`, in order, each once."""
    seen: dict[str, None] = {}
    for match in MENTION.finditer(prompt):
        path = match.group(1).rstrip(_TRAILING)
        if path:
            seen.setdefault(path, None)
    return list(seen)


def _meant_as_path(workspace: Path, path: str) -> bool:
    return "/" in path or "." in path or os.path.lexists(workspace / path)


def _readable(tools: ToolRegistry, path: str) -> str | None:
    """None when `path` names a regular file inside the workspace, else why it is not attached."""
    try:
        real = resolve(tools.workspace, path)
    except ToolError as exc:
        return str(exc)
    if os.path.isdir(real):
        return f"{path} is a directory; mention the files in it"
    if not os.path.lexists(real):
        return f"there is no {path} in the workspace"
    return None


def attach(
    prompt: str, tools: ToolRegistry, cap: Cap, conversation: tuple[Message, ...], emit: EventSink
) -> Attachments:
    """Read every file `prompt` mentions; the call and result messages to follow the prompt."""
    notes: list[str] = []
    paths = []
    for path in mentioned_paths(prompt):
        problem = _readable(tools, path)
        if problem is None:
            paths.append(path)
        elif _meant_as_path(tools.workspace, path):
            notes.append(f"@{path} was not attached ({problem}); it is sent as typed")
    if not paths:
        return Attachments(notes=tuple(notes))
    taken = {u.id for m in conversation for u in m.tool_uses}
    ids = fresh_call_ids(taken)
    uses = [ToolUse(next(ids), "Read", {"file_path": path}) for path in paths]
    kept = []
    for outcome in run_batch(tools, uses, cap=cap, question=prompt):
        if outcome.result.is_error:
            notes.append(f"@{outcome.use.input['file_path']} was not attached ({outcome.result.content})")
            continue
        kept.append(outcome)
        emit(ToolStart(id=outcome.use.id, name=outcome.use.name, input=outcome.use.input))
        emit(tool_end(outcome, cap.ratio))
    if not kept:
        return Attachments(notes=tuple(notes))
    return Attachments(
        (
            Message("assistant", tuple(o.use for o in kept)),
            Message("user", tuple(o.result for o in kept)),
        ),
        tuple(notes),
    )


def complete_path(workspace: Path, partial: str) -> list[str]:
    """Workspace paths that start with `partial` (directories end with `/`), for Tab after `@`.

    The directory part goes through the tools' confinement, so nothing outside the workspace is listed;
    names a mention cannot hold (with whitespace) are left out, and dot files unless asked for.
    """
    directory, _, prefix = partial.rpartition("/")
    try:
        real = resolve(workspace, directory or ".")
        entries = sorted(os.scandir(real), key=lambda e: e.name)
    except (ToolError, OSError):
        return []
    out = []
    for entry in entries:
        name = entry.name
        if not name.startswith(prefix) or any(c.isspace() for c in name):
            continue
        if name.startswith(".") and not prefix.startswith("."):
            continue
        is_dir = entry.is_dir(follow_symlinks=True)
        out.append(f"{directory + '/' if directory else ''}{name}{'/' if is_dir else ''}")
        if len(out) >= MAX_COMPLETIONS:
            break
    return out
