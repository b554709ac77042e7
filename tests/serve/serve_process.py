"""`aforo serve` as a user starts it, in a subprocess, in front of a server the test started."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from support.cli import AFORO


@dataclass
class Serving:
    url: str  # the first line it printed
    proc: subprocess.Popen[str]
    err: str = ""  # its stderr, once it ended


# Lowers the limits on open descriptors, soft and hard, then becomes `aforo` (a preexec_fn is unsafe in a
# process with threads, as the tests' servers are).
_LIMITED = (
    "import os, resource, sys; limits = (int(sys.argv[1]), int(sys.argv[2])); "
    "resource.setrlimit(resource.RLIMIT_NOFILE, limits); os.execv(sys.argv[3], sys.argv[3:])"
)


@contextmanager
def serving(
    *args: str, env: dict[str, str] | None = None, descriptors: tuple[int, int] | None = None
) -> Iterator[Serving]:
    """`aforo serve --port 0 ARGS`; yields once it printed its URL, and ends it (SIGTERM) afterwards.
    `descriptors`: the RLIMIT_NOFILE it starts with, soft and hard (else this process's)."""
    command = [AFORO, "serve", "--port", "0", *args]
    if descriptors is not None:
        command = [sys.executable, "-c", _LIMITED, *map(str, descriptors), *command]
    proc = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
    )
    running = Serving("", proc)
    try:
        assert proc.stdout is not None
        running.url = proc.stdout.readline().strip()
        if not running.url.startswith("http://"):
            raise AssertionError(f"aforo serve did not start: {proc.communicate(timeout=30)[1]}")
        yield running
    finally:
        if proc.poll() is None:
            proc.terminate()
        _, err = proc.communicate(timeout=30)
        running.err += err or ""
