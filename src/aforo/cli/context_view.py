"""`/context`: what fills the window, as one bar and a table (SPEC §1.5).

Each section has its own glyph as well as its own colour, so the bar still reads with NO_COLOR or in a
log file. Free space and the answer's reserve end the bar: the reserve is room the prompt may not use.
Below them, what aforo keeps of the session whatever is compacted (its trail, `trail_lines`).
Everything fits the console's width: the bar is at most `BAR_WIDTH` cells and narrower on a narrow
terminal, the table lets rich fold its columns, and the lines wrap at word boundaries.
"""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from aforo.cli.render import fmt_tokens
from aforo.context.breakdown import Breakdown
from aforo.context.trail import Trail
from aforo.context.trail_view import shown_source

BAR_WIDTH = 60
MIN_BAR_WIDTH = 10
GOAL_CHARS = 120  # the goal's first line in the session record's lines
# (glyph, colour) per section, in the order the breakdown gives them, then free and reserve.
_STYLE = {
    "system prompt": ("S", "blue"),
    "repository map": ("P", "bright_blue"),
    "AGENTS.md": ("A", "cyan"),
    "tool definitions": ("T", "magenta"),
    "user messages": ("U", "green"),
    "assistant messages": ("M", "yellow"),
    "tool results": ("R", "red"),
    "cleared results": ("c", "bright_black"),
    "free": (".", "white"),
    "reserve": ("_", "bright_black"),
}


def rows(view: Breakdown) -> list[tuple[str, int]]:
    return [(s.name, s.tokens) for s in view.sections] + [("free", view.free), ("reserve", view.reserve)]


def bar(view: Breakdown, width: int = BAR_WIDTH) -> Text:
    """Cells proportional to tokens; a non-empty section always gets at least one cell."""
    items = rows(view)
    total = max(1, view.window)
    cells = [max(1, round(width * n / total)) if n > 0 else 0 for _, n in items]
    # Rounding may overshoot or undershoot the width: the free part absorbs the difference.
    free_at = [name for name, _ in items].index("free")
    cells[free_at] = max(0, cells[free_at] + width - sum(cells))
    out = Text("[")
    for (name, _), n in zip(items, cells, strict=True):
        glyph, colour = _STYLE.get(name, ("?", "white"))
        out.append(glyph * n, style=colour)
    out.append("]")
    return out


def render_context(view: Breakdown, console: Console) -> None:
    counts = f"exact ({view.counter})" if view.exact else f"estimated ({view.counter})"
    pct = round(100 * view.used / view.window) if view.window else 0
    console.print(
        f"context: {fmt_tokens(view.used)} of {fmt_tokens(view.window)} tokens used ({pct}%), "
        f"window {view.window} from {view.window_source}, counts {counts}",
        markup=False,
        highlight=False,
        soft_wrap=False,
    )
    width = max(MIN_BAR_WIDTH, min(BAR_WIDTH, console.width - 2))  # 2: the brackets
    console.print(bar(view, width), highlight=False, soft_wrap=False)
    table = Table(box=None, pad_edge=False, show_edge=False)
    table.add_column("", no_wrap=True)
    table.add_column("section")
    table.add_column("tokens", justify="right", no_wrap=True)
    table.add_column("% window", justify="right")
    for name, tokens in rows(view):
        glyph, colour = _STYLE.get(name, ("?", "white"))
        share = f"{100 * tokens / view.window:.1f}%" if view.window else "-"
        table.add_row(Text(glyph, style=colour), name, str(tokens), share)
    console.print(table, highlight=False, soft_wrap=False)


def trail_lines(trail: Trail) -> list[str]:
    """What aforo keeps of the session whatever is compacted, for the user to see (/context, /compact)."""
    if trail.empty:
        return []
    lines = ["session record (kept by aforo through every compaction and --resume):"]
    lines.append(f"  goal: {first_line(trail.goal)}")
    if trail.rules:
        lines.append("  rules: " + "; ".join(trail.rules))
    lines += [f"  decided: {d.decision}" + (f" (why: {d.why})" if d.why else "") for d in trail.decisions]
    if trail.read:
        lines.append("  read or searched: " + ", ".join(shown_source(s, "") for s, _ in trail.read))
    if trail.answers:
        lines.append(f"  answers: {len(trail.answers)}; the last began: {trail.answers[-1][1]}")
    lines.append(f"  requests kept verbatim: {len(trail.requests)}")
    return lines


def first_line(text: str) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= GOAL_CHARS else line[: GOAL_CHARS - 1] + "…"
