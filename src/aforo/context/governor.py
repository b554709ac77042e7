"""The governor: admission before every model call, observation after it (SPEC §3-§5).

Before a call it counts the request, clears old tool results past `clear_at`, compacts past
`compact_at` (through a transaction: checkpoint, transform in memory, recount, keep only if it fits)
and refuses locally to send what cannot fit. After a call it decides whether the server silently
dropped part of the prompt; only a clean measurement calibrates the estimate. Every step leaves a
telemetry record, and every transformation a checkpoint first.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace
from typing import Any

from aforo.context.budget import Budget
from aforo.context.compaction import CompactionError
from aforo.context.ledger import build_ledger
from aforo.context.overflow import COMMON_WINDOWS, TruncationDetector, Verdict, generation_overflow
from aforo.context.policy import Policy
from aforo.context.stages import clear_old_results
from aforo.context.tokens import CHARS_PER_TOKEN, Calibration, MessageEstimates, Sample, tools_chars
from aforo.context.transaction import compact, conversation_bytes
from aforo.context.undo import UNDO_REASON, Restore, choose
from aforo.errors import ProviderError, RejectedError, StoreError
from aforo.events import ContextAction, EventSink, Warning
from aforo.messages import Message, MessageEnd, Request
from aforo.protocols import Journal, Provider, TokenCounter

# How a warning names each checkpointed transformation.
_DOING = {"clear": "clearing", "compact": "compacting", "manual_clear": "clearing", UNDO_REASON: "undoing"}


@dataclass(frozen=True)
class Prepared:
    """A request admitted for sending. `restore` holds the history before a transformation, if any."""

    request: Request
    tokens: int
    exact: bool
    restore: tuple[Message, ...] | None = None
    checkpoint: str | None = None


@dataclass(frozen=True)
class Observation:
    truncated: bool
    sample: Sample
    message: str = ""
    context_shift: bool = False


@dataclass
class Facts:
    """What telemetry and checkpoints say about where we run."""

    model: str = ""
    server: str = ""
    window_source: str = ""
    session: str = ""


class Governor:
    def __init__(
        self,
        *,
        budget: Budget,
        policy: Policy,
        journal: Journal,
        emit: EventSink,
        counter: TokenCounter | None = None,
        facts: Facts | None = None,
        window_known: bool = False,
    ) -> None:
        self.budget = budget
        self.policy = policy
        self.journal = journal
        self.emit = emit
        self.counter = counter
        self.facts = facts or Facts()
        self.calibration = Calibration()
        self.estimates = MessageEstimates()
        # When the server itself told us its window, only that one can be crossed: fewer probes.
        self.detector = TruncationDetector(() if window_known else COMMON_WINDOWS)
        self.prev: Sample | None = None
        self._prev_len = 0
        self._fixed: tuple[int, int] = (0, 0)
        # Prompt tokens of a one-character request with this system prompt and tools, per (system, tools).
        self._baseline: dict[int, int] = {}
        # The checkpoint the last /undo restored: the next one goes further back from there.
        self._undone: str | None = None

    # --- counting --------------------------------------------------------------------------------

    @property
    def counter_name(self) -> str:
        return self.counter.name if self.counter else "estimate"

    def raw_estimate(self, request: Request) -> int:
        """Uncalibrated estimate; system and tools are sized once, messages through the per-message cache."""
        key = hash((request.system, tuple(t.name for t in request.tools)))
        if self._fixed[0] != key:
            self._fixed = (key, len(request.system_text) + tools_chars(request.tools))
        return math.ceil((self._fixed[1] + self.estimates.total_chars(request.messages)) / CHARS_PER_TOKEN)

    def count(self, request: Request) -> tuple[int, bool]:
        """Tokens of `request` and whether the count is exact (the model's own tokenizer)."""
        if self.counter is not None:
            try:
                return self.counter.count(request), True
            except ProviderError as exc:
                self.emit(
                    Warning(f"Exact token counter {self.counter.name} failed ({exc}); using estimates.")
                )
                self.counter = None
        return self.calibration.scale(self.raw_estimate(request)), False

    def reset_detection(self) -> None:
        """The conversation changed shape (clear, compaction, model change): growth restarts from here."""
        self.prev = None
        self._prev_len = 0

    def set_window(self, window: int, source: str) -> None:
        self.budget = Budget(window, self.budget.max_tokens, source)
        self.facts.window_source = source

    # --- before a call ---------------------------------------------------------------------------

    def prepare(
        self,
        request: Request,
        provider: Provider,
        *,
        force_compact: bool = False,
        instructions: str | None = None,
    ) -> Prepared:
        started = time.monotonic()
        tokens, exact = self.count(request)
        restore: tuple[Message, ...] | None = None
        checkpoint: str | None = None
        if tokens > self.policy.clear_threshold(self.budget):
            cleared = clear_old_results(list(request.messages), self.policy.keep_tool_results)
            candidate = request.with_messages(cleared.messages)
            after, after_exact = self.count(candidate) if cleared.count else (tokens, exact)
            # Checkpointed and applied only when it really saves room.
            cp = self.take_checkpoint("clear", request, tokens) if after < tokens else None
            if cp is not None:
                restore, checkpoint = request.messages, cp
                self.emit(ContextAction("cleared", tokens, after, count=cleared.count, checkpoint=cp))
                self.record(
                    "clearing",
                    candidate,
                    tokens,
                    after,
                    started,
                    checkpoint=cp,
                    bytes_before=conversation_bytes(restore),
                    bytes_after=conversation_bytes(candidate.messages),
                )
                request, tokens, exact = candidate, after, after_exact
                self.estimates.prune(candidate.messages)  # the cleared originals need not stay in memory
                self.reset_detection()
        over = tokens > self.policy.compact_threshold(self.budget)
        # Before the model has answered once there is nothing to summarize: admission decides alone.
        if force_compact or (over and any(m.role == "assistant" for m in request.messages)):
            original = request.messages
            try:
                request, cp, tokens, exact = compact(self, request, provider, tokens, instructions)
            except CompactionError as exc:
                self.emit(Warning(f"Compaction failed: {exc}"))
                self.record("rejection", request, tokens, tokens, started, cause=f"compaction: {exc}")
                if force_compact:
                    raise
            else:
                restore = restore or original
                checkpoint = cp
        if tokens > self.budget.available:
            cause = "does_not_fit"
            self.record("rejection", request, tokens, tokens, started, cause=cause)
            raise RejectedError(
                f"The request needs {tokens} tokens ({'exact' if exact else 'estimated'}) but only "
                f"{self.budget.available} fit (window {self.budget.window} minus {self.budget.reserve} "
                "reserved for the answer), even after clearing and compaction. Nothing was sent. "
                "Shorten the prompt, start a new conversation, or raise --context-window if the "
                "server really has more room.",
                cause=cause,
            )
        self.record("admission", request, tokens, tokens, started)
        return Prepared(request, tokens, exact, restore, checkpoint)

    def restore(self, prepared: Prepared, why: str) -> tuple[Message, ...]:
        """Undo this call's transformation after the provider failed (one bounded recovery)."""
        if prepared.restore is None:
            return prepared.request.messages
        before = prepared.tokens
        after = self.count(prepared.request.with_messages(prepared.restore))[0]
        self.emit(ContextAction("restored", before, after, checkpoint=prepared.checkpoint))
        self.record("recovery", prepared.request, before, after, time.monotonic(), cause=why)
        self.reset_detection()
        return prepared.restore

    # --- explicit actions (the REPL's /compact, /clear, /undo) -------------------------------------

    def compact_now(self, request: Request, provider: Provider, instructions: str | None = None) -> Request:
        """Compact on request, through the same transaction. Raises CompactionError, history untouched."""
        before, _exact = self.count(request)
        return compact(self, request, provider, before, instructions)[0]

    def start_over(self, request: Request) -> str:
        """Forget the conversation, after a checkpoint that /undo can restore. Raises StoreError."""
        before, _exact = self.count(request)
        cp = self.take_checkpoint("manual_clear", request, before)
        if cp is None:
            raise StoreError("the checkpoint could not be written, so the conversation was kept")
        after = self.count(request.with_messages(()))[0]
        self.emit(ContextAction("reset", before, after, count=len(request.messages), checkpoint=cp))
        self.reset_detection()
        return cp

    def undo(self, request: Request, wanted: str | None = None) -> tuple[Restore, str | None] | None:
        """Restore one transformation further back (or the checkpoint `wanted`); None: nothing to undo.

        Returns what is restored and the checkpoint that now holds the conversation it replaces (None
        when that conversation was empty). Raises StoreError when a checkpoint cannot be read or the
        current conversation cannot be checkpointed first: then nothing changes.
        """
        current = request.messages
        chosen = choose(self.journal.checkpoint_history(), current, below=self._undone, wanted=wanted)
        if chosen is None:
            return None
        before = self.count(request)[0]
        kept = None
        if current:
            kept = self.take_checkpoint(UNDO_REASON, request, before)
            if kept is None:
                raise StoreError(
                    "the conversation as it is could not be checkpointed first, so nothing was undone"
                )
        self._undone = chosen.checkpoint
        after = self.count(request.with_messages(chosen.messages))[0]
        self.emit(
            ContextAction("restored", before, after, count=len(chosen.messages), checkpoint=chosen.checkpoint)
        )
        self.record(
            "recovery", request, before, after, time.monotonic(), cause="undo", checkpoint=chosen.checkpoint
        )
        self.reset_detection()
        return chosen, kept

    # --- after a call ----------------------------------------------------------------------------

    def observe(
        self, request: Request, end: MessageEnd, provider: Provider, exact: int | None
    ) -> Observation:
        raw = self.raw_estimate(request)
        cur = Sample(end.usage.prompt_tokens, raw)
        shift = generation_overflow(cur.tokens, end.usage.output_tokens, self.budget.window)
        if shift:
            self.emit(
                Warning(
                    f"The server reports {cur.tokens} prompt + {end.usage.output_tokens} generated tokens, "
                    f"more than the {self.budget.window}-token window: it may have shifted context while "
                    "generating, so this answer may have lost the start of the conversation."
                )
            )
        if cur.tokens <= 0:
            return Observation(False, cur, context_shift=shift)
        new = request.messages[self._prev_len :] if self.prev else request.messages
        verdict = self.detector.assess(
            self.prev,
            cur,
            ratio=self.calibration.ratio,
            window=self.budget.window,
            new_estimate=self.estimates.total(new),
            exact=exact,
        )
        if verdict.status == "suspect":
            verdict = self._resolve(verdict, request, new, provider)
        if verdict.status == "truncated":
            self.journal.record(
                "overflow",
                session=self.facts.session,
                tokens_estimated=raw,
                tokens_exact=exact,
                tokens_after=cur.tokens,
                cause=verdict.reason,
                **self._where(),
            )
            return Observation(True, cur, self._overflow_message(cur, verdict), shift)
        self.calibration.update(cur)
        self.prev = cur
        self._prev_len = len(request.messages)
        return Observation(False, cur, context_shift=shift)

    def _resolve(
        self, verdict: Verdict, request: Request, new: tuple[Message, ...], provider: Provider
    ) -> Verdict:
        """Measure the new content alone (a max_tokens=1 request) to settle a suspicion."""
        from aforo.context.calls import measure_new_content

        try:
            tokens, baseline = measure_new_content(provider, request, new, self._baseline.get(self._fixed[0]))
            self._baseline[self._fixed[0]] = baseline
        except ProviderError as exc:
            # Unresolved suspicion fails safe: trusting it could mean answering without the task.
            self.emit(Warning(f"Could not measure the new content to check for truncation: {exc}"))
            return replace(
                verdict, status="truncated", reason=f"{verdict.reason}; the new content could not be measured"
            )
        return self.detector.resolve(verdict, tokens)

    def _overflow_message(self, cur: Sample, verdict: Verdict) -> str:
        real = verdict.seems_real_window
        suggest = f" --context-window {real}" if real else " --context-window N (smaller)"
        return (
            f"The server silently dropped part of the conversation: {verdict.reason}. "
            "Its answer was discarded and your conversation is intact. "
            + (f"The real window seems to be about {real} tokens. " if real else "")
            + f"Fix: run with{suggest}, or on Ollama raise num_ctx (OLLAMA_CONTEXT_LENGTH) or use "
            "--server ollama so aforo sets it."
        )

    # --- records ---------------------------------------------------------------------------------

    def _where(self) -> dict[str, Any]:
        return {
            "model": self.facts.model,
            "server": self.facts.server,
            "window": self.budget.window,
            "window_source": self.facts.window_source,
            "counter": self.counter_name,
        }

    def record(
        self, event: str, request: Request, before: int, after: int, started: float, **fields: Any
    ) -> None:
        self.journal.record(
            event,
            session=self.facts.session,
            tokens_before=before,
            tokens_after=after,
            tokens_estimated=self.calibration.scale(self.raw_estimate(request)),
            duration_ms=round((time.monotonic() - started) * 1000, 3),
            **self._where(),
            **fields,
        )

    def take_checkpoint(self, reason: str, request: Request, tokens: int, summary: str = "") -> str | None:
        """Write the checkpoint first; without one, the transformation is not applied."""
        ledger = build_ledger(request.messages)
        facts = {
            **self._where(),
            "session": self.facts.session,
            "tokens_before": tokens,
            "goal": ledger.goal,
            "constraints": {"hard": list(ledger.hard), "soft": list(ledger.soft)},
            "evidence": [{"source": e.source, "tool_use_id": e.tool_use_id} for e in ledger.evidence],
            "summary": summary,
        }
        try:
            cp = self.journal.checkpoint(reason=reason, messages=list(request.messages), facts=facts)
        except StoreError as exc:
            self.emit(
                Warning(
                    f"Not {_DOING.get(reason, reason)} the conversation: the checkpoint could not be "
                    f"written ({exc})."
                )
            )
            self.journal.record("rejection", session=self.facts.session, cause=f"checkpoint: {exc}")
            return None
        if reason != UNDO_REASON:
            self._undone = None  # a new transformation: the next /undo starts from it
        return cp
