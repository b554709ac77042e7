"""What `aforo stats` shows: telemetry rows folded into counts, savings and ratios, and a plain table;
then each lane (SPEC §9) with the models its server said it served, and the checks that the
conversation's model was back after a summary on another lane.

`summarize` returns plain data (what `aforo stats --json` prints); `format_summary` renders it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

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


def _empty(events: tuple[str, ...]) -> dict[str, Any]:
    return {
        "events": dict.fromkeys(events, 0),
        "total_events": 0,
        "tokens_saved": {"clearing": 0, "compaction": 0, "total": 0},
        "bytes_saved": {"clearing": 0, "compaction": 0, "total": 0},
        "compaction_ratio": {"count": 0, "mean": None, "min": None, "max": None},
        "rejections_by_cause": {},
        "first": None,
        "last": None,
        "lanes": {},
        "_ratios": [],
    }


def _add(stats: dict[str, Any], row: dict[str, Any]) -> None:
    event = row["event"]
    stats["events"][event] = stats["events"].get(event, 0) + 1
    stats["total_events"] += 1
    ts = row["ts"]
    stats["first"] = ts if stats["first"] is None else min(stats["first"], ts)
    stats["last"] = ts if stats["last"] is None else max(stats["last"], ts)
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
    return stats


def summarize(rows: Iterable[dict[str, Any]], events: tuple[str, ...]) -> dict[str, Any]:
    """Per session and overall: counts per event, tokens/bytes saved, compaction ratios (after/before),
    rejections by cause, first and last record time."""
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


def format_summary(summary: dict[str, Any]) -> str:
    """A plain-text table: one line per session, then the overall line and the rejection causes."""
    overall = summary["overall"]
    sessions = summary["sessions"]
    if not overall["total_events"]:
        return "No telemetry recorded yet: it appears after the first request aforo governs."
    events = [e for e in overall["events"] if e not in _MODEL_CHECKS]
    headers = ["session", *(_ABBREV.get(e, e) for e in events), "tokens saved", "compaction after/before"]
    table = [
        [name, *(str(s["events"].get(e, 0)) for e in events), f"{s['tokens_saved']['total']:,}", _ratio(s)]
        for name, s in [*sessions.items(), ("overall", overall)]
    ]
    widths = [max(len(r[i]) for r in [headers, *table]) for i in range(len(headers))]

    def line(cells: list[str]) -> str:
        first = cells[0].ljust(widths[0])
        return "  ".join([first, *(c.rjust(w) for c, w in zip(cells[1:], widths[1:], strict=True))]).rstrip()

    span = f"{_minute(overall['first'])} .. {_minute(overall['last'])} UTC"
    out = [
        f"aforo stats: {len(sessions)} session(s), {overall['total_events']} event(s), {span}",
        "",
        line(headers),
        *(line(r) for r in table[:-1]),
        "-" * len(line(headers)),
        line(table[-1]),
    ]
    out += _lane_lines(overall)
    causes = overall["rejections_by_cause"]
    if causes:
        out += ["", "rejections by cause:"]
        width = max(len(c) for c in causes)
        out += [f"  {cause.ljust(width)}  {n}" for cause, n in sorted(causes.items(), key=lambda kv: -kv[1])]
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
