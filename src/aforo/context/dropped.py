"""What the last transformation removed: the checkpoint taken before it, compared with the conversation now.

A checkpoint holds the whole history as it was before a clearing, a compaction or a reset, so the
difference needs no bookkeeping of its own: tool results that are cleared now but were not then, and
messages that are gone (summarized or reset). Messages appended since then are simply not looked at.
Messages are matched by what identifies them (tool call ids, else role and text), not by equality, so
a message whose results were cleared still counts as kept.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from aforo.context.ledger import is_compacted
from aforo.context.undo import UNDO_REASON
from aforo.messages import Message, ToolResult, ToolUse

MAX_LISTED = 8
ARG_CHARS = 40
# The argument that names what a tool looked at, by tool name; others show their first argument.
_MAIN_ARG = {"Read": "file_path", "Glob": "pattern", "Grep": "pattern", "LS": "path"}


@dataclass(frozen=True)
class Dropped:
    """`kind`: "cleared", "compacted", "reset", "undone", "removed" or "nothing"."""

    kind: str
    cleared: tuple[str, ...] = ()  # the tool calls whose results were cleared, e.g. "Read a.py"
    removed_messages: int = 0
    removed_results: tuple[str, ...] = ()  # tool calls among the removed messages

    def describe(self) -> str:
        parts: list[str] = []
        if self.cleared:
            parts.append(f"cleared {len(self.cleared)} tool results: {_listing(self.cleared)}")
        if self.removed_messages:
            verb = {
                "compacted": "compaction summarized",
                "reset": "/clear set aside",
                "undone": "/undo set aside",
            }.get(self.kind, "removed")
            results = f" ({len(self.removed_results)} tool results)" if self.removed_results else ""
            tail = f": {_listing(self.removed_results)}" if self.removed_results else ""
            parts.append(f"{verb} {self.removed_messages} messages{results}{tail}")
        return "; ".join(parts) if parts else "nothing was removed since the last checkpoint"


def describe_call(use: ToolUse) -> str:
    """`Read a.py`, `Grep TODO`: the tool and what it looked at, on one short line."""
    key = _MAIN_ARG.get(use.name)
    value = use.input.get(key) if key else next(iter(use.input.values()), None)
    arg = " ".join(str(value).split()) if value is not None else ""
    if len(arg) > ARG_CHARS:
        arg = arg[: ARG_CHARS - 1] + "…"
    return f"{use.name} {arg}".strip()


def dropped(before: Sequence[Message], after: Sequence[Message], reason: str = "") -> Dropped:
    """What went from `before` (a checkpoint's history) to `after`; `reason` is the checkpoint's."""
    calls = {u.id: u for m in before for u in m.tool_uses}
    was_cleared = {r.tool_use_id for m in before for r in m.tool_results if r.cleared}
    now_results = {r.tool_use_id: r for m in after for r in m.tool_results}
    cleared = tuple(
        _name(calls, rid)
        for rid, r in now_results.items()
        if r.cleared and rid not in was_cleared and rid in calls
    )
    kept = {_key(m) for m in after}
    gone = [m for m in before if _key(m) not in kept]
    removed_results = tuple(_name(calls, r.tool_use_id) for m in gone for r in m.tool_results)
    if reason == "manual_clear":
        kind = "reset"
    elif reason == UNDO_REASON:
        kind = "undone"
    elif gone and any(is_compacted(m) for m in after):
        kind = "compacted"
    elif gone:
        kind = "removed"
    else:
        kind = "cleared" if cleared else "nothing"
    return Dropped(kind, cleared, len(gone), removed_results)


def since_newest(
    history: Iterable[tuple[str, str, Sequence[Message]]], now: Sequence[Message]
) -> tuple[str, Dropped] | None:
    """What the newest checkpoint of `history` (newest first) holds that `now` lost; None: no checkpoint.
    Only that checkpoint is read."""
    newest = next(iter(history), None)
    if newest is None:
        return None
    checkpoint, reason, messages = newest
    return checkpoint, dropped(messages, now, reason)


def _key(message: Message) -> tuple[str, ...]:
    ids = [b.id for b in message.content if isinstance(b, ToolUse)]
    ids += [b.tool_use_id for b in message.content if isinstance(b, ToolResult)]
    return (message.role, *ids) if ids else (message.role, message.text)


def _name(calls: dict[str, ToolUse], tool_use_id: str) -> str:
    use = calls.get(tool_use_id)
    return describe_call(use) if use else f"call {tool_use_id}"


def _listing(items: Sequence[str]) -> str:
    shown = ", ".join(items[:MAX_LISTED])
    return shown + (f", and {len(items) - MAX_LISTED} more" if len(items) > MAX_LISTED else "")
