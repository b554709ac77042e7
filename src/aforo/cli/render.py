"""Rendering of the event stream: human lines (SPEC §1.5) or JSON lines (`--json`).

Human output uses rich, which emits no ANSI when stdout is not a terminal or NO_COLOR is set; the
answer's text goes through an `AnswerWriter` (`cli.answer`: Markdown on a terminal) and `Progress`
events drive the status line (`cli.status`). Every string of an event may come from the model, a tool
or a server: it is sanitized (`cli.sanitize`) on its way to the terminal, a file or a pipe alike.
`--json` is exact: JSON escapes control characters itself.
"""

from __future__ import annotations

import json
import sys
from typing import TextIO

from aforo.cli.answer import AnswerWriter, MarkdownAnswer, RawAnswer, WrappedAnswer
from aforo.cli.sanitize import json_safe, safe_console, sanitize
from aforo.cli.status import StatusLine, StatusWriter
from aforo.events import (
    ContextAction,
    Event,
    Info,
    ModelCheck,
    Progress,
    RunEnd,
    TextDelta,
    ToolEnd,
    ToolStart,
    TurnEnd,
    Warning,
    event_to_json,
)
from aforo.limits import LATE_ANSWER_SHARE

ARGS_WIDTH = 100
DISCARDED = (
    "[discarded] the answer above: the server answered it without part of the conversation "
    "(it is not kept; the conversation is intact)"
)
HELD_NOTE = (
    "answers: shown once complete and checked, as this {server} server may drop part of a prompt without "
    "saying so and its window is not known (`aforo probe` measures it; then answers stream)"
)


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
    if r.unreported_turns:
        # A stopped answer's usage never came: its tokens are in no count, so no total is true.
        stopped = "an answer" if r.unreported_turns == 1 else f"{r.unreported_turns} answers"
        return (
            f"[{r.reason}] {r.turns} turns, {r.tool_calls} tool calls, tokens unknown ({stopped} stopped "
            f"before the server reported usage; the other turns: {r.input_tokens} input, "
            f"{r.output_tokens} output)"
        )
    return (
        f"[{r.reason}] {r.turns} turns, {r.tool_calls} tool calls, "
        f"{r.input_tokens} input tokens, {r.output_tokens} output tokens"
    )


def unverified(event: RunEnd) -> list[str]:
    """A footnote for each citation of the answer that did not hold, with what is true instead."""
    return [f"(unverified: {c.text} — {c.fact})" for c in event.result.citations if not c.held]


class HumanRenderer:
    """Events as lines for people. On a terminal the answer is Markdown (`--plain`: wrapped plain text)
    and, given a `status` line, what aforo waits for is shown below the output while it waits."""

    def __init__(
        self,
        out: TextIO | None = None,
        err: TextIO | None = None,
        *,
        plain: bool = False,
        status: StatusLine | None = None,
    ) -> None:
        out, err = out or sys.stdout, err or sys.stderr
        self.status = status
        if status is not None:
            out, err = StatusWriter(out, status), StatusWriter(err, status)  # type: ignore[assignment]
        terminal = _isatty(out)
        # On a terminal rich wraps lines at word boundaries; elsewhere a line stays one line.
        self.out = safe_console(out, soft_wrap=not terminal)
        self.err = safe_console(err, soft_wrap=not _isatty(err))
        self._answer: AnswerWriter
        if not terminal:
            self._answer = RawAnswer(out)
        elif plain:
            self._answer = WrappedAnswer(out, lambda: self.out.width)
        else:
            self._answer = MarkdownAnswer(self.out)
        self._streaming = False  # plain text of the answer is on the screen: no "generating" line now
        self._shown = False  # some text of this turn was shown (a discarded turn says so)
        self._tools: list[str] = []  # tools started and not yet ended

    def _line(self, text: str, style: str = "", *, err: bool = False) -> None:
        self._answer.end()
        (self.err if err else self.out).print(text, style=style or None, markup=False)

    def _show(self, progress: Progress) -> None:
        if self.status is not None:
            self.status.show(progress)

    def __call__(self, event: Event) -> None:
        if isinstance(event, TextDelta):
            if not self._streaming and not isinstance(self._answer, MarkdownAnswer):
                # Streamed text is its own progress; a status line would only flicker under it.
                self._streaming = True
                self._show(Progress(phase="idle"))
            self._answer.feed(event.text)
            self._shown = True
        elif isinstance(event, Progress):
            if event.phase == "generating" and self._streaming:
                return
            self._streaming = False
            self._show(event)
        elif isinstance(event, Info):
            for line in self._info_lines(event.fields):
                self._line(line, "dim")
        elif isinstance(event, TurnEnd):
            if event.truncated and self._shown:
                self._line(DISCARDED, "bold red")
            extra = " (server truncated the prompt)" if event.truncated else ""
            self._line(ctx_line(event.context, event.window, event.exact) + extra, "cyan")
            self._shown = False
        elif isinstance(event, ToolStart):
            self._line(
                f"> {sanitize(event.name, one_line=True)} {one_line(event.input, self._args_width())}", "bold"
            )
            self._tools.append(sanitize(event.name, one_line=True))
            self._show(Progress(phase="tool", detail=" ".join(dict.fromkeys(self._tools))))
        elif isinstance(event, ToolEnd):
            self._line(_tool_end_line(event), "green" if event.ok else "red")
            if event.name in self._tools:
                self._tools.remove(event.name)
            if not self._tools:
                self._show(Progress(phase="idle"))
        elif isinstance(event, ContextAction):
            self._line(self._context_text(event), "magenta")
        elif isinstance(event, ModelCheck) and event.restored:
            # A mismatch comes as a Warning naming both models.
            self._line(f"~ model restored on lane {event.lane}: {event.served}", "magenta")
        elif isinstance(event, Warning):
            self._line(f"! {event.message}", "yellow", err=True)
        elif isinstance(event, RunEnd):
            self._tools.clear()
            self._show(Progress(phase="idle"))
            self._line("")
            for note in unverified(event):
                self._line(sanitize(note), "yellow")
            self._line(result_line(event), "bold")
            if event.result.error and event.result.reason != "end_turn":
                self._line(f"! {event.result.error}", "red", err=True)

    def _args_width(self) -> int:
        """Arguments on one line that fits a terminal; ARGS_WIDTH elsewhere."""
        if not self.out.is_terminal:
            return ARGS_WIDTH
        return max(20, min(ARGS_WIDTH, self.out.width - 16))

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
        if "time_budget" in f:
            budget = float(f["time_budget"])  # type: ignore[arg-type]
            end = budget * (1 + LATE_ANSWER_SHARE.value)
            lines.append(
                f"each question: up to {f.get('max_turns')} model calls and {budget:g} s, then an answer "
                f"from what it has, stopped at {end:g} s (--max-turns, --time-budget)"
            )
        if f.get("tool_mode") == "constrained":
            lines.append("tools: each answer is one JSON step the server's schema forces (--tool-mode)")
        if f.get("answers") == "held":
            lines.append(HELD_NOTE.format(server=f.get("server")))
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
    """One JSON object per line (docs/json-events.md); the status line's Progress is not part of it."""

    def __init__(self, out: TextIO | None = None) -> None:
        self.out = out or sys.stdout

    def __call__(self, event: Event) -> None:
        if isinstance(event, Progress):
            return
        self.out.write(json_safe(event_to_json(event)) + "\n")
        self.out.flush()


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def fmt_bytes(n: int) -> str:
    """812 -> '812 B', 3400 -> '3.3 KiB', 2_500_000 -> '2.4 MiB'."""
    if n < 1024:
        return f"{n} B"
    if n < 1024 * 1024:
        return f"{n / 1024:.1f} KiB"
    return f"{n / (1024 * 1024):.1f} MiB"


def _tool_end_line(event: ToolEnd) -> str:
    if not event.ok:
        return f"  error: {event.error or 'failed'}"
    lines = "1 line" if event.lines == 1 else f"{event.lines} lines"
    size = f"{lines}, {fmt_bytes(event.bytes)}, ~{fmt_tokens(event.tokens)} tokens"
    note = ", truncated to cap" if event.truncated else ""
    return f"  ok ({event.duration_ms:.0f} ms; {size}{note})"
