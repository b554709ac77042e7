"""Kill-loop: SIGKILL a process in the middle of checkpoint writes, many times, then load.

The child rewrites one logical slot alternating two distinct checkpoints (A, B) and keeps adding
checkpoints to a store whose quota forces an eviction on every write. After every kill the slot must
load as exactly A or exactly B, every listed checkpoint must load, and the temp files the kills leave
behind must never be listed as checkpoints.
"""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from aforo.messages import Message
from aforo.store.checkpoints import Checkpoint, CheckpointStore, load_checkpoint

ITERATIONS = 30
QUOTA = 64 * 1024


def slot_checkpoint(tag: str) -> Checkpoint:
    # Different sizes, so a torn mix of the two could not pass for either.
    size = 40_000 if tag == "A" else 15_000
    return Checkpoint(
        session_id="slot",
        reason="compact",
        id=f"cp-{tag}",
        created_at="2025-01-01T00:00:00+00:00",
        goal=f"goal {tag}",
        constraints={"hard": [f"hard {tag}"], "soft": []},
        messages=[Message.user(tag * size), Message.assistant(f"ack {tag}")],
    )


CHILD = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    sys.path.insert(0, sys.argv[2])
    from test_store_crash import QUOTA, slot_checkpoint
    from aforo.messages import Message
    from aforo.store.atomic import atomic_write
    from aforo.store.checkpoints import Checkpoint, CheckpointStore, encode_checkpoint

    root = Path(sys.argv[1])
    slot = root / "slot" / "current.json"
    blobs = [encode_checkpoint(slot_checkpoint("A")), encode_checkpoint(slot_checkpoint("B"))]
    store = CheckpointStore(root / "store", session_quota_bytes=QUOTA, total_quota_bytes=QUOTA)
    if not slot.exists():
        atomic_write(slot, blobs[0])
    print("ready", flush=True)
    i = 0
    while True:
        atomic_write(slot, blobs[i % 2])
        store.write(Checkpoint(session_id="s", reason="clear", messages=[Message.user(f"turn {i} " + "x" * 9000)]))
        i += 1
    """
)


@pytest.mark.timeout(90)
def test_sigkill_during_writes_never_leaves_a_corrupt_checkpoint(tmp_path: Path) -> None:
    rng = random.Random(7)
    expected = {cp.id: cp for cp in (slot_checkpoint("A"), slot_checkpoint("B"))}
    store = CheckpointStore(tmp_path / "store", session_quota_bytes=QUOTA, total_quota_bytes=QUOTA)
    slot = tmp_path / "slot" / "current.json"
    seen: set[str] = set()
    temps_seen = 0
    tests_dir = str(Path(__file__).parent)
    for _ in range(ITERATIONS):
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD, str(tmp_path), tests_dir], stdout=subprocess.PIPE
        )
        assert child.stdout is not None
        assert child.stdout.readline() == b"ready\n", "the writer did not start"
        time.sleep(rng.uniform(0.005, 0.12))
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=10)
        child.stdout.close()

        cp = load_checkpoint(slot)  # raises StoreError if torn
        assert cp == expected[cp.id]
        seen.add(cp.id)

        listed = store.list()
        for entry in listed:
            store.load(entry.path)
            assert not entry.path.name.startswith(".")
        temps = [p for p in (tmp_path / "store" / "s").glob(".*.tmp")]
        temps_seen += bool(temps)
        assert not {p for p in temps} & {e.path for e in listed}
        # A kill between writing a checkpoint and evicting may leave one file over the quota; never more.
        largest = max((e.size_bytes for e in listed), default=0)
        assert sum(e.size_bytes for e in listed) <= QUOTA + largest
        if listed:
            assert store.latest("s") is not None
    # Both contents were observed in the slot: the loop really alternated under the kills.
    assert seen == {"cp-A", "cp-B"}, f"slot only ever held {seen}; temps left by kills: {temps_seen}"
