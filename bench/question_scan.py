"""What a run reads of the question before its first request, on hostile questions (issue 39, D1).

Every scan of the typed question or the piped text that stands for it: the pre-search's names, paths
and compounds (aforo.navigate.terms), the `@path` mentions, and whether piped text is asked about alone.
Before, the path and range patterns backtracked inside long words: `a1.x` x 1 000 / 2 000 / 4 000
(4 000 / 8 000 / 16 000 characters) took 2.0 / 5.1 / 16.5 s, x3.2 per doubling, and 1 MiB piped with no
question sent nothing in 120 s.

Printed: milliseconds per size (the fastest of a few runs), and the growth per doubling from the
second size to the last (linear ~2, quadratic ~4); the target is under MAX_GROWTH, and the largest
size under MAX_LARGEST_MS. `--largest N` stops at N characters (to time an older checkout, whose
quadratic scans would take hours at 1 MiB).
"""

from __future__ import annotations

import argparse
import gc
import sys
import time

from aforo.cli.mentions import mentioned_paths
from aforo.cli.piped import Prompt
from aforo.navigate.terms import compound_terms, question_paths, question_terms

SIZES = (4_000, 8_000, 16_000, 32_000, 64_000, 128_000, 256_000, 512_000, 1_048_576)
ROUNDS = 3
MAX_GROWTH = 2.8  # per doubling: linear time grows ~2x, quadratic ~4x
MIN_MS = 20.0  # below this at the largest size, the growth is timer noise
MAX_LARGEST_MS = 8000.0  # 1 MiB, on two cores shared with other work
UNITS = (
    "a1.x",  # the issue's: one long word, a dot and a digit in each unit
    "a/",  # `where is ` + `a/` x 50 000
    "a1.py-",  # numbered names glued by separators, each a range's first
    "a1.py to ",  # the same between spaces
    "1.py...",
    "mod1.py-b",
    "1",
    "@a ",
    "`x ",
    "default key ",  # runs of words a compound is made of
)


def scan(question: str) -> None:
    """What the CLI and the pre-search read of a question before the first request."""
    question_terms(question)
    question_paths(question)
    compound_terms(question)
    mentioned_paths(question)
    _ = Prompt(question, "piped").from_text


def timed(text: str) -> float:
    gc.collect()
    gc.disable()
    try:
        started = time.perf_counter()
        scan(text)
        return (time.perf_counter() - started) * 1000
    finally:
        gc.enable()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--largest", type=int, default=SIZES[-1], help="the largest size timed")
    sizes = [s for s in SIZES if s <= parser.parse_args().largest]
    shown = " ".join(f"{s:>8,}".replace(",", " ") for s in sizes)
    print(f"question scan, ms per size in characters (fastest of {ROUNDS}), growth per doubling from the")
    print(f"second size (linear ~2, quadratic ~4; target < {MAX_GROWTH:g}):")
    print(f"  {'unit':14} {shown}")
    failed = []
    for unit in UNITS:
        best = [min(timed(unit * (size // len(unit))) for _ in range(ROUNDS)) for size in sizes]
        growth = (best[-1] / max(best[1], 0.001)) ** (1 / max(1, len(sizes) - 2))
        bad = (best[-1] >= MIN_MS and growth >= MAX_GROWTH) or best[-1] >= MAX_LARGEST_MS
        times = " ".join(f"{ms:8.1f}" for ms in best)
        print(f"  {unit!r:14} {times}   x{growth:.2f}{'  <- MISSED' if bad else ''}")
        if bad:
            failed.append(repr(unit))
    if failed:
        print(f"targets missed: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
