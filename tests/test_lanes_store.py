"""Lanes on disk: checkpoints and telemetry keep the lane and the model served, older files and databases
are migrated (they said neither), and `aforo stats` shows each lane with the models its server served."""

from __future__ import annotations

import json
from pathlib import Path

from aforo.messages import Message
from aforo.records import CheckpointFacts, Stamp, TelemetryRecord, Where
from aforo.store.checkpoints import CheckpointStore, load_checkpoint
from aforo.store.journal import StoreJournal
from aforo.store.telemetry import Telemetry, connect, format_summary, migrate

WHERE = Where(
    model="qwen",
    server="llama.cpp",
    window=8192,
    window_source="llama.cpp /props n_ctx",
    counter="llama.cpp /tokenize",
)


def test_a_checkpoint_keeps_the_lane_and_the_model_served(tmp_path: Path) -> None:
    journal = StoreJournal(lambda: "s1", CheckpointStore(tmp_path / "cp"), None, lambda e: None)
    stamp = Stamp(where=WHERE, lane="standard", served="qwen-alias")
    facts = CheckpointFacts(reason="compact", tokens_before=9000, stamp=stamp)
    journal.checkpoint((Message.user("find the bug"),), facts)
    assert journal.last_path is not None
    on_disk = json.loads(journal.last_path.read_text())
    assert (on_disk["lane"], on_disk["model_served"]) == ("standard", "qwen-alias")
    cp = load_checkpoint(journal.last_path)
    assert (cp.lane, cp.model_served, cp.model) == ("standard", "qwen-alias", "qwen")


def test_a_checkpoint_written_before_lanes_loads_saying_neither(tmp_path: Path) -> None:
    journal = StoreJournal(lambda: "s1", CheckpointStore(tmp_path / "cp"), None, lambda e: None)
    journal.checkpoint(
        (Message.user("q"),),
        CheckpointFacts(reason="compact", tokens_before=1, stamp=Stamp(where=WHERE, lane="")),
    )
    assert journal.last_path is not None
    data = json.loads(journal.last_path.read_text())
    old = {k: v for k, v in data.items() if k not in ("lane", "model_served")} | {"schema_version": 1}
    journal.last_path.write_text(json.dumps(old))
    cp = load_checkpoint(journal.last_path)
    assert (cp.lane, cp.model_served, cp.messages) == ("", "", [Message.user("q")])


def test_an_old_telemetry_database_gains_the_lane_columns_and_keeps_its_rows(tmp_path: Path) -> None:
    path = tmp_path / "telemetry.db"
    old = connect(path)
    assert migrate(old, upto=3)[-1] == "m003_summary_tokens"
    old.execute(
        "INSERT INTO events (ts, session, event) VALUES ('2024-01-01T00:00:00+00:00', 'old', 'admission')"
    )
    old.close()
    with Telemetry(path) as t:
        t.record(
            "compaction",
            session="new",
            lane="fast",
            model_served="qwen-fast",
            tokens_before=9,
            tokens_after=3,
        )
        rows = t.rows()
        summary = t.summary()
    assert [(r["lane"], r["model_served"]) for r in rows] == [(None, None), ("fast", "qwen-fast")]
    assert summary["overall"]["lanes"] == {"fast": {"records": 1, "models_served": {"qwen-fast": 1}}}


def test_stats_shows_each_lane_with_its_models_and_the_model_checks(tmp_path: Path) -> None:
    with Telemetry(tmp_path / "t.db") as t:
        journal = StoreJournal(lambda: "s1", CheckpointStore(tmp_path / "cp"), t, lambda e: None)
        for record in (
            TelemetryRecord(event="admission", stamp=Stamp(where=WHERE, lane="standard", served="qwen-7b")),
            TelemetryRecord(
                event="compaction",
                stamp=Stamp(where=WHERE, lane="fast", served="qwen-0.5b"),
                tokens_before=9000,
                tokens_after=2000,
            ),
            TelemetryRecord(
                event="model_restored", stamp=Stamp(where=WHERE, lane="standard", served="qwen-7b")
            ),
            TelemetryRecord(event="admission", stamp=Stamp(where=WHERE, lane="standard", served="qwen-7b")),
            TelemetryRecord(
                event="compaction",
                stamp=Stamp(where=WHERE, lane="fast", served="qwen-0.5b"),
                tokens_before=9000,
                tokens_after=2000,
            ),
            TelemetryRecord(
                event="model_mismatch",
                stamp=Stamp(where=WHERE, lane="standard", served="llama3"),
                cause="expected 'qwen-7b'",
            ),
        ):
            journal.record(record)
        summary = t.summary()
    lanes = summary["overall"]["lanes"]
    assert lanes["standard"]["models_served"] == {"qwen-7b": 3, "llama3": 1}
    assert lanes["fast"] == {"records": 2, "models_served": {"qwen-0.5b": 2}}
    assert (
        summary["overall"]["events"]["model_restored"],
        summary["overall"]["events"]["model_mismatch"],
    ) == (1, 1)
    table = format_summary(summary)
    standard = next(line for line in table.splitlines() if line.strip().startswith("standard"))
    assert "qwen-7b (3)" in standard and "llama3 (1)" in standard
    assert "model restored 1 time(s), mismatched 1" in table
    header = table.splitlines()[2]
    assert "model_restored" not in header and "mres" not in header  # with the lanes, not a column
