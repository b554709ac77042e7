"""Replay the silent-truncation corpus through the seed's rule and through TruncationDetector.

    .venv/bin/python bench/overflow_signal.py

Each session is replayed as the governor would: `prev` is the last sample judged good, the calibration
ratio is its tokens/estimate, a flagged turn neither calibrates nor becomes `prev`, and a "suspect"
verdict is resolved with what the probe of the new content (everything added since `prev`) measures.
Prints recall (all truncated turns; first crossings caught on the crossing turn), false positives
(flagged turns that were not truncated), probes spent, and the data behind each threshold.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from aforo.context.overflow import TruncationDetector, looks_truncated
from aforo.context.tokens import Sample

CORPUS = Path(__file__).parent / "overflow_corpus"

Session = dict
Replay = Callable[[Session], "Run"]


@dataclass
class Run:
    flags: list[bool]
    probes: list[int]
    """Per turn, the tokens a probe measured (0: no probe)."""
    rules: list[str] = field(default_factory=list)


def load(name: str) -> list[Session]:
    sessions: list[Session] = json.loads((CORPUS / f"{name}.json").read_text(encoding="utf-8"))
    return sessions


def replay_seed(session: Session) -> Run:
    prev: Sample | None = None
    flags: list[bool] = []
    for t in session["turns"]:
        cur = Sample(t["reported"], t["estimate"])
        flags.append(looks_truncated(prev, cur))
        if not flags[-1]:
            prev = cur
    return Run(flags, [0] * len(flags))


def replay_detector(session: Session, *, exact: bool = False) -> Run:
    detector = TruncationDetector()
    prev: Sample | None = None
    probe = 0  # what the probe measures: everything added since `prev`
    run = Run([], [])
    for t in session["turns"]:
        cur = Sample(t["reported"], t["estimate"])
        probe += t["probe"]
        verdict = detector.assess(
            prev,
            cur,
            ratio=prev.tokens / prev.estimate if prev else 1.0,
            window=session["believed_window"],
            new_estimate=cur.estimate - prev.estimate if prev else cur.estimate,
            exact=t["true_tokens"] if exact else None,
        )
        run.probes.append(probe if verdict.status == "suspect" else 0)
        if verdict.status == "suspect":
            verdict = detector.resolve(verdict, probe)
        run.flags.append(verdict.status == "truncated")
        run.rules.append(verdict.rule)
        if verdict.status != "truncated":
            prev, probe = cur, 0
    return run


def score(sessions: list[Session], replay: Replay) -> dict[str, float]:
    trunc = caught = firsts = first_caught = clean = false = probes = clean_probes = 0
    probed_tokens = new_tokens = 0
    for s in sessions:
        run = replay(s)
        for t, flag, probed in zip(s["turns"], run.flags, run.probes, strict=True):
            probes += probed > 0
            probed_tokens += probed
            new_tokens += t["new_tokens"]
            if t["truncated"]:
                trunc += 1
                caught += flag
            else:
                clean += 1
                false += flag
                clean_probes += probed > 0
        if s["first_truncated"] is not None:
            firsts += 1
            first_caught += run.flags[s["first_truncated"]]
    return {
        "truncated_turns": trunc,
        "recall": caught / trunc if trunc else 1.0,
        "first_crossings": firsts,
        "first_recall": first_caught / firsts if firsts else 1.0,
        "clean_turns": clean,
        "false_positives": false,
        "fp_rate": false / clean if clean else 0.0,
        "probes": probes,
        "clean_probe_rate": clean_probes / clean if clean else 0.0,
        "probe_token_overhead": probed_tokens / new_tokens if new_tokens else 0.0,
    }


def first_crossing_by_mode(sessions: list[Session], replay: Replay) -> dict[str, tuple[int, int]]:
    out: dict[str, tuple[int, int]] = {}
    for s in sessions:
        if s["first_truncated"] is None:
            continue
        hit = replay(s).flags[s["first_truncated"]]
        got, n = out.get(s["mode"], (0, 0))
        out[s["mode"]] = (got + hit, n + 1)
    return out


def threshold_data(sessions: list[Session]) -> dict[str, float]:
    """The numbers each threshold is chosen against (clean turns and first crossings)."""
    growth_raw: list[float] = []
    growth_cal: list[float] = []
    content: list[float] = []
    probe_err: list[int] = []
    dropped: list[int] = []
    for s in sessions:
        turns = s["turns"]
        for i, t in enumerate(turns):
            content.append(t["new_tokens"] / t["new_estimate"])
            probe_err.append(abs(t["probe"] - t["new_tokens"]))
            if i == 0 or t["truncated"] or turns[i - 1]["truncated"]:
                continue
            p = turns[i - 1]
            grown, est = t["reported"] - p["reported"], t["estimate"] - p["estimate"]
            if est >= 200:
                growth_raw.append(grown / est)
            growth_cal.append(grown / (p["reported"] / p["estimate"] * est))
        k = s["first_truncated"]
        if k and s["mode"] in ("keep_newest", "first_crossing_small"):
            dropped.append(turns[k]["true_tokens"] - turns[k]["reported"])
    return {
        "clean growth / estimated growth, min (seed 0.1)": min(growth_raw),
        "clean growth / calibrated expectation, min (DEFICIT 0.5)": min(growth_cal),
        "new tokens / new estimate, max (MAX_CONTENT_RATIO 3.2)": max(content),
        "probe error, max tokens (PROBE_TOLERANCE 4)": max(probe_err),
        "tokens dropped on a keep-newest first crossing, min": min(dropped) if dropped else 0,
    }


def _row(label: str, seed: dict[str, float], ours: dict[str, float], key: str, pct: bool = True) -> str:
    def fmt(v: float) -> str:
        return f"{v:.1%}" if pct else f"{v:g}"

    return f"  {label:<44} {fmt(seed[key]):>10} {fmt(ours[key]):>10}"


def report() -> str:
    ok, trunc, blind = load("non_truncated"), load("truncated"), load("blind_spots")
    everything = ok + trunc
    lines = [
        f"corpus: {len(ok)} non-truncated sessions, {len(trunc)} truncated, {len(blind)} blind-spot",
    ]
    for title, sessions in (("corpus (non-truncated + truncated)", everything), ("blind spots", blind)):
        seed, ours = score(sessions, replay_seed), score(sessions, replay_detector)
        exact = score(sessions, lambda s: replay_detector(s, exact=True))
        lines += [
            "",
            f"{title}: {ours['truncated_turns']:.0f} truncated turns, {ours['first_crossings']:.0f} first "
            f"crossings, {ours['clean_turns']:.0f} clean turns",
            f"  {'':<44} {'seed rule':>10} {'detector':>10}",
            _row("recall, truncated turns", seed, ours, "recall"),
            _row("recall, first crossing on the crossing turn", seed, ours, "first_recall"),
            _row("false positives (flagged clean turns)", seed, ours, "false_positives", pct=False),
            _row("false-positive rate", seed, ours, "fp_rate"),
            _row("probes (max_tokens=1 requests), total", seed, ours, "probes", pct=False),
            _row("probes per clean turn", seed, ours, "clean_probe_rate"),
            _row("probe tokens / tokens added by the turns", seed, ours, "probe_token_overhead"),
            f"  with an exact counter: recall {exact['recall']:.1%}, first crossings "
            f"{exact['first_recall']:.1%}, false positives {exact['false_positives']:.0f}",
            "  first crossings caught, by server behaviour (seed / detector):",
        ]
        seed_modes = first_crossing_by_mode(sessions, replay_seed)
        for mode, (got, n) in sorted(first_crossing_by_mode(sessions, replay_detector).items()):
            lines.append(f"    {mode:<26} {seed_modes[mode][0]:>3}/{n:<3}  {got:>3}/{n}")
    rules = Counter(r for s in everything for r in replay_detector(s).rules)
    lines += [
        "",
        "detector decisions by evidence: " + ", ".join(f"{k} {v}" for k, v in sorted(rules.items())),
    ]
    lines += ["", "data behind the thresholds:"]
    lines += [f"  {k:<58} {v:.3g}" for k, v in threshold_data(everything).items()]
    return "\n".join(lines)


if __name__ == "__main__":
    print(report())
