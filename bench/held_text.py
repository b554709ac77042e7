"""Held-back answer text (issue 29, D1): an answer of repeated JSON openers, streamed in small pieces or
shown whole at the end, through `TextHold` and the constrained step's decoder.

Before the one-pass scan, `'{"name":"Read","arguments":'` x 1 500 / 3 000 / 6 000 repeats took 2.2 /
6.5 / 23.8 s (quadratic), x 12 000 91 s. Printed: milliseconds at 1 500 / 3 000 / 6 000 / 12 000 repeats
(the fastest of a few runs each, side by side) and the 12 000 / 3 000 ratio: linear ~4, quadratic ~16;
the target is under 8 (`scaling.MAX_RATIO`), and 12 000 repeats under 2 s.
"""

from __future__ import annotations

import gc
import sys
import time

from aforo.loop.text_hold import TextHold
from aforo.reply_stream import AnswerStream
from scaling import ATTEMPTS, MAX_RATIO, MIN_MS, ROUNDS

TOOLS = frozenset({"Read", "Grep", "Glob", "LS"})
REPEATS = (1_500, 3_000, 6_000, 12_000)
MAX_LARGEST_MS = 2000.0
PIECE = 4  # characters a streamed piece carries (a token or so)
OPENERS = ('{"name":"Read","arguments":', '{"a":', "[", '{"x{": ')


def hold(text: str, piece: int) -> None:
    held = TextHold(TOOLS)
    for i in range(0, len(text), piece):
        held.feed(text[i : i + piece])
    held.settle([])


def step(text: str, piece: int) -> None:
    decoder = AnswerStream()
    for i in range(0, len(text), piece):
        decoder.feed(text[i : i + piece])


def timed(run: object, text: str, piece: int) -> float:
    gc.collect()
    gc.disable()
    try:
        started = time.perf_counter()
        run(text, piece)  # type: ignore[operator]
        return (time.perf_counter() - started) * 1000
    finally:
        gc.enable()


def growth(run: object, unit: str, piece: int) -> list[float]:
    """The fastest run at each size, the sizes timed in turn; a miss is measured again before it counts."""
    best = [float("inf")] * len(REPEATS)
    for _attempt in range(ATTEMPTS):
        for _ in range(ROUNDS):
            for i, repeats in enumerate(REPEATS):
                best[i] = min(best[i], timed(run, unit * repeats, piece))
        if not missed(best):
            break
    return best


def missed(best: list[float]) -> bool:
    return (best[-1] >= MIN_MS and best[-1] / best[1] >= MAX_RATIO) or best[-1] >= MAX_LARGEST_MS


def main() -> int:
    sizes = " / ".join(f"{r:,}".replace(",", " ") for r in REPEATS)
    print(f"held-back text, ms at {sizes} repeats (fastest of {ROUNDS}+ runs), 12 000 / 3 000 ", end="")
    print(f"(linear ~4, quadratic ~16; target < {MAX_RATIO:g}):")
    cases = [("hold", hold, unit, piece) for unit in OPENERS for piece in (PIECE, len(unit) * REPEATS[-1])]
    cases.append(("step", step, "{" + " " * 26, PIECE))  # an answer step that never gets to its key
    failed = []
    for name, run, unit, piece in cases:
        best = growth(run, unit, piece)
        how = "whole" if piece > PIECE else f"by {piece}"
        times = " ".join(f"{ms:8.1f}" for ms in best)
        bad = missed(best)
        mark = "  <- MISSED" if bad else ""
        print(f"  {name} {unit[:28]!r:32} {how:6} {times}   x{best[-1] / best[1]:4.1f}{mark}")
        if bad:
            failed.append(f"{name} {unit[:28]!r} {how}")
    if failed:
        print(f"targets missed: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
