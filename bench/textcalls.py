"""Text tool-call parsing speed: every answer of a model without structured tool calls is scanned, and
the answer is the model's to make, so the scan must be linear in it whatever it holds.

Adversarial answers (openers with no closers, nested calls, unclosed tags and fences, thousands of
calls, broken strings) are each timed at 200 KB and at 800 KB, side by side (the two sizes alternate,
several rounds, the fastest run of each kept): the 800 KB / 200 KB ratio must stay under 8 (linear
code gives ~4, quadratic ~16) and the 800 KB case under 2 s. Before the rewrite, 1000 `[` or nested
calls raised RecursionError.

The verdict rests on a ratio of times taken together, so a machine slowed by other work (a test run
sharing its cores) slows both sizes alike and the ratio stands; the fastest of several runs drops the
runs a burst of that work hit. A unit that misses is measured again, with more rounds, before it
counts: a quadratic one misses every time.
"""

from __future__ import annotations

import sys

from aforo.loop.textcalls import extract_text_tool_calls
from scaling import MAX_RATIO, MIN_MS, ROUNDS, Scaling

SMALL = 200_000  # characters; the large input is 4x
LARGE = 4 * SMALL
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


SCALING = Scaling(lambda text: extract_text_tool_calls(text, TOOLS), SMALL, MAX_LARGEST_MS)


def main() -> int:
    failed = []
    print(
        f"text tool calls, ms at {SMALL // 1000} KB and {LARGE // 1000} KB (fastest of {ROUNDS}+ runs "
        f"each, side by side) and their ratio (linear ~4, quadratic ~16; target < {MAX_RATIO:g}):"
    )
    for unit in ADVERSARIAL:
        small, large = SCALING.growth(unit)
        bad = SCALING.missed(small, large)
        growth_shown = f"x{large / small:4.1f}" if large >= MIN_MS else "  fast"
        print(f"  {unit[:34]!r:38} {small:8.1f} {large:8.1f}   {growth_shown}{'  <- MISSED' if bad else ''}")
        if bad:
            failed.append(repr(unit[:34]))
    if failed:
        print(f"targets missed: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
