"""`make bench`: every benchmark, side by side in one run. Exit 1 if any target is missed."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCHES = (
    "context_accounting.py",
    "overflow_signal.py",
    "canary.py",
    "redaction.py",
    "textcalls.py",
    "held_text.py",
    "question_scan.py",
    "loop_stop.py",
    "tools.py",
    "symbols.py",
    "faults_memory.py",
    "repomap.py",
    "gateway.py",
    "gateway_flood.py",
)


def main() -> int:
    here = Path(__file__).parent
    failed = []
    for name in BENCHES:
        print(f"== {name}", flush=True)
        if subprocess.run([sys.executable, str(here / name)], check=False).returncode != 0:
            failed.append(name)
        print(flush=True)
    if failed:
        print(f"targets missed: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
