"""What fills the window, by section: the numbers behind `/context` (SPEC §1.5).

Sections are sized with the calibrated estimate; when an exact counter gave the total, the sections are
scaled to it so they add up to what the model really sees, and the view says which counter was used.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

from aforo.context.budget import Budget
from aforo.context.tokens import CHARS_PER_TOKEN, Count, message_chars
from aforo.messages import Request, TextBlock, ToolResult, ToolUse
from aforo.reply_format import definition_chars


@dataclass(frozen=True)
class Section:
    name: str
    tokens: int


@dataclass(frozen=True, kw_only=True)
class Breakdown:
    sections: tuple[Section, ...]
    used: int
    free: int
    reserve: int
    window: int
    window_source: str
    counter: str
    exact: bool


def break_down(request: Request, budget: Budget, count: Count, ratio: float) -> Breakdown:
    chars: dict[str, float] = {"system prompt": 0, "repository map": 0, "AGENTS.md": 0, "tool definitions": 0}
    for part in request.system:
        key = part.name if part.name in ("AGENTS.md", "repository map") else "system prompt"
        chars[key] += len(part.text)
    if not chars["repository map"]:
        del chars["repository map"]  # a workspace whose files are listed has no map: no row for it
    chars["tool definitions"] = definition_chars(request)
    chars.update({"user messages": 0, "assistant messages": 0, "tool results": 0, "cleared results": 0})
    for message in request.messages:
        overhead = message_chars(message) - sum(_block_chars(b) for b in message.content)
        chars[f"{message.role} messages"] += overhead
        for block in message.content:
            if isinstance(block, ToolResult):
                chars["cleared results" if block.cleared else "tool results"] += len(block.content)
            else:
                chars[f"{message.role} messages"] += _block_chars(block)
    raw_total = sum(chars.values()) / CHARS_PER_TOKEN
    # Scale raw sizes to the total we trust (exact, or the calibrated estimate of the whole request).
    total = count.tokens
    scale = total / raw_total if raw_total else ratio
    sections = tuple(Section(name, math.ceil(c / CHARS_PER_TOKEN * scale)) for name, c in chars.items())
    return Breakdown(
        sections=sections,
        used=total,
        free=max(0, budget.available - total),
        reserve=budget.reserve,
        window=budget.window,
        window_source=budget.source,
        counter=count.counter,
        exact=count.exact,
    )


def _block_chars(block: TextBlock | ToolUse | ToolResult) -> int:
    if isinstance(block, TextBlock):
        return len(block.text)
    if isinstance(block, ToolUse):
        return len(block.name) + len(json.dumps(block.input, ensure_ascii=False))
    return len(block.content)
