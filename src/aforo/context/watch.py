"""After a call: did the server silently drop part of the prompt? (SPEC §4)

The watch keeps what detection compares against: the last sample judged good and how many messages it
covered. A suspicion is settled by measuring the new content alone (a max_tokens=1 request, and once a
baseline); a possible window crossing needs no request when the server's cache hit shows it read the
previous prompt (`old_part_cached`; measured in the task suite: 4 989 tokens of checks became none).
Only a clean answer calibrates the estimate. When the conversation is replaced, growth restarts
(`reset`).

The measuring requests carry no system prompt: one that began like the conversation (the same system
prompt and tools) made llama-server reuse the conversation's slot in place and lose its cache (measured:
the next turn evaluated 2 220 of 3 334 prompt tokens again, 48 % reuse); one that shares nothing with it
is served beside it, and the next turn reuses the whole conversation (12 tokens evaluated).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from aforo.context.counting import Meter
from aforo.context.overflow import (
    CACHE_FRAMING,
    COMMON_WINDOWS,
    MAX_CONTENT_RATIO,
    TruncationDetector,
    Verdict,
    generation_overflow,
)
from aforo.context.tokens import Sample, estimate_text, frame_key, impossible
from aforo.errors import ContextOverflowError, ProviderError
from aforo.events import EventSink, Warning, phase
from aforo.messages import Message, MessageEnd, Request
from aforo.protocols import Provider
from aforo.reply_format import appended_question
from aforo.stream import collect


@dataclass(frozen=True)
class Observation:
    truncated: bool
    sample: Sample
    message: str = ""
    context_shift: bool = False
    reason: str = ""


class Watch:
    def __init__(self, meter: Meter, emit: EventSink, *, window_known: bool) -> None:
        self.meter = meter
        self.emit = emit
        # When the server itself told us its window, only that one can be crossed: fewer probes.
        self.detector = TruncationDetector(() if window_known else COMMON_WINDOWS)
        self.window_known = window_known
        self._told_impossible = False
        self.prev: Sample | None = None
        self._prev_len = 0
        # What the prev request's wire form wrote after its newest results, gone from it once they are not.
        self._prev_tail = ""
        # The first request judged good since the conversation began or was replaced: its prompt tokens
        # and how many messages it held (its tokens bound where those messages end in any later prompt).
        self._first: tuple[int, int] | None = None
        # Prompt tokens of a one-character request with these tools and this reply format, per frame_key.
        self._baseline: dict[int, int] = {}

    def reset(self) -> None:
        self.prev = None
        self._prev_len = 0
        self._prev_tail = ""
        self._first = None

    def observe(
        self, request: Request, end: MessageEnd, provider: Provider, exact: int | None, window: int
    ) -> Observation:
        cur = Sample(end.usage.prompt_tokens, self.meter.raw(request))
        why = end.usage_refused or impossible(cur, window=window, window_known=self.window_known, exact=exact)
        if why is not None:
            # Treated as no report at all: it neither calibrates nor judges truncation.
            self._tell_impossible(why)
            return Observation(False, Sample(0, cur.estimate))
        shift = generation_overflow(cur.tokens, end.usage.output_tokens, window)
        if shift:
            self.emit(
                Warning(
                    message=f"The server reports {cur.tokens} prompt + {end.usage.output_tokens} generated "
                    f"tokens, more than the {window}-token window: it may have shifted context while "
                    "generating, so this answer may have lost the start of the conversation."
                )
            )
        if cur.tokens <= 0:
            return Observation(False, cur, context_shift=shift)
        new = request.messages[self._prev_len :] if self.prev else request.messages
        verdict = self.detector.assess(
            self.prev,
            cur,
            ratio=self.meter.calibration.ratio,
            window=window,
            new_estimate=self.meter.estimates.total(new),
            exact=exact,
            old_cached=self.old_part_cached(request, end.usage.cache_read_tokens),
        )
        if verdict.status == "suspect":
            verdict = self._resolve(verdict, request, new, provider)
        if verdict.status == "truncated":
            return Observation(True, cur, silent_overflow_message(verdict), shift, verdict.reason)
        self.meter.calibration.update(cur)
        self.prev = cur
        self._first = self._first or (cur.tokens, len(request.messages))
        self._prev_len = len(request.messages)
        self._prev_tail = appended_question(request)
        return Observation(False, cur, context_shift=shift)

    def old_part_cached(self, request: Request, cached: int) -> int:
        """`cached` when that many of the prompt's first tokens, taken from the server's cache, show it
        read the previous prompt whole; else 0.

        A server that drops messages to fit starts at the oldest (keep-newest, as Ollama does) or at the
        one after the first (truncate-middle); from there the prompt it reads differs from the one it had
        cached, and so does its cache hit. The hit must then reach the end of the previous prompt but for
        the question that prompt repeated after its results (moved to the end since, so no longer there),
        and past the first message added after the first good request (whose tokens bound where the
        messages it held end). A drop that starts later than that, inside the newest messages, is not
        ruled out: no server is known to truncate there.
        """
        if self.prev is None or self._first is None or cached <= 0:
            return 0
        tail = self._prev_tail
        need = self.prev.tokens - (_bound(estimate_text(f"\n\n{tail}")) if tail else 0)
        first_tokens, first_len = self._first
        if first_len < min(self._prev_len, len(request.messages)):
            first_tokens += _bound(self.meter.estimates.of(request.messages[first_len]))
        return cached if cached >= max(need, first_tokens) else 0

    def _tell_impossible(self, why: str) -> None:
        if not self._told_impossible:
            self._told_impossible = True
            self.emit(
                Warning(
                    message=f"The server reported {why}, which cannot be true: such usage reports are "
                    "ignored (they calibrate nothing); counts stay estimated."
                )
            )

    def _resolve(
        self, verdict: Verdict, request: Request, new: tuple[Message, ...], provider: Provider
    ) -> Verdict:
        """Measure the new content alone (a max_tokens=1 request) to settle a suspicion."""
        tail = self._prev_tail if self.prev else ""
        # The baseline depends on the framing, the tail and the opening (two turns before a user turn).
        after_user = bool(new) and new[0].role == "user"
        key = hash((frame_key(replace(request, system=())), tail, after_user))
        try:
            with phase(self.emit, "probing", "measuring the new messages"):
                tokens, self._baseline[key] = measure_new_content(
                    provider, request, new, self._baseline.get(key), tail
                )
        except ProviderError as exc:
            # Unresolved suspicion fails safe: trusting it could mean answering without the task.
            self.emit(Warning(message=f"Could not measure the new content to check for truncation: {exc}"))
            return replace(
                verdict, status="truncated", reason=f"{verdict.reason}; the new content could not be measured"
            )
        return self.detector.resolve(verdict, tokens)


def _bound(estimate: int) -> int:
    """At most how many tokens content of this raw estimate takes in a prompt, with a turn's framing."""
    return math.ceil(MAX_CONTENT_RATIO * estimate) + CACHE_FRAMING


def measure_new_content(
    provider: Provider,
    request: Request,
    new: tuple[Message, ...],
    baseline: int | None = None,
    tail: str = "",
) -> tuple[int, int]:
    """Prompt tokens of the messages `new` alone, as the server counts them, and the baseline used.

    They are sent as the request rendered them (its tools, reply format and question: the same framing
    as in the conversation) behind a minimal opening turn and without the system prompt, and a baseline
    of that opening alone is subtracted, so the template and the tool definitions cancel out. Both
    requests ask for one token; the caller keeps the baseline, which only changes with the tools, the
    `tail` and whether the opening is one turn or two.

    `tail` is what the previous request wrote after its newest results and this one no longer writes
    there (steps.appended_question): the prompt grew by that much less, so the baseline's opening
    carries it and it is subtracted too.
    """
    opening: tuple[Message, ...] = (Message.user("."),)
    if new and new[0].role == "user":
        opening = (*opening, Message.assistant("."))
    bare = replace(request, system=(), max_tokens=1)
    measured = collect(provider, bare.with_messages((*opening, *new))).end.usage.prompt_tokens
    if baseline is None:
        base = (Message.user(f".\n\n{tail}" if tail else "."), *opening[1:])
        baseline = collect(provider, bare.with_messages(base)).end.usage.prompt_tokens
    return max(0, measured - baseline), baseline


def silent_overflow_message(verdict: Verdict) -> str:
    real = verdict.seems_real_window
    suggest = f" --context-window {real}" if real else " --context-window N (smaller)"
    return (
        f"The server silently dropped part of the conversation: {verdict.reason}. "
        "Its answer was discarded and your conversation is intact. "
        + (f"The real window seems to be about {real} tokens. " if real else "")
        + f"Fix: run with{suggest}, or on Ollama raise num_ctx (OLLAMA_CONTEXT_LENGTH) or use "
        "--server ollama so aforo sets it."
    )


def recovery_failed(refused: ContextOverflowError, failure: Exception, lane: str) -> str:
    """Why a run ends when the one recovery from a loud refusal failed (SPEC §5, §9)."""
    where = f" (server window {refused.n_ctx} tokens)" if refused.n_ctx else ""
    return (
        f"The server refused the request as too long{where}, and the one recovery (a compaction with "
        f"summaries on lane {lane!r}) did not make it fit: {failure} The conversation is as it was before "
        "the recovery (nothing it changed was kept). Fix: set the real window with --context-window N, "
        "point compact_lane at a lane with more room, or start a new conversation."
    )


def loud_overflow_message(exc: ContextOverflowError) -> str:
    where = f" (server window {exc.n_ctx} tokens)" if exc.n_ctx else ""
    return (
        f"The server refused the request as too long{where}: {exc}. The conversation is intact. "
        "Fix: set the real window with --context-window N so aforo clears and compacts in time, "
        "or start a new conversation."
    )
