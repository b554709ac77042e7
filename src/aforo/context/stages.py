"""Stages 1 and 2 as pure functions over messages (SPEC §3): cap a tool result, clear old ones.

Neither mutates its input: each returns new messages plus what it did, so the caller can keep the old
list to roll back. Both keep tool pairs atomic by construction: they only rewrite the *content* of a
tool_result, never remove a tool_use or a result. `clear` is stage 2 as the governor runs it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from aforo.context.plan import Outcome, Plan, Room
from aforo.context.tokens import chars_for
from aforo.messages import CLEARED_NOTE, Message, ToolResult

# Share of a capped result kept from the head; the rest comes from the tail (errors and totals
# usually sit at the end of an output, the context at its start).
HEAD_SHARE = 0.6


@dataclass(frozen=True)
class Cap:
    """No single tool result may exceed `tokens` real tokens; `ratio` is the calibrated tokens/estimate."""

    tokens: int
    ratio: float = 1.0

    @property
    def chars(self) -> int:
        """The cap in characters, so the cap holds in real tokens, not only estimated ones."""
        return chars_for(self.tokens, self.ratio)


@dataclass(frozen=True)
class CapResult:
    content: str
    truncated: bool
    removed_chars: int = 0
    removed_lines: int = 0


TOOL_ADVICE = (
    "To see them, call the tool again on a narrower range "
    "(Read with offset/limit, or a more specific Grep/Glob)."
)


def cap_text(content: str, max_tokens: int, ratio: float = 1.0, advice: str = TOOL_ADVICE) -> CapResult:
    """Keep the head and the tail of `content` within `max_tokens`, marking the cut.

    `ratio` is the calibrated tokens/estimate, so the cap holds in real tokens, not only estimated ones.
    `advice`: what the marker tells the model to do for the lines cut (text that is no tool result
    cannot be read again the same way).
    """
    limit = chars_for(max_tokens, ratio)
    if len(content) <= limit:
        return CapResult(content, False)
    marker_room = 200
    keep = max(0, limit - marker_room)
    head_end = _line_boundary(content, int(keep * HEAD_SHARE), forward=False)
    tail_start = _line_boundary(content, len(content) - (keep - head_end), forward=True)
    tail_start = max(tail_start, head_end)
    removed = content[head_end:tail_start]
    removed_lines = removed.count("\n")
    marker = (
        f"\n[... {removed_lines} lines ({len(removed)} characters) cut here to fit the context cap of "
        f"{max_tokens} tokens. {advice} ...]\n"
    )
    return CapResult(content[:head_end] + marker + content[tail_start:], True, len(removed), removed_lines)


def _line_boundary(text: str, index: int, *, forward: bool) -> int:
    """Move `index` to a nearby line start so the cut does not split a line, if one is close."""
    index = min(max(index, 0), len(text))
    window = 400
    if forward:
        nl = text.find("\n", index, index + window)
        return nl + 1 if nl != -1 else index
    nl = text.rfind("\n", max(0, index - window), index)
    return nl + 1 if nl != -1 else index


@dataclass(frozen=True)
class ClearResult:
    messages: list[Message]
    count: int


def clear_old_results(messages: list[Message], keep: int) -> ClearResult:
    """Replace the content of every tool result but the `keep` most recent with its `cleared_note`.

    All eligible results are cleared at once: clearing rewrites the prompt prefix and breaks the
    server's prompt cache, so doing it in one go breaks it as rarely as possible. The results of the
    last exchange, which the model has not seen yet, are never cleared, whatever `keep` says: cleared
    before it reads them, it can only ask again (with `keep_tool_results = 0` the 0.5B model read the
    same file four times, until `--max-turns`).
    """
    unseen = len(messages) - 1 if messages and messages[-1].tool_results else len(messages)
    positions = [
        (mi, bi)
        for mi, message in enumerate(messages)
        for bi, block in enumerate(message.content)
        if isinstance(block, ToolResult)
    ]
    eligible = [(mi, bi) for mi, bi in positions[: max(0, len(positions) - keep)] if mi < unseen]
    targets: dict[int, set[int]] = {}
    for mi, bi in eligible:
        block = messages[mi].content[bi]
        # A result already shorter than its note would grow: leave it.
        if (
            isinstance(block, ToolResult)
            and not block.cleared
            and len(block.content) > len(cleared_note(block))
        ):
            targets.setdefault(mi, set()).add(bi)
    if not targets:
        return ClearResult(list(messages), 0)
    out = list(messages)
    count = 0
    for mi, indexes in targets.items():
        blocks = list(out[mi].content)
        for bi in indexes:
            old = blocks[bi]
            if isinstance(old, ToolResult):
                blocks[bi] = replace(old, content=cleared_note(old), cleared=True)
            count += 1
        out[mi] = replace(out[mi], content=tuple(blocks))
    return ClearResult(out, count)


def cleared_note(result: ToolResult) -> str:
    """What replaces a cleared result: the facts its tool gave (a file's line count and definitions, the
    matches), so a question over more files than the window holds is still answered from all of them."""
    if not result.facts:
        return CLEARED_NOTE
    return f"[{result.facts}. Old tool result cleared to save context; run the tool again for its lines.]"


def clear(room: Room) -> Plan | None:
    """Stage 2 past `clear_at`: clear old tool results, when that really saves room."""
    if room.before.tokens <= room.policy.clear_threshold(room.budget):
        return None
    cleared = clear_old_results(list(room.request.messages), room.policy.keep_tool_results)
    if not cleared.count:
        return None
    after = room.count(room.request.with_messages(cleared.messages))
    if after.tokens >= room.before.tokens:
        return None
    return Outcome(messages=tuple(cleared.messages), after=after, count=cleared.count)
