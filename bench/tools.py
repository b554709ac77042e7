"""Tool calls on hostile inputs: a deep offset, a huge .gitignore, a cancel while a call runs.

Reading at line 29 999 990 of a 60 MB file used to decode every line before it (22-28 s); Glob over a
workspace with a 200 000-line .gitignore ran two rg processes with a 30 s timer each (28-35 s) and a
cancel did not stop either. Targets: the deep Read under 2 s, a call ends within 0.2 s of its
deadline, and a cancelled call returns within 0.5 s.
"""

from __future__ import annotations

import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from aforo.protocols import ToolOutput
from aforo.tools import ToolRegistry, default_registry, default_tools

DEEP_LINES = 30_000_000  # "x\n" each: 60 MB
IGNORE_LINES = 200_000
DEADLINE_S = 3.0
CANCEL_AFTER_S = 0.5


def timed(call: Callable[[], ToolOutput]) -> tuple[ToolOutput, float]:
    started = time.perf_counter()
    out = call()
    return out, time.perf_counter() - started


def cancelled(registry: ToolRegistry, name: str, args: dict[str, object]) -> tuple[ToolOutput, float]:
    """Run a call, cancel it after CANCEL_AFTER_S; the time from the cancel to the answer."""
    cancel = threading.Event()
    at: list[float] = []

    def fire() -> None:
        at.append(time.perf_counter())
        cancel.set()

    timer = threading.Timer(CANCEL_AFTER_S, fire)
    timer.start()
    out = registry.execute(name, args, cancel=cancel)
    ended = time.perf_counter()
    timer.join()
    return out, ended - at[0]


def main() -> int:
    ok = True
    with tempfile.TemporaryDirectory(prefix="aforo-bench-tools-") as tmp:
        ws = Path(tmp)
        with (ws / "big.txt").open("wb") as f:
            f.write(b"x\n" * DEEP_LINES)
        huge = ws / "ignored"
        (huge / "src").mkdir(parents=True)
        (huge / ".gitignore").write_text("".join(f"dir{i}/sub{i}/*.tmp{i}\n" for i in range(IGNORE_LINES)))
        (huge / "src" / "a.py").write_text("needle\n")

        registry = default_registry(ws)
        offset = DEEP_LINES - 10
        deep, deep_s = timed(
            lambda: registry.execute("Read", {"file_path": "big.txt", "offset": offset, "limit": 3})
        )
        _, head_s = timed(lambda: registry.execute("Read", {"file_path": "big.txt", "limit": 3}))
        ok &= not deep.is_error and deep_s < 2.0
        print(
            f"Read of a 60 MB file: offset {offset:,} {deep_s:.2f} s, offset 1 {head_s * 1000:.1f} ms "
            f"(ratio {deep_s / head_s:.1f}: both count every line; target < 2 s)"
        )

        slow = ToolRegistry(default_tools(), huge, seconds=DEADLINE_S)
        glob, glob_s = timed(lambda: slow.execute("Glob", {"pattern": "*.py"}))
        late = glob_s - DEADLINE_S
        ok &= glob.is_error and "tool_seconds" in glob.content and late < 0.2
        print(
            f"Glob with a {IGNORE_LINES:,}-line .gitignore, tool_seconds={DEADLINE_S:g}: answered after "
            f"{glob_s:.2f} s ({late * 1000:+.0f} ms past the deadline; target < 200 ms): "
            f"{glob.content.splitlines()[0][:70]}"
        )

        for name, args in [
            ("Glob", {"pattern": "*.py"}),
            ("Grep", {"pattern": "needle"}),
        ]:
            out, latency = cancelled(default_registry(huge), name, args)
            ok &= out.is_error and "cancelled" in out.content and latency < 0.5
            print(
                f"{name} cancelled {CANCEL_AFTER_S:g} s into the call: answered {latency * 1000:.0f} ms "
                "after the cancel (target < 500 ms)"
            )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
