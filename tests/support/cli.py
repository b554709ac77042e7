"""Run the real `aforo` console script as a subprocess, the way a user does."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

AFORO = str(Path(sys.executable).parent / "aforo")


@dataclass
class CliRun:
    code: int
    out: str
    err: str

    def events(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.out.splitlines() if line.strip()]

    def run_end(self) -> dict[str, Any]:
        ends = [e for e in self.events() if e["type"] == "run_end"]
        assert len(ends) == 1, self.out
        return ends[0]


def run_cli(
    *args: str, timeout: float = 60, stdin: str | None = None, env: dict[str, str] | None = None
) -> CliRun:
    full_env = {**os.environ, **(env or {})}
    proc = subprocess.run(
        [AFORO, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        input=stdin if stdin is not None else "",
        env=full_env,
    )
    return CliRun(proc.returncode, proc.stdout, proc.stderr)
