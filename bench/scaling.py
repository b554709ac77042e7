"""Whether a function runs in linear time on adversarial input: timed at 1x and 4x its size side by side.

Absolute times move with the machine's load (both benchmarks missed while another pytest shared the two
cores); their ratio does not, much: a linear function takes ~4x as long at 4x the input, a quadratic one
~16x. Runs alternate between the two sizes and the fastest of each counts; a miss is measured again
before it counts.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from dataclasses import dataclass

ROUNDS = 5
ATTEMPTS = 3  # a missed unit is measured again (ROUNDS more each time) before it counts
MAX_RATIO = 8.0  # the large input is 4x the small one: linear time grows ~4x, quadratic ~16x
MIN_MS = 20.0  # below this at the large size, the growth is timer noise, not the algorithm's


@dataclass(frozen=True)
class Scaling:
    run: Callable[[str], object]
    small: int  # characters
    max_largest_ms: float  # the large input may take at most this long, whatever the ratio

    @property
    def large(self) -> int:
        return 4 * self.small

    def timed(self, text: str) -> float:
        """Milliseconds for one call, the garbage collector off."""
        gc.collect()
        gc.disable()
        try:
            started = time.perf_counter()
            self.run(text)
            return (time.perf_counter() - started) * 1000
        finally:
            gc.enable()

    def missed(self, small: float, large: float) -> bool:
        grew = large >= MIN_MS and large / small >= MAX_RATIO
        return grew or large >= self.max_largest_ms

    def growth(self, unit: str, vary: Callable[[str], str] = lambda text: text) -> tuple[float, float]:
        """The fastest of the runs at the small and the large size, timed alternately; `vary` makes each
        run's input new (a memo must not answer)."""
        texts = (repeated(unit, self.small), repeated(unit, self.large))
        best = [float("inf"), float("inf")]
        for _attempt in range(ATTEMPTS):
            for _ in range(ROUNDS):
                for i, text in enumerate(texts):
                    best[i] = min(best[i], self.timed(vary(text)))
            if not self.missed(best[0], best[1]):
                break
        return best[0], best[1]


def repeated(unit: str, size: int) -> str:
    """`unit` repeated whole to about `size` characters (a cut unit would be another input)."""
    return unit * max(1, round(size / len(unit)))
