"""Rendering of the event stream: human lines (SPEC §1.5) or JSON lines (`--json`).

Human output uses rich, which emits no ANSI when stdout is not a terminal or NO_COLOR is set. Every
string of an event may come from the model, a tool or a server: it is sanitized (`cli.sanitize`) on its
way to the terminal, a file or a pipe alike. `--json` is exact: JSON escapes control characters itself.
"""

from __future__ import annotations

import json
import sys
from typing import TextIO

from aforo.cli.sanitize import StreamSanitizer, json_safe, safe_console, sanitize
from aforo.events import (
    ContextAction,
    Event,
    Info,
    ModelCheck,
    RunEnd,
    TextDelta,
    ToolEnd,
    ToolStart,
    TurnEnd,
    Warning,
    event_to_json,
)

ARGS_WIDTH = 100


def fmt_tokens(n: int) -> str:
    """882 -> '882', 4096 -> '4.1k', 25000 -> '25k'."""
    if n < 1000:
        return str(n)
    value = n / 1000
    return f"{value:.1f}k" if value < 10 else f"{value:.0f}k"


def one_line(data: object, width: int = ARGS_WIDTH) -> str:
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    # JSON escapes C0 controls; DEL, C1 and bidi controls it leaves raw are escaped by `sanitize`.
    text = sanitize(" ".join(text.split()), one_line=True)
    return text if len(text) <= width else text[: width - 1] + "…"


def ctx_line(used: int, window: int, exact: bool | None = None) -> str:
    pct = round(100 * used / window) if window else 0
    suffix = "" if exact is None else (" exact" if exact else " est")
    return f"ctx {fmt_tokens(used)}/{fmt_tokens(window)} ({pct}%){suffix}"


def result_line(event: RunEnd) -> str:
    r = event.result
    return (
        f"[{r.reason}] {r.turns} turns, {r.tool_calls} tool calls, "
        f"{r.input_tokens} input tokens, {r.output_tokens} output tokens"
    )


class HumanRenderer:
    def __init__(self, out: TextIO | None = None, err: TextIO | None = None) -> None:
        self.out = safe_console(out or sys.stdout)
        self.err = safe_console(err or sys.stderr)
        self._text = StreamSanitizer()
        self._in_text = False

    def _line(self, text: str, style: str = "", *, err: bool = False) -> None:
        if self._in_text:
            self.out.file.write(self._text.flush() + "\n")
            self._in_text = False
        (self.err if err else self.out).print(text, style=style or None, markup=False)

    def __call__(self, event: Event) -> None:
        if isinstance(event, TextDelta):
            # Written as it streams, outside rich: sanitized here, piece by piece.
            self.out.file.write(self._text.feed(event.text))
            self.out.file.flush()
            self._in_text = not event.text.endswith("\n")
        elif isinstance(event, Info):
            for line in self._info_lines(event.fields):
                self._line(line, "dim")
        elif isinstance(event, TurnEnd):
            extra = " (server truncated the prompt)" if event.truncated else ""
            self._line(ctx_line(event.context, event.window, event.exact) + extra, "cyan")
        elif isinstance(event, ToolStart):
            self._line(f"> {sanitize(event.name, one_line=True)} {one_line(event.input)}", "bold")
        elif isinstance(event, ToolEnd):
            if event.ok:
                note = ", truncated to cap" if event.truncated else ""
                self._line(f"  ok ({event.duration_ms:.0f} ms{note})", "green")
            else:
                self._line(f"  error: {event.error or 'failed'}", "red")
        elif isinstance(event, ContextAction):
            self._line(self._context_text(event), "magenta")
        elif isinstance(event, ModelCheck) and event.restored:
            # A mismatch comes as a Warning naming both models.
            self._line(f"~ model restored on lane {event.lane}: {event.served}", "magenta")
        elif isinstance(event, Warning):
            self._line(f"! {event.message}", "yellow", err=True)
        elif isinstance(event, RunEnd):
            self._line("")
            self._line(result_line(event), "bold")
            if event.result.error and event.result.reason != "end_turn":
                self._line(f"! {event.result.error}", "red", err=True)

    @staticmethod
    def _info_lines(f: dict[str, object]) -> list[str]:
        if "window" not in f:
            return [f"{k}: {v}" for k, v in f.items()]
        counts = "exact" if f.get("counter") not in (None, "estimate") else "estimated"
        lines = [
            f"workspace: {f.get('workspace')}",
            f"model: {f.get('model')} ({f.get('server')} at {f.get('base_url')})",
            f"window: {f['window']} tokens from {f.get('window_source')}, {f.get('reserve')} reserved for "
            f"the answer, counts {counts} ({f.get('counter')})",
        ]
        if "compact_lane" in f:
            lines.append(
                f"summaries: lane {f['compact_lane']}, {f.get('compact_model')} ({f.get('compact_server')}), "
                f"window {f.get('compact_window')}, counts by {f.get('compact_counter')}"
            )
        return lines

    @staticmethod
    def _context_text(event: ContextAction) -> str:
        span = f"{fmt_tokens(event.before)} -> {fmt_tokens(event.after)} tokens"
        if event.action == "cleared":
            return f"~ cleared {event.count} old tool results: {span}"
        if event.action == "compacted":
            return f"~ conversation compacted: {span} (checkpoint {event.checkpoint}; /undo restores it)"
        if event.action == "reset":
            return f"~ conversation cleared: {span} (checkpoint {event.checkpoint}; /undo restores it)"
        return f"~ conversation restored from checkpoint {event.checkpoint}: {span}"


class JsonRenderer:
    def __init__(self, out: TextIO | None = None) -> None:
        self.out = out or sys.stdout

    def __call__(self, event: Event) -> None:
        self.out.write(json_safe(event_to_json(event)) + "\n")
        self.out.flush()
