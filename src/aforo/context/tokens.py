"""Token estimates: ~4 characters per token, calibrated by the last real measurement (SPEC §2.3).

Estimates are cached per message object, so accounting a turn costs only the new messages, never a
re-serialization of the whole history. The cache is keyed by identity: messages are immutable, and a
stage that changes one builds a new object, which is counted afresh.
"""

from __future__ import annotations

import json
import math
import operator
from dataclasses import dataclass

from aforo.messages import Message, Request, TextBlock, ToolUse, messages_to_list
from aforo.reply_format import definition_chars, repeated_chars

CHARS_PER_TOKEN = 4
# Role markers and template framing that every message costs, in characters.
MESSAGE_OVERHEAD_CHARS = 16
# Below this the calibration ratio is not trusted to shrink a character budget further.
MIN_RATIO = 0.05


@dataclass(frozen=True)
class Count:
    """The prompt tokens of a request, whether they are `exact` (the model's tokenizer), and by whom.

    `estimated` is the calibrated estimate of the same request, which telemetry keeps next to an exact
    count (equal to `tokens` when the count is the estimate)."""

    tokens: int
    exact: bool
    counter: str
    estimated: int


def estimate_text(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def chars_for(tokens: int, ratio: float = 1.0) -> int:
    """How many characters hold `tokens` real tokens, given the calibrated tokens/estimate `ratio`."""
    return int(tokens * CHARS_PER_TOKEN / max(ratio, MIN_RATIO))


def frame_key(request: Request) -> int:
    """What identifies a request's fixed part (system prompt, tools, reply format) across turns."""
    return hash((request.system, tuple(t.name for t in request.tools), request.constrained))


def conversation_bytes(messages: list[Message] | tuple[Message, ...]) -> int:
    """Bytes and tokens are different units (SPEC §5): telemetry reports both."""
    return len(json.dumps(messages_to_list(messages), ensure_ascii=False).encode())


def message_chars(message: Message) -> int:
    chars = MESSAGE_OVERHEAD_CHARS
    for block in message.content:
        if isinstance(block, TextBlock):
            chars += len(block.text)
        elif isinstance(block, ToolUse):
            chars += len(block.name) + len(json.dumps(block.input, ensure_ascii=False))
        else:
            chars += len(block.content)
    return chars


def estimate_request(request: Request) -> int:
    """The raw (uncalibrated) estimate of a whole request; what the fake provider reports as usage."""
    chars = len(request.system_text) + definition_chars(request) + repeated_chars(request)
    chars += sum(message_chars(m) for m in request.messages)
    return math.ceil(chars / CHARS_PER_TOKEN)


@dataclass(frozen=True)
class Sample:
    """One measured request: what the server reported (`tokens`) for what we estimated (`estimate`)."""

    tokens: int
    estimate: int


class MessageEstimates:
    """Raw per-message sizes, cached by identity so a turn only measures what is new.

    Sizes are kept in characters and rounded once over the sum, so `total` agrees exactly with
    `estimate_request` (what the fake provider reports), whatever the number of messages.
    """

    def __init__(self) -> None:
        self._cache: dict[int, tuple[Message, int]] = {}
        # The last conversation summed and its total: a turn usually only appends to it.
        self._last: tuple[tuple[Message, ...], int] = ((), 0)

    def chars(self, message: Message) -> int:
        hit = self._cache.get(id(message))
        if hit is not None and hit[0] is message:
            return hit[1]
        value = message_chars(message)
        self._cache[id(message)] = (message, value)
        return value

    def of(self, message: Message) -> int:
        return math.ceil(self.chars(message) / CHARS_PER_TOKEN)

    def total_chars(self, messages: tuple[Message, ...] | list[Message]) -> int:
        old, old_total = self._last
        k = len(old)
        # Identity comparison runs at C speed; a changed message anywhere falls back to a full sum.
        if k and len(messages) >= k and all(map(operator.is_, messages[:k], old)):
            total = old_total + sum(self.chars(m) for m in messages[k:])
        else:
            total = sum(self.chars(m) for m in messages)
        self._last = (tuple(messages), total)
        return total

    def total(self, messages: tuple[Message, ...] | list[Message]) -> int:
        return math.ceil(self.total_chars(messages) / CHARS_PER_TOKEN)

    def prune(self, live: tuple[Message, ...] | list[Message]) -> None:
        """Forget messages no longer in the conversation (after a clear or compaction)."""
        keep = {id(m) for m in live}
        self._cache = {k: v for k, v in self._cache.items() if k in keep}


class Calibration:
    """Scales raw estimates by tokens/estimate of the last good, non-truncated measurement."""

    def __init__(self) -> None:
        self.measured: Sample | None = None

    @property
    def ratio(self) -> float:
        m = self.measured
        if m is None or m.estimate <= 0 or m.tokens <= 0:
            return 1.0
        return m.tokens / m.estimate

    def update(self, sample: Sample) -> None:
        # A provider that reports no usage (0) does not calibrate: the bare estimate is better than 0.
        if sample.tokens > 0 and sample.estimate > 0:
            self.measured = sample

    def scale(self, raw_estimate: int) -> int:
        return math.ceil(raw_estimate * self.ratio)


# No tokenizer spends more than this many tokens on one character (byte fallback on a 4-byte
# character), nor a chat template more than this many tokens of framing around a conversation.
MAX_TOKENS_PER_CHAR = 4
MAX_FRAMING_TOKENS = 1024


def impossible(sample: Sample, *, window: int, window_known: bool, exact: int | None) -> str | None:
    """Why a server's report of `sample.tokens` prompt tokens cannot be true of the request it answers
    (estimated at `sample.estimate`), or None when it can. Such a report must not calibrate anything:
    one of 999 999 999 tokens would make every later request look a million times too big."""
    tokens = sample.tokens
    if tokens < 0:
        return f"a negative count of prompt tokens ({tokens:,})"
    ceiling = sample.estimate * CHARS_PER_TOKEN * MAX_TOKENS_PER_CHAR + MAX_FRAMING_TOKENS
    if tokens > ceiling:
        return (
            f"{tokens:,} prompt tokens for a request of about {sample.estimate:,}: more than "
            f"{MAX_TOKENS_PER_CHAR} tokens per character"
        )
    if window_known and tokens > window:
        return f"{tokens:,} prompt tokens, more than the server's own window of {window:,}"
    if exact is not None and tokens > 2 * exact + MAX_FRAMING_TOKENS:
        return f"{tokens:,} prompt tokens for a request its own tokenizer counts at {exact:,}"
    return None
