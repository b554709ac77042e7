"""Telemetry: migrations from an old database, records, export, summary and two concurrent writers."""

from __future__ import annotations

import io
import json
import sqlite3
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from aforo.errors import StoreError
from aforo.store import telemetry
from aforo.store.telemetry import Telemetry, connect, format_summary, migrate


def test_default_path_is_in_the_state_dir(aforo_home: Path) -> None:
    with Telemetry() as t:
        t.record("admission", session="s1", tokens_estimated=100)
    db = aforo_home / "telemetry.db"
    assert db.exists()
    assert stat.S_IMODE(db.stat().st_mode) == 0o600
    assert sqlite3.connect(db).execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_an_old_database_is_migrated_and_keeps_its_rows(tmp_path: Path) -> None:
    path = tmp_path / "telemetry.db"
    old = connect(path)
    assert migrate(old, upto=1) == ["m001_events"]
    old.execute(
        "INSERT INTO events (ts, session, event, tokens_estimated, model) "
        "VALUES ('2024-01-01T00:00:00+00:00', 'old', 'admission', 42, 'm')"
    )
    old.close()
    with Telemetry(path) as t:
        t.record(
            "clearing", session="new", tokens_before=900, tokens_after=400, window=4096, window_source="props"
        )
        rows = t.rows()
    assert [(r["session"], r["tokens_estimated"], r["window"]) for r in rows] == [
        ("old", 42, None),
        ("new", None, 4096),
    ]
    applied = [r[0] for r in sqlite3.connect(path).execute("SELECT name FROM _migrations ORDER BY name")]
    assert applied == telemetry.MIGRATIONS.names
    # Opening again applies nothing twice.
    with Telemetry(path) as t:
        assert migrate(t._db) == []


def test_record_validates_the_event(tmp_path: Path) -> None:
    with Telemetry(tmp_path / "t.db") as t, pytest.raises(ValueError, match="unknown telemetry event"):
        t.record("nonsense", session="s")


def test_record_refuses_a_field_it_does_not_know(tmp_path: Path) -> None:
    # A misspelt or new field must fail where it is passed, not vanish from the record.
    with Telemetry(tmp_path / "t.db") as t:
        with pytest.raises(TypeError, match="summary_token"):
            t.record("compaction", session="s", summary_token=5)  # type: ignore[call-arg]
        assert t.rows() == []


def test_export_jsonl_has_every_field(tmp_path: Path) -> None:
    with Telemetry(tmp_path / "t.db") as t:
        t.record(
            "compaction",
            session="s1",
            tokens_estimated=5600,
            tokens_exact=5531,
            counter="llama-server/tokenize",
            bytes_before=100_357,
            bytes_after=11_280,
            tokens_before=25_000,
            tokens_after=5531,
            summary_tokens=480,
            duration_ms=812.5,
            model="qwen",
            server="llama-server",
            window=8192,
            window_source="props",
            checkpoint=tmp_path / "cp.json",
        )
        t.record("rejection", session="s2", cause="http://u:pa55w0rdX@h/ failed: does_not_fit")
        out = io.StringIO()
        assert t.export_jsonl(out) == 2
        one = io.StringIO()
        assert t.export_jsonl(one, session="s2") == 1
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert lines[0]["bytes_before"] == 100_357 and lines[0]["checkpoint"] == str(tmp_path / "cp.json")
    assert lines[0]["summary_tokens"] == 480
    assert set(lines[0]) == set(telemetry.COLUMNS)
    assert "pa55w0rdX" not in out.getvalue()  # causes are redacted like everything else on disk
    assert json.loads(one.getvalue())["session"] == "s2"


def fill(t: Telemetry) -> None:
    t.record("admission", session="a", tokens_estimated=1000)
    t.record(
        "clearing",
        session="a",
        tokens_before=4300,
        tokens_after=3700,
        bytes_before=17_000,
        bytes_after=14_000,
    )
    t.record("compaction", session="a", tokens_before=3700, tokens_after=849)
    t.record("admission", session="b", tokens_estimated=800)
    t.record("compaction", session="b", tokens_before=8000, tokens_after=2000)
    t.record("rejection", session="b", cause="does_not_fit")
    t.record("rejection", session="b", cause="does_not_fit")
    t.record("rejection", session="a", cause="provider_failed_after_compaction")
    t.record("recovery", session="a")
    t.record("overflow", session="b")


def test_summary_per_session_and_overall(tmp_path: Path) -> None:
    with Telemetry(tmp_path / "t.db") as t:
        fill(t)
        s = t.summary()
        only_b = t.summary(session="b")
    a, overall = s["sessions"]["a"], s["overall"]
    assert a["events"] == {
        "admission": 1,
        "rejection": 1,
        "clearing": 1,
        "compaction": 1,
        "recovery": 1,
        "overflow": 0,
        "warning": 0,
        "model_restored": 0,
        "model_mismatch": 0,
    }
    assert a["tokens_saved"] == {"clearing": 600, "compaction": 2851, "total": 3451}
    assert a["bytes_saved"]["clearing"] == 3000
    assert overall["total_events"] == 10
    assert overall["tokens_saved"]["compaction"] == 2851 + 6000
    assert overall["compaction_ratio"]["count"] == 2
    assert overall["compaction_ratio"]["min"] == pytest.approx(849 / 3700, abs=1e-4)
    assert overall["compaction_ratio"]["mean"] == pytest.approx((849 / 3700 + 0.25) / 2, abs=1e-4)
    assert overall["rejections_by_cause"] == {"does_not_fit": 2, "provider_failed_after_compaction": 1}
    assert list(only_b["sessions"]) == ["b"] and only_b["overall"]["total_events"] == 5
    json.dumps(s)  # what `aforo stats --json` prints must serialize


def test_format_summary_is_a_table(tmp_path: Path) -> None:
    with Telemetry(tmp_path / "t.db") as t:
        assert "No telemetry" in format_summary(t.summary())
        fill(t)
        text = format_summary(t.summary())
    lines = text.splitlines()
    header = next(line for line in lines if line.startswith("session") and "adm" in line)
    assert all(col in header for col in ("adm", "rej", "clr", "cmp", "rec", "ovf", "saved", "ratio"))
    overall = [line for line in lines if line.startswith("overall")][-1]
    assert "9,451" in overall and "0.24 (2)" in overall
    assert any("does_not_fit" in line and line.rstrip().endswith("2") for line in lines)


def test_format_summary_explains_every_abbreviated_column(tmp_path: Path) -> None:
    with Telemetry(tmp_path / "t.db") as t:
        fill(t)
        lines = format_summary(t.summary(), 78).splitlines()
    header = next(line for line in lines if line.startswith("session") and "adm" in line).split()
    legend = {line.partition(": ")[0]: line.partition(": ")[2] for line in lines if ": " in line}
    for column in ("adm", "rej", "clr", "cmp", "rec", "ovf"):
        assert column in header and legend.get(column), (column, lines)
    assert "refused" in legend["rej"] and "compaction" in legend["cmp"] and "truncation" in legend["ovf"]
    assert all(len(line) <= 78 for line in lines)


def runs(t: Telemetry) -> None:
    """Two runs in session a (one model, a cache hit), one in b (another model), governor rows too."""
    t.record("admission", session="a", tokens_estimated=1000)
    t.record(
        "run", session="a", input_tokens=1200, output_tokens=80, cached_tokens=900, duration_ms=2500,
        model="qwen2.5-coder:7b-instruct", cause="end_turn",
    )  # fmt: skip
    t.record(
        "run", session="a", input_tokens=800, output_tokens=20, cached_tokens=100, duration_ms=1500,
        model="qwen2.5-coder:7b-instruct", cause="end_turn",
    )  # fmt: skip
    t.record(
        "run", session="b", input_tokens=3000, output_tokens=0, duration_ms=75_000,
        model="a-very-long-model-name-that-does-not-fit-a-narrow-terminal:q4_K_M", cause="error",
    )  # fmt: skip


def test_runs_add_up_per_session_apart_from_the_governors_events(tmp_path: Path) -> None:
    with Telemetry(tmp_path / "t.db") as t:
        runs(t)
        s = t.summary()
    a, b, overall = s["sessions"]["a"]["usage"], s["sessions"]["b"]["usage"], s["overall"]
    assert (a["runs"], a["input_tokens"], a["output_tokens"], a["cached_tokens"]) == (2, 2000, 100, 1000)
    assert a["cached_share"] == 0.5 and a["wall_seconds"] == 4.0
    assert a["models"] == ["qwen2.5-coder:7b-instruct"]
    assert b["cached_share"] == 0 and b["wall_seconds"] == 75.0
    assert overall["usage"]["runs"] == 3 and overall["usage"]["input_tokens"] == 5000
    # A run is not something the governor did: it is counted apart from its events.
    assert overall["total_events"] == 1 and "run" not in overall["events"]
    json.dumps(s)


LONG_SESSION = "20261201-091442-4317fbe2"  # a real session id's shape (aforo.store.ids)


def busy_governor(t: Telemetry) -> None:
    """A session whose governor row, with its full id, is 82 columns: many events, millions saved."""
    for _ in range(12):
        t.record("admission", session=LONG_SESSION, tokens_estimated=1000)
    for _ in range(11):
        t.record("clearing", session=LONG_SESSION, tokens_before=400_000, tokens_after=100_000)
    for _ in range(10):
        t.record("compaction", session=LONG_SESSION, tokens_before=40_000, tokens_after=10_000)


def test_the_stats_tables_show_each_sessions_cost_and_fit_the_width(tmp_path: Path) -> None:
    with Telemetry(tmp_path / "t.db") as t:
        runs(t)
        busy_governor(t)
        wide = format_summary(t.summary())
        narrow = format_summary(t.summary(), width=80)
        narrowest = format_summary(t.summary(), width=78)
    line_a = next(line for line in wide.splitlines() if line.startswith("a "))
    assert line_a.split()[:6] == ["a", "2", "2,000", "100", "50%", "4.0s"]
    assert line_a.endswith("qwen2.5-coder:7b-instruct")
    line_b = next(line for line in wide.splitlines() if line.startswith("b "))
    assert "1m15s" in line_b and "0%" in line_b and line_b.endswith("q4_K_M")
    assert max(len(line) for line in wide.splitlines()) > 80  # the long model name, uncut in a pipe
    assert max(len(line) for line in narrow.splitlines()) <= 80
    assert "a-very-long-model…" in narrow or "…" in next(
        line for line in narrow.splitlines() if line.startswith("b ")
    )
    # The governor's table fits too: its session ids lose their start, their random end stays.
    governor = [line for line in wide.splitlines() if line.startswith(LONG_SESSION) and "3,600,000" in line]
    assert len(governor) == 1 and len(governor[0]) == 82
    for text, width in ((narrow, 80), (narrowest, 78)):
        assert max(len(line) for line in text.splitlines()) <= width
        [row] = [line for line in text.splitlines() if "3,600,000" in line and "4317fbe2" in line]
        session = row.split()[0]
        assert session.startswith("…") and LONG_SESSION.endswith(session[1:])
        assert row.split()[1:] == ["12", "0", "11", "10", "0", "0", "0", "3,600,000", "0.25", "(10)"]
        assert any(line.startswith(LONG_SESSION) for line in text.splitlines())  # whole in the usage table


def test_a_database_before_run_usage_gains_its_columns(tmp_path: Path) -> None:
    path = tmp_path / "telemetry.db"
    old = connect(path)
    migrate(old, upto=3)
    old.execute(
        "INSERT INTO events (ts, session, event, tokens_before, tokens_after) "
        "VALUES ('2024-01-01T00:00:00+00:00', 'old', 'compaction', 3000, 800)"
    )
    old.close()
    with Telemetry(path) as t:
        t.record("run", session="new", input_tokens=10, output_tokens=2, cached_tokens=0, duration_ms=5)
        summary = t.summary()
    assert summary["sessions"]["old"]["usage"]["runs"] == 0
    assert summary["sessions"]["old"]["tokens_saved"]["total"] == 2200
    assert summary["sessions"]["new"]["usage"]["input_tokens"] == 10


def test_two_processes_can_write_at_once(tmp_path: Path) -> None:
    path = tmp_path / "t.db"
    Telemetry(path).close()  # migrated once; the writers race only on inserts
    script = textwrap.dedent(
        f"""
        import sys
        from pathlib import Path
        from aforo.store.telemetry import Telemetry
        t = Telemetry(Path({str(path)!r}))
        for i in range(200):
            t.record("admission", session=sys.argv[1], tokens_estimated=i)
        """
    )
    procs = [subprocess.Popen([sys.executable, "-c", script, name]) for name in ("p1", "p2")]
    assert [p.wait(timeout=60) for p in procs] == [0, 0]
    with Telemetry(path) as t:
        counts = {sid: s["events"]["admission"] for sid, s in t.summary()["sessions"].items()}
    assert counts == {"p1": 200, "p2": 200}


def test_an_unreadable_database_is_a_store_error(tmp_path: Path) -> None:
    path = tmp_path / "t.db"
    path.write_bytes(b"this is not a database" * 100)
    with pytest.raises(StoreError, match="Move the file aside"):
        Telemetry(path)


def test_a_new_column_is_written_once_the_table_and_the_field_list_have_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # One check against the columns: record names none of them (it took each as a parameter and
    # listed it again in its row).
    monkeypatch.setattr(telemetry, "RECORD_FIELDS", (*telemetry.RECORD_FIELDS, "region"))
    with Telemetry(tmp_path / "t.db") as t:
        t._db.execute("ALTER TABLE events ADD COLUMN region TEXT")
        t.record("admission", session="s", region="north")
        assert t._db.execute("SELECT region FROM events").fetchall() == [("north",)]
