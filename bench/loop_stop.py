"""What the loop stop (aforo.repeats) costs per megabyte a hostile server streams (issue 39, D16).

A server may stream any text in small pieces; the loop stop reads every answer. Before, each check (one
per 64 characters) sliced every passage size at each of the last sentence ends, and the text was kept
by concatenation: ~8 s of CPU per MB. Printed: milliseconds per MiB streamed in 64-character pieces,
for text that never loops (so it is read to the end): prose without repeats, lines of code that repeat
(a row is no loop, so every check finds it), near-loops whose every fourth copy differs, and a table of
identical rows; the target is under MAX_MS_PER_MIB each.
"""

from __future__ import annotations

import gc
import random
import sys
import time

from aforo.repeats import Repeats

MIB = 1024 * 1024
PIECE = 64
ROUNDS = 3
MAX_MS_PER_MIB = 1000.0


def prose() -> str:
    rng = random.Random(7)
    words = [
        "the",
        "a",
        "file",
        "module",
        "reads",
        "writes",
        "each",
        "line",
        "of",
        "text",
        "and",
        "returns",
        "counts",
        "words",
        "value",
        "key",
    ]
    return " ".join(rng.choice(words) for _ in range(MIB // 4))[:MIB]


def near_loop() -> str:
    copies = []
    for n in range(MIB // 40):
        copies.append(" The file is not used in the project." if n % 4 else f" Copy {n} differs here.")
    return "".join(copies)[:MIB]


KINDS = {
    "prose, no repeat": prose,
    "code lines repeated": lambda: ("    total = total + 1\n" * (MIB // 22))[:MIB],
    "table rows repeated": lambda: ("| n/a | n/a | n/a |\n" * (MIB // 20))[:MIB],
    "every 4th copy differs": near_loop,
}


def stream(text: str) -> float | None:
    """Milliseconds to feed `text` in PIECE-character pieces; None when it was taken for a loop."""
    repeats = Repeats()
    gc.collect()
    gc.disable()
    try:
        started = time.perf_counter()
        for i in range(0, len(text), PIECE):
            if repeats.feed(text[i : i + PIECE]):
                return None
        return (time.perf_counter() - started) * 1000
    finally:
        gc.enable()


def main() -> int:
    print(f"loop stop, ms per MiB streamed in {PIECE}-character pieces (fastest of {ROUNDS}); ", end="")
    print(f"target < {MAX_MS_PER_MIB:g}:")
    failed = []
    for name, make in KINDS.items():
        text = make()
        times = [stream(text) for _ in range(ROUNDS)]
        if None in times:  # none of them loops: the next row must survive (D15)
            print(f"  {name:24}  taken for a loop  <- MISSED")
            failed.append(name)
            continue
        ms = min(t for t in times if t is not None) * MIB / len(text)
        bad = ms >= MAX_MS_PER_MIB
        print(f"  {name:24} {ms:9.1f}{'  <- MISSED' if bad else ''}")
        if bad:
            failed.append(name)
    if failed:
        print(f"targets missed: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
