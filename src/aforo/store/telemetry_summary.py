"""What `aforo stats` shows: telemetry rows folded into counts, savings, ratios and each session's usage;
then each lane (SPEC §9) with the models its server said it served, and the checks that the
conversation's model was back after a summary on another lane.

`summarize` returns plain data (what `aforo stats --json` prints); `format_summary` renders it as two
tables, one line per session in each: what the runs cost (tokens the server reported, the cached share,
wall time, the model) and what the governor did (its events, the tokens it saved, compaction ratios).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

RUN = "run"
_TRANSFORMS = ("clearing", "compaction")
# Shown with the lanes, not as columns of the table.
_MODEL_CHECKS = ("model_restored", "model_mismatch")
_ABBREV = {
    "admission": "adm",
    "rejection": "rej",
    "clearing": "clr",
    "compaction": "cmp",
    "recovery": "rec",
    "overflow": "ovf",
    "warning": "warn",
}
# The legend of the abbreviated columns (a column's name alone never said what it counts).
_MEANING = {
    "admission": "requests admitted and sent",
    "rejection": "requests refused, never sent (too large after clearing and compaction)",
    "clearing": "clearings of old tool results (and /clear)",
    "compaction": "compactions into a summary",
    "recovery": "conversations put back from a checkpoint (/undo, after a failed call)",
    "overflow": "answers the server gave without part of their prompt (silent truncation)",
    "warning": "model checks after a summary on another lane that could not be made",
}
_MIN_MODEL_CHARS = 8
# A session id is `20261201-091442-4317fbe2`: cut from its start, its random end stays whole.
_MIN_SESSION_CHARS = 9


def _empty(events: tuple[str, ...]) -> dict[str, Any]:
    return {
        "events": dict.fromkeys(events, 0),
        "total_events": 0,
        "tokens_saved": {"clearing": 0, "compaction": 0, "total": 0},
        "bytes_saved": {"clearing": 0, "compaction": 0, "total": 0},
        "compaction_ratio": {"count": 0, "mean": None, "min": None, "max": None},
        "rejections_by_cause": {},
        "usage": {
            "runs": 0,
            "input_tokens": 0,
            "output_tokens": 0,
            "cached_tokens": 0,
            "cached_share": None,
            "wall_seconds": 0.0,
            "models": [],
        },
        "first": None,
        "last": None,
        "lanes": {},
        "_ratios": [],
    }


def _add_run(usage: dict[str, Any], row: dict[str, Any]) -> None:
    usage["runs"] += 1
    for key in ("input_tokens", "output_tokens", "cached_tokens"):
        usage[key] += row.get(key) or 0
    usage["wall_seconds"] += (row["duration_ms"] or 0) / 1000
    if row["model"] and row["model"] not in usage["models"]:
        usage["models"].append(row["model"])


def _add(stats: dict[str, Any], row: dict[str, Any]) -> None:
    event = row["event"]
    ts = row["ts"]
    stats["first"] = ts if stats["first"] is None else min(stats["first"], ts)
    stats["last"] = ts if stats["last"] is None else max(stats["last"], ts)
    if event == RUN:
        _add_run(stats["usage"], row)
        return
    stats["events"][event] = stats["events"].get(event, 0) + 1
    stats["total_events"] += 1
    if event in _TRANSFORMS:
        for unit in ("tokens", "bytes"):
            before, after = row[f"{unit}_before"], row[f"{unit}_after"]
            if before is not None and after is not None:
                stats[f"{unit}_saved"][event] += before - after
                stats[f"{unit}_saved"]["total"] += before - after
    if event == "compaction" and row["tokens_before"] and row["tokens_after"] is not None:
        stats["_ratios"].append(row["tokens_after"] / row["tokens_before"])
    if event == "rejection":
        cause = row["cause"] or "unknown"
        stats["rejections_by_cause"][cause] = stats["rejections_by_cause"].get(cause, 0) + 1
    lane = row.get("lane")
    if lane:  # records written before lanes name none
        entry = stats["lanes"].setdefault(lane, {"records": 0, "models_served": {}})
        entry["records"] += 1
        served = row.get("model_served")
        if served:
            entry["models_served"][served] = entry["models_served"].get(served, 0) + 1


def _finish(stats: dict[str, Any]) -> dict[str, Any]:
    ratios = stats.pop("_ratios")
    if ratios:
        stats["compaction_ratio"] = {
            "count": len(ratios),
            "mean": round(sum(ratios) / len(ratios), 4),
            "min": round(min(ratios), 4),
            "max": round(max(ratios), 4),
        }
    usage = stats["usage"]
    if usage["input_tokens"]:
        usage["cached_share"] = round(usage["cached_tokens"] / usage["input_tokens"], 4)
    usage["wall_seconds"] = round(usage["wall_seconds"], 3)
    return stats


def summarize(rows: Iterable[dict[str, Any]], events: tuple[str, ...]) -> dict[str, Any]:
    """Per session and overall: counts per governor event, tokens/bytes saved, compaction ratios
    (after/before), rejections by cause, what the runs used, first and last record time."""
    overall = _empty(events)
    sessions: dict[str, dict[str, Any]] = {}
    for row in rows:
        _add(overall, row)
        _add(sessions.setdefault(row["session"], _empty(events)), row)
    return {
        "overall": _finish(overall),
        "sessions": {sid: _finish(s) for sid, s in sorted(sessions.items(), key=lambda kv: kv[1]["first"])},
    }


def _minute(ts: str) -> str:
    return ts[:16].replace("T", " ")


def _ratio(stats: dict[str, Any]) -> str:
    r = stats["compaction_ratio"]
    return "-" if not r["count"] else f"{r['mean']:.2f} ({r['count']})"


def duration(seconds: float) -> str:
    """`850ms`, `4.2s`, `3m12s`, `1h05m`: short enough for a table column."""
    if seconds < 1:
        return f"{seconds * 1000:.0f}ms"
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


def _usage_cells(usage: dict[str, Any]) -> list[str]:
    if not usage["runs"]:
        return ["0", "-", "-", "-", "-", ""]
    share = usage["cached_share"]
    return [
        str(usage["runs"]),
        f"{usage['input_tokens']:,}",
        f"{usage['output_tokens']:,}",
        "-" if share is None else f"{share:.0%}",
        duration(usage["wall_seconds"]),
        ", ".join(usage["models"]),
    ]


def _table(
    headers: list[str], rows: list[list[str]], width: int | None, *, cut_sessions: bool = False
) -> list[str]:
    """Left-aligned first and last columns, right-aligned numbers between. With a `width`, one column
    of free text is cut to fit it: the last (model names; their end goes), or with `cut_sessions` the
    first (session ids; their start goes, the order of the rows is the usage table's)."""
    rows = [headers, *rows]
    widths = [max(len(r[i]) for r in rows) for i in range(len(headers))]
    cut, least = (0, _MIN_SESSION_CHARS) if cut_sessions else (len(widths) - 1, _MIN_MODEL_CHARS)
    if width is not None:
        others = sum(widths) - widths[cut] + 2 * (len(widths) - 1)
        widths[cut] = min(widths[cut], max(least, width - others))

    def fit(i: int, text: str) -> str:
        w = widths[i]
        if i != cut or len(text) <= w:
            return text
        return "…" + text[len(text) - w + 1 :] if cut_sessions else text[: w - 1] + "…"

    def line(cells: list[str]) -> str:
        middle = (c.rjust(w) for c, w in zip(cells[1:-1], widths[1:-1], strict=True))
        return "  ".join(
            [fit(0, cells[0]).ljust(widths[0]), *middle, fit(len(cells) - 1, cells[-1])]
        ).rstrip()

    return [line(r) for r in rows]


def format_summary(summary: dict[str, Any], width: int | None = None) -> str:
    """Plain-text tables, one line per session and an overall line, then the rejection causes. With a
    `width` (the terminal's), every line fits it from 78 columns up."""
    overall = summary["overall"]
    sessions = summary["sessions"]
    if not overall["total_events"] and not overall["usage"]["runs"]:
        return "No telemetry recorded yet: it appears after the first request aforo governs."
    named = [*sessions.items(), ("overall", overall)]
    usage = _table(
        ["session", "runs", "tokens in", "out", "cached", "time", "model"],
        [[name, *_usage_cells(s["usage"])] for name, s in named],
        width,
    )
    events = [e for e in overall["events"] if e not in _MODEL_CHECKS]
    governor = _table(
        ["session", *(_ABBREV.get(e, e) for e in events), "saved", "ratio"],
        [
            [
                name,
                *(str(s["events"].get(e, 0)) for e in events),
                f"{s['tokens_saved']['total']:,}",
                _ratio(s),
            ]
            for name, s in named
        ],
        width,
        cut_sessions=True,
    )
    runs, events_n = overall["usage"]["runs"], overall["total_events"]
    out = [
        f"aforo stats: {len(sessions)} session(s), {runs} run(s), {events_n} governor event(s)",
        f"from {_minute(overall['first'])} to {_minute(overall['last'])} UTC",
        "",
        *usage[:-1],
        "-" * max(len(x) for x in usage),
        usage[-1],
        "",
        *governor[:-1],
        "-" * max(len(x) for x in governor),
        governor[-1],
        "",
        *(f"{_ABBREV[e]}: {_MEANING[e]}" for e in events if e in _ABBREV),
        "tokens in: prompt tokens the server read, cached ones included",
        "time: wall time of the runs, from the prompt to the ending",
        "saved: tokens the clearings and compactions removed",
        "ratio: size after/before of a compaction, mean (count)",
    ]
    out += _lane_lines(overall)
    causes = overall["rejections_by_cause"]
    if causes:
        out += ["", "rejections by cause:"]
        width_c = max(len(c) for c in causes)
        out += [
            f"  {cause.ljust(width_c)}  {n}" for cause, n in sorted(causes.items(), key=lambda kv: -kv[1])
        ]
    return "\n".join(out)


def _lane_lines(overall: dict[str, Any]) -> list[str]:
    lanes = overall["lanes"]
    if not lanes:
        return []
    width = max(len(name) for name in lanes)
    out = ["", "lanes and the models their servers said they served:"]
    for name, entry in sorted(lanes.items()):
        served = entry["models_served"]
        models = ", ".join(f"{m} ({n})" for m, n in sorted(served.items(), key=lambda kv: -kv[1]))
        out.append(f"  {name.ljust(width)}  {models or 'none said'}  [{entry['records']} record(s)]")
    events = overall["events"]
    restored, mismatched = events.get("model_restored", 0), events.get("model_mismatch", 0)
    if restored or mismatched:
        out.append(
            f"after a summary on another lane: model restored {restored} time(s), mismatched {mismatched}"
        )
    return out
