"""scripts/real-model itself with the real engine: `run` serves a private llama-server to CMD, passes
CMD's exit code on, and stops the server whatever CMD did. Uses the package's engine cache that the
outer `make test-real` already filled (no build).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

pytestmark = pytest.mark.real

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "real-model"

CHILD = """
import os, sys, urllib.request
url = os.environ["AFORO_REAL_BASE_URL"]
print(url, os.environ["AFORO_REAL_MODEL"])
with urllib.request.urlopen(url.removesuffix("/v1") + "/props") as r:
    assert r.status == 200
sys.exit(int(sys.argv[1]))
"""


@pytest.mark.timeout(600)
@pytest.mark.parametrize("code", [0, 3])
def test_run_passes_the_exit_code_on_and_stops_its_server(real_base_url: str, code: int) -> None:
    # The engine cache (AFORO_ENGINE_HOME, if set) is inherited: the outer `make test-real` filled it.
    env = {k: v for k, v in os.environ.items() if not k.startswith("AFORO_REAL_")}
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "run", "--", sys.executable, "-c", CHILD, str(code)],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == code, proc.stderr
    url, model = proc.stdout.split()
    assert url.startswith("http://127.0.0.1:") and url.endswith("/v1")
    assert url != real_base_url  # a private server, not the one these tests use
    assert model
    with pytest.raises(httpx.ConnectError):
        httpx.get(url.removesuffix("/v1") + "/health", timeout=5)
