"""Kill-loop: SIGKILL a process in the middle of checkpoint writes, many times, then load.

The child rewrites one logical slot alternating two distinct checkpoints (A, B) and keeps adding
checkpoints to a store whose quota forces an eviction on every write. After every kill the slot must
load as exactly A or exactly B, every listed checkpoint must load, and the temp files the kills leave
behind must never be listed as checkpoints.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from aforo.messages import Message
from aforo.store.atomic import atomic_write
from aforo.store.checkpoints import Checkpoint, CheckpointStore, encode_checkpoint, load_checkpoint

ITERATIONS = 40
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


# A long-lived "zygote" imports aforo once and forks one writer per round: each round costs a fork, not
# an interpreter start, so many kills fit in a few seconds. The writer is a real process; SIGKILL is real.
ZYGOTE = textwrap.dedent(
    """
    import os, sys
    from pathlib import Path
    from aforo.messages import Message
    from aforo.store.atomic import atomic_write
    from aforo.store.checkpoints import Checkpoint, CheckpointStore

    root, quota = Path(sys.argv[1]), int(sys.argv[2])
    slot = root / "slot" / "current.json"
    blobs = [(root / "A.bin").read_bytes(), (root / "B.bin").read_bytes()]
    store = CheckpointStore(root / "store", session_quota_bytes=quota, total_quota_bytes=quota)

    def writer():
        print(f"ready {os.getpid()}", flush=True)
        i = 0
        while True:
            atomic_write(slot, blobs[i % 2])
            msg = Message.user(f"turn {i} " + "x" * 9000)
            store.write(Checkpoint(session_id="s", reason="clear", messages=[msg]))
            i += 1

    print("zygote", flush=True)
    for _ in sys.stdin:
        pid = os.fork()
        if pid == 0:
            try:
                writer()
            finally:
                os._exit(1)
        print(f"reaped {os.waitpid(pid, 0)[1]}", flush=True)
    """
)


@pytest.mark.timeout(90)
def test_sigkill_during_writes_never_leaves_a_corrupt_checkpoint(tmp_path: Path) -> None:
    rng = random.Random(7)
    expected = {cp.id: cp for cp in (slot_checkpoint("A"), slot_checkpoint("B"))}
    for tag in "AB":
        (tmp_path / f"{tag}.bin").write_bytes(encode_checkpoint(slot_checkpoint(tag)))
    slot = tmp_path / "slot" / "current.json"
    atomic_write(slot, (tmp_path / "A.bin").read_bytes())
    store = CheckpointStore(tmp_path / "store", session_quota_bytes=QUOTA, total_quota_bytes=QUOTA)
    zygote = subprocess.Popen(
        [sys.executable, "-c", ZYGOTE, str(tmp_path), str(QUOTA)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert zygote.stdin is not None and zygote.stdout is not None
    seen: set[str] = set()
    temps_seen = 0
    try:
        assert zygote.stdout.readline() == "zygote\n"
        for _ in range(ITERATIONS):
            zygote.stdin.write("go\n")
            zygote.stdin.flush()
            ready = zygote.stdout.readline().split()
            assert ready[:1] == ["ready"], "the writer did not start"
            time.sleep(rng.uniform(0.002, 0.08))
            os.kill(int(ready[1]), signal.SIGKILL)
            status = int(zygote.stdout.readline().split()[1])
            assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL, (
                "the writer died on its own"
            )

            cp = load_checkpoint(slot)  # raises StoreError if torn
            assert cp == expected[cp.id]
            seen.add(cp.id)

            listed = store.list()
            for entry in listed:
                store.load(entry.path)
            temps = set((tmp_path / "store" / "s").glob(".*.tmp")) | set(slot.parent.glob(".*.tmp"))
            temps_seen += bool(temps)
            assert not temps & {e.path for e in listed}
            if listed:
                assert store.load(store.list("s")[0].path) is not None  # the newest reads whole
    finally:
        zygote.kill()
        zygote.wait(timeout=10)
        zygote.stdin.close()
        zygote.stdout.close()
    # Both contents were observed in the slot: the loop really alternated under the kills.
    assert seen == {"cp-A", "cp-B"}, f"slot only ever held {seen}; rounds with temp files left: {temps_seen}"
    # A kill between writing a checkpoint and evicting leaves the store over its quota; the next
    # successful write brings it back under.
    store.write(Checkpoint(session_id="s", reason="clear", messages=[Message.user("after the crashes")]))
    assert sum(e.size_bytes for e in store.list()) <= QUOTA
