"""The context policy (SPEC §3): five numbers that say when each stage fires and what it keeps.

One tool result takes at most `cap_fraction` of the available window and `max_tool_result_tokens`
(stage 1, the cap); past `clear_at` of it, old tool results are cleared but the newest
`keep_tool_results` (stage 2); past `compact_at`, the conversation is compacted (stage 3).
"""

from __future__ import annotations

from dataclasses import dataclass

from aforo.context.budget import Budget


# Keywords only: five numbers in a row, two of them fractions, are too easy to pass in the wrong order.
@dataclass(frozen=True, kw_only=True)
class Policy:
    max_tool_result_tokens: int = 25_000
    clear_at: float = 0.6
    compact_at: float = 0.85
    keep_tool_results: int = 6
    cap_fraction: float = 0.2

    def __post_init__(self) -> None:
        if self.max_tool_result_tokens < 1:
            raise ValueError(f"max_tool_result_tokens must be >= 1, got {self.max_tool_result_tokens}")
        if not 0 < self.clear_at <= 1:
            raise ValueError(f"clear_at must be a fraction in (0, 1], got {self.clear_at}")
        if not 0 < self.compact_at <= 1:
            raise ValueError(f"compact_at must be a fraction in (0, 1], got {self.compact_at}")
        if self.clear_at > self.compact_at:
            raise ValueError(
                f"clear_at ({self.clear_at}) must not exceed compact_at ({self.compact_at}): "
                "clearing is the cheaper stage and must fire first"
            )
        if self.keep_tool_results < 0:
            raise ValueError(f"keep_tool_results must be >= 0, got {self.keep_tool_results}")
        if not 0 < self.cap_fraction <= 1:
            raise ValueError(f"cap_fraction must be a fraction in (0, 1], got {self.cap_fraction}")

    def cap_tokens(self, budget: Budget) -> int:
        """No single tool result may exceed this many tokens (stage 1)."""
        return max(1, min(int(self.cap_fraction * budget.available), self.max_tool_result_tokens))

    def clear_threshold(self, budget: Budget) -> float:
        return self.clear_at * budget.available

    def compact_threshold(self, budget: Budget) -> float:
        return self.compact_at * budget.available
