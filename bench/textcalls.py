"""Text tool-call parsing speed: every answer of a model without structured tool calls is scanned, and
the answer is the model's to make, so the scan must be linear in it whatever it holds.

For sizes x1, x2, x4, x8 of adversarial answers (openers with no closers, nested calls, unclosed tags
and fences, thousands of calls, broken strings) it prints the time per size; the x8 / x1 ratio must
stay under 16 (linear is ~8, quadratic ~64) and the largest (800 KB) case under 2 s. Before the
rewrite, 1000 `[` or nested calls raised RecursionError.
"""

from __future__ import annotations

import sys
import time

from aforo.providers.textcalls import extract_text_tool_calls

BASE = 100_000  # characters; the largest size is 8 x BASE
MAX_RATIO = 16.0
MIN_MS = 20.0
MAX_LARGEST_MS = 2000.0
TOOLS = frozenset({"Read", "Grep", "Glob", "LS"})
CALL = '{"name": "Read", "arguments": {"file_path": "src/app.py"}}'

ADVERSARIAL = (
    "[",
    "{",
    '{"a": ',
    '{"name": "Read", "arguments": ',
    '["',
    '[{"x": "\n',
    "[1}",
    "```",
    "```json\n",
    "<tool_call>",
    "<tool_call> ",
    "{'name': 'Read', 'arguments': ",
    '"\\',
    CALL,
    "[" + CALL,
    f"<tool_call>{CALL}</tool_call>\n",
    f"```json\n{CALL}\n```\n",
    f"I will read it: {CALL} and then ",
)


def timed(text: str) -> float:
    """Milliseconds for one parse, best of 3."""
    runs = []
    for _ in range(3):
        started = time.perf_counter()
        extract_text_tool_calls(text, TOOLS)
        runs.append(time.perf_counter() - started)
    return min(runs) * 1000


def main() -> int:
    failed = []
    sizes = [BASE * k for k in (1, 2, 4, 8)]
    print(f"text tool calls, ms per answer size ({', '.join(f'{s // 1000} KB' for s in sizes)}) and x8/x1:")
    for unit in ADVERSARIAL:
        times = [timed((unit * (size // len(unit) + 1))[:size]) for size in sizes]
        # Below MIN_MS the growth is timer noise, not the algorithm's: only the size target applies.
        ratio = times[-1] / times[0] if times[-1] >= MIN_MS else 0.0
        bad = ratio >= MAX_RATIO or times[-1] >= MAX_LARGEST_MS
        cells = " ".join(f"{t:8.1f}" for t in times)
        growth = f"x{ratio:4.1f}" if ratio else "  fast"
        print(f"  {unit[:34]!r:38} {cells}   {growth}{'  <- MISSED' if bad else ''}")
        if bad:
            failed.append(repr(unit[:34]))
    if failed:
        print(f"targets missed: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
