"""Peak memory of the whole fault suite (tests/faults): gzip bombs (double and triple gzip too), endless
streams, 50 MB lines, ripgrep over a 200 000-line .gitignore.

Before the stream limits one unterminated line or one 3 MB gzip body that inflates to 3 GiB took
13.5-14 GB; before each Content-Encoding layer was inflated in steps, a double-gzipped 512 MiB bomb of
a few KB held 1 GiB (4 GiB: a MemoryError); before ripgrep's memory cap, that .gitignore took it to
3.8 GB (the suite caps it lower: 32-256 MiB of child_memory_bytes). The suite runs in a child
process; its largest resident set (that of pytest, which holds the test servers and the providers in
its threads, or of any aforo or ripgrep it started) is what the kernel reports for the finished
children. Target: under 500 MB.
"""

from __future__ import annotations

import resource
import subprocess
import sys
import time
from pathlib import Path

TARGET_MB = 500


def main() -> int:
    root = Path(__file__).resolve().parents[1]
    started = time.perf_counter()
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/faults"],
        cwd=root,
        capture_output=True,
        text=True,
        check=False,
    )
    took = time.perf_counter() - started
    # ru_maxrss of the children: the largest resident set of any waited-for descendant, in KiB (Linux).
    peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    summary = run.stdout.strip().splitlines()[-1] if run.stdout.strip() else run.stderr.strip()[-300:]
    print(f"tests/faults: {summary} in {took:.1f} s")
    print(f"peak memory: {peak_mb:.0f} MB (largest process of the suite; target < {TARGET_MB} MB)")
    return 0 if run.returncode == 0 and peak_mb < TARGET_MB else 1


if __name__ == "__main__":
    sys.exit(main())
