"""The governor's records on disk: every field of a record reaches its column, checkpoint facts reach the
checkpoint file, and the session they are filed under is asked for at each write."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from pathlib import Path

import pytest

from aforo.events import Event
from aforo.messages import Message, Usage
from aforo.records import CheckpointFacts, Decision, Evidence, Stamp, TelemetryRecord, Where
from aforo.store.checkpoints import CheckpointStore
from aforo.store.journal import StoreJournal
from aforo.store.telemetry import Telemetry

WHERE = Where(
    model="m",
    server="llama.cpp",
    window=4096,
    window_source="--context-window",
    counter="llama.cpp /tokenize",
)


def journal(tmp_path: Path, session: list[str]) -> tuple[StoreJournal, Telemetry, list[Event]]:
    events: list[Event] = []
    telemetry = Telemetry(tmp_path / "telemetry.db")
    return (
        StoreJournal(lambda: session[0], CheckpointStore(tmp_path / "cp"), telemetry, events.append),
        telemetry,
        events,
    )


def test_every_field_of_a_record_reaches_its_column(tmp_path: Path) -> None:
    store, telemetry, events = journal(tmp_path, ["s1"])
    skip = ("event", "stamp", "usage")
    values = {f.name: n for n, f in enumerate(fields(TelemetryRecord), start=11) if f.name not in skip}
    values |= {"duration_ms": 1.5, "cause": "why", "checkpoint": "cp-1", "client": "127.0.0.1 curl/8"}
    usage = Usage(input_tokens=700, cache_read_tokens=300, cache_write_tokens=20, output_tokens=40)
    store.record(
        TelemetryRecord(
            event="compaction", stamp=Stamp(where=WHERE, lane="fast", served="q"), usage=usage, **values
        )
    )
    (row,) = telemetry.rows()
    assert row["session"] == "s1" and row["event"] == "compaction"
    assert {k: row[k] for k in values} == values
    assert {k: row[k] for k in ("model", "server", "window", "window_source", "counter")} == asdict(WHERE)
    assert (row["lane"], row["model_served"]) == ("fast", "q")
    # What the server read, cached tokens included; the answer's tokens; the cached ones.
    assert (row["input_tokens"], row["output_tokens"], row["cached_tokens"]) == (1020, 40, 300)
    assert events == []


def test_an_unknown_lane_and_model_and_no_usage_are_null(tmp_path: Path) -> None:
    store, telemetry, _ = journal(tmp_path, ["s1"])
    store.record(TelemetryRecord(event="admission", stamp=Stamp(where=WHERE, lane="")))
    (row,) = telemetry.rows()
    nulls = ("lane", "model_served", "input_tokens", "output_tokens", "cached_tokens")
    assert {k: row[k] for k in nulls} == dict.fromkeys(nulls)


def test_a_field_the_store_has_no_column_for_is_an_error(tmp_path: Path) -> None:
    @dataclass(frozen=True)
    class Richer(TelemetryRecord):
        mood: str = "curious"

    store, telemetry, _ = journal(tmp_path, ["s1"])
    with pytest.raises(TypeError, match="mood"):
        store.record(Richer(event="admission", stamp=Stamp(where=WHERE, lane="")))
    assert telemetry.rows() == []


def test_checkpoint_facts_reach_the_file_of_the_session_asked_for(tmp_path: Path) -> None:
    session = ["s1"]
    store, _, _ = journal(tmp_path, session)
    facts = CheckpointFacts(
        reason="compact",
        tokens_before=2345,
        stamp=Stamp(where=WHERE, lane=""),
        goal="find the bug",
        hard=("never touch tests/",),
        decisions=(Decision("read a.py first", "it is the entry point"),),
        evidence=(Evidence("Read a.py", "call_1"),),
        next_action="read b.py",
    )
    session[0] = "s2"  # /resume switched sessions: the checkpoint follows
    cp_id = store.checkpoint((Message.user("find the bug"),), facts)
    (entry,) = store.checkpoints.list("s2")
    cp = store.checkpoints.load(entry.path)
    assert cp.id == cp_id and cp.session_id == "s2" and cp.reason == "compact"
    assert cp.decisions == [{"decision": "read a.py first", "why": "it is the entry point"}]
    assert cp.evidence == [{"source": "Read a.py", "detail": "call_1"}]
    assert (cp.goal, cp.constraints["hard"], cp.next_action) == (
        "find the bug",
        ["never touch tests/"],
        "read b.py",
    )
    assert (cp.tokens_before, cp.window, cp.counter) == (2345, 4096, "llama.cpp /tokenize")
    assert [c[0] for c in store.checkpoint_history()] == [cp_id]
