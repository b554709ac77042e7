"""The window, the reserve for the answer and the space left for the prompt (SPEC §2.2).

The reserve is also the `max_tokens` sent: if prompt + generation overflow the window, a server shifts
context during generation and still reports the whole prompt, a loss that cannot be detected, only
prevented by reserving room for the answer up front.
"""

from __future__ import annotations

from dataclasses import dataclass

from aforo.context.tokens import Count

RESERVE_FRACTION = 0.25
DEFAULT_WINDOW = 4096
DEFAULT_MAX_TOKENS = 8192


@dataclass(frozen=True)
class Budget:
    window: int
    max_tokens: int = DEFAULT_MAX_TOKENS
    source: str = "default"

    def __post_init__(self) -> None:
        if self.window < 1:
            raise ValueError(f"context window must be a positive number of tokens, got {self.window}")
        if self.max_tokens < 1:
            raise ValueError(f"max_tokens must be a positive number of tokens, got {self.max_tokens}")

    @property
    def reserve(self) -> int:
        return max(1, min(self.max_tokens, int(self.window * RESERVE_FRACTION)))

    @property
    def available(self) -> int:
        return max(1, self.window - self.reserve)

    def refusal(self, count: Count) -> str:
        """Why a request of `count` tokens is not sent, and what the user can do about it."""
        return (
            f"The request needs {count.tokens} tokens ({'exact' if count.exact else 'estimated'}) but only "
            f"{self.available} fit (window {self.window} minus {self.reserve} reserved for the answer), "
            "even after clearing and compaction. Nothing was sent. Shorten the prompt, start a new "
            "conversation, or raise --context-window if the server really has more room."
        )

    def smaller(self, real: int | None) -> Budget | None:
        """The budget of the window a server named in its "too long" error, when it is smaller than this
        one; None: it named none, or none smaller."""
        if real is None or real >= self.window:
            return None
        return Budget(real, self.max_tokens, "server error")

    def adopted(self, window: int) -> str:
        """What the user is told when this budget replaces one of `window` tokens after a loud overflow."""
        real = self.window
        return (
            f"The server says its window is {real} tokens, not {window}: using {real} from now on, "
            f"compacting once and retrying once. Pass --context-window {real} to start with it."
        )
