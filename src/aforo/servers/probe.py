"""`aforo probe`: measure the window a server really serves and what it does with a prompt that does not fit.

Each measurement is one non-streamed chat request with `max_tokens: 1` whose prompt is a unique marker
followed by N copies of one sentence, so every request extends the previous ones' prefix and the
server's prompt cache keeps the cost down. The reported `prompt_tokens` tells the story:

    grows with N as calibrated  -> it fits
    an overflow error           -> it does not fit, and the server says so ("error")
    well below what was sent    -> silently cut: "truncate" (kept the newest part, still sizeable) or
                                   "collapse" (a tiny constant, like Ollama's 63)

Two small requests first calibrate tokens per sentence; then sizes just below powers of two (windows
usually are one) until something does not fit, then the guesses the answers suggest (a window in the
error, the size a truncating server kept) and plain bisection, until the window is known within 4.5 %.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal, TextIO

import httpx

from aforo.errors import ConfigError, ContextOverflowError, ProtocolError, ProviderError, StoreError
from aforo.limits import PROBE_SECONDS, PROBE_WINDOW
from aforo.servers.detect import detect_server
from aforo.servers.kind import ServerInfo, ServerKind, kind_named
from aforo.servers.probe_store import ProbeStore
from aforo.wire.http import post_json

Overflow = Literal["error", "truncate", "collapse", "none"]
# How the server took one probe prompt.
SampleFit = Literal["fits", "error", "truncate", "collapse"]

FILLER = "The quick brown fox jumps over the lazy dog. "
CALIBRATION_UNITS = (16, 64)
TOLERANCE = 0.045  # stop when the window is pinned between lo and hi within this fraction of hi
# The filler tokenizes linearly, so a prompt that fits is counted as calibrated to within a few tokens;
# a reported count further below than this was cut. A cut smaller than the slack reads as "fits", which
# is harmless: `lo` takes the reported count, which did fit.
FITS_SLACK = 0.01
FITS_SLACK_MIN = 8
COLLAPSE_RATIO = 0.5  # a cut prompt reported below half of the largest fitting one: a collapse
GUESS_MARGIN = 0.02  # a guessed window g is tested at g*(1 - margin) and g*(1 + margin)


@dataclass(frozen=True)
class ProbeSample:
    units: int
    expected: int  # tokens the calibration predicts for this prompt
    reported: int | None  # prompt_tokens the server reported (None when it refused)
    outcome: SampleFit


@dataclass(frozen=True)
class ProbeResult:
    window: int
    overflow: Overflow
    source: str
    samples: list[ProbeSample] = field(default_factory=list)


class _Prober:
    """The request side: builds prompts of N filler units, sends them, classifies the answers."""

    def __init__(self, client: httpx.Client, info: ServerInfo, model: str, progress: Callable[[str], None]):
        self.client = client
        self.url = f"{info.v1_url}/chat/completions"
        self.model = model
        self.progress = progress
        # Unique per probe: a previous probe's cache must not answer for this one.
        self.marker = f"aforo-probe-{uuid.uuid4().hex[:8]}"
        self.samples: list[ProbeSample] = []
        self.per_unit = 0.0
        self.overhead = 0.0
        self.largest_fit = 0

    def prompt_tokens(self, units: int) -> int:
        """Send the prompt of `units` filler units; its prompt_tokens, or ContextOverflowError."""
        content = f"{self.marker}: ignore the text below and answer with one word.\n{FILLER * units}"
        body = {
            "model": self.model,
            "messages": [{"role": "user", "content": content}],
            "max_tokens": 1,
            "temperature": 0,
            "stream": False,
        }
        doc = post_json(self.client, self.url, body, float(PROBE_SECONDS.value), model=self.model)
        usage = doc.get("usage") if isinstance(doc, dict) else None
        reported = usage.get("prompt_tokens") if isinstance(usage, dict) else None
        if not isinstance(reported, int) or reported <= 0:
            raise ProtocolError(
                f"{self.url} reports no usage.prompt_tokens, so the probe cannot measure what it keeps;"
                " set the window with --context-window N"
            )
        return reported

    def calibrate(self) -> None:
        small, large = CALIBRATION_UNITS
        r_small, r_large = self.prompt_tokens(small), self.prompt_tokens(large)
        if r_large <= r_small:
            raise ProtocolError(
                f"the server reported {r_small} and then {r_large} prompt tokens for a prompt four times"
                " longer; it does not count prompts, so the probe cannot measure its window"
            )
        self.per_unit = (r_large - r_small) / (large - small)
        self.overhead = r_small - self.per_unit * small
        self.largest_fit = r_large
        for units, reported in ((small, r_small), (large, r_large)):
            self._record(ProbeSample(units, reported, reported, "fits"))

    def units_for(self, tokens: int) -> int:
        return max(1, round((tokens - self.overhead) / self.per_unit))

    def expected(self, units: int) -> int:
        return round(self.overhead + self.per_unit * units)

    def measure(self, tokens: int) -> tuple[ProbeSample, ContextOverflowError | None]:
        units = self.units_for(tokens)
        expected = self.expected(units)
        try:
            reported = self.prompt_tokens(units)
        except ContextOverflowError as exc:
            return self._record(ProbeSample(units, exc.n_prompt or expected, None, "error")), exc
        if reported >= expected - max(FITS_SLACK_MIN, FITS_SLACK * expected):
            self.largest_fit = max(self.largest_fit, reported)
            outcome: SampleFit = "fits"
        elif reported < COLLAPSE_RATIO * self.largest_fit:
            outcome = "collapse"
        else:
            outcome = "truncate"
        return self._record(ProbeSample(units, expected, reported, outcome)), None

    def _record(self, sample: ProbeSample) -> ProbeSample:
        self.samples.append(sample)
        counted = f"server counted {sample.reported or 0:,}"
        said = {
            "fits": f"fits ({counted})",
            "error": "refused as too long",
            "truncate": f"silently truncated ({counted})",
            "collapse": f"collapsed ({counted})",
        }[sample.outcome]
        self.progress(f"probe {len(self.samples)}: {sample.expected:,} tokens -> {said}")
        return sample


def _next_size(lo: int, hi: int | None, guesses: list[int], tried: set[int], max_window: int) -> int | None:
    """The next prompt size to try, in tokens; None when even `max_window` fits."""
    candidates = sorted({round(g * f) for g in guesses for f in (1 - GUESS_MARGIN, 1 + GUESS_MARGIN)})
    for size in candidates:
        if size > lo and (hi is None or size < hi) and size not in tried and size <= max_window:
            return size
    if hi is not None:
        return (lo + hi) // 2
    power = 2048  # windows below 2k are rare; a smaller one is still found by bisection
    # `tried` too: a size rounded to whole filler units may be counted a little below what was asked.
    while round(power * (1 - GUESS_MARGIN)) <= lo or round(power * (1 - GUESS_MARGIN)) in tried:
        power *= 2
    size = round(power * (1 - GUESS_MARGIN))
    return size if size <= max_window else None


def probe(
    client: httpx.Client,
    server_info: ServerInfo,
    model: str,
    *,
    progress: Callable[[str], None],
    max_window: int = int(PROBE_WINDOW.value),
) -> ProbeResult:
    """Measure the effective window of `model` on the server and how it overflows."""
    prober = _Prober(client, server_info, model, progress)
    prober.calibrate()
    lo, hi = prober.largest_fit, None
    guesses = [server_info.served_window] if server_info.served_window else []
    tried: set[int] = set()
    seen: set[SampleFit] = set()
    while hi is None or hi - lo > TOLERANCE * hi:
        size = _next_size(lo, hi, guesses, tried, max_window)
        if size is None or size in tried:
            break
        tried.add(size)
        sample, error = prober.measure(size)
        seen.add(sample.outcome)
        if error is not None and error.n_ctx:
            # The server told its window: nothing left to measure.
            source = f"server error names n_ctx {error.n_ctx}, {len(prober.samples)} requests"
            return ProbeResult(error.n_ctx, "error", source, prober.samples)
        if sample.outcome == "fits":
            lo = max(lo, sample.reported or sample.expected)
            continue
        hi = min(hi or sample.expected, sample.expected)
        if sample.outcome == "truncate" and sample.reported:
            # What a truncating server kept did fit; keeping half (Ollama) hints at twice that.
            lo = max(lo, min(sample.reported, hi - 1))
            guesses += [sample.reported, 2 * sample.reported]
        guesses += [p for p in (2**k for k in range(10, 21)) if lo < p < hi]
    overflow: Overflow = next((o for o in ("error", "truncate", "collapse") if o in seen), "none")
    if hi is None:
        source = f"fits up to {lo} tokens (probe_window), {len(prober.samples)} requests"
    else:
        source = f"bisection {lo}..{hi} tokens, {len(prober.samples)} requests"
    return ProbeResult(lo, overflow, source, prober.samples)


OVERFLOW_MEANING: dict[str, str] = {
    "error": "the server refuses a prompt that does not fit (aforo maps the error; nothing is lost)",
    "truncate": "the server silently drops the oldest part of a prompt that does not fit",
    "collapse": "the server silently answers from a tiny remnant of a prompt that does not fit",
    "none": "no limit found up to the probe's maximum (probe_window)",
}


def run_probe_command(
    base_url: str,
    model: str | None,
    server_hint: str | None,
    as_json: bool,
    out: TextIO,
    *,
    kinds: Sequence[ServerKind],
    store: ProbeStore | None = None,
) -> int:
    """`aforo probe`: detect among `kinds`, probe, remember, report. Returns the exit code (0, 1 server,
    2 usage)."""

    def fail(message: str, code: int) -> int:
        print(json.dumps({"error": message}) if as_json else f"error: {message}", file=out)
        return code

    def say(line: str) -> None:
        if not as_json:
            print(line, file=out, flush=True)

    with httpx.Client() as client:
        try:
            info = detect_server(client, base_url, server_hint, kinds=kinds, model=model)
        except ConfigError as exc:
            return fail(str(exc), 2)
        model = model or (info.models[0] if info.models else None)
        if not model:
            return fail(f"no --model given and {info.v1_url}/models lists none: pass --model M", 2)
        version = f" {info.version}" if info.version else ""
        say(f"probing {info.v1_url} ({info.kind}{version}), model {model}")
        if info.served_window:
            say(f"the server says it serves {info.served_window} tokens ({info.window_detail})")
        try:
            result = probe(client, info, model, progress=say)
            (store or ProbeStore()).save(info.root_url, model, result.window, result.overflow, result.source)
        except (ProviderError, StoreError) as exc:
            return fail(str(exc), 1)
    if as_json:
        print(
            json.dumps({"window": result.window, "overflow": result.overflow, "source": result.source}),
            file=out,
        )
        return 0
    say(f"window: {result.window} tokens ({result.source})")
    say(f"overflow: {result.overflow} — {OVERFLOW_MEANING[result.overflow]}")
    note = kind_named(kinds, info.kind).probe_note
    if note:
        say(note)
    say(f"remembered for {info.root_url} {model}: later runs use it when the server does not say its window")
    return 0
