"""scripts/real-model, the test harness over the package's engine manager (fast: the fake engine).

It must start from any Python (re-executing itself in the project's .venv), serve a private server to
CMD and pass CMD's exit code on, report an engine that cannot run here loudly, and never signal a
process that is not a llama-server.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from aforo.engine.home import EngineHome, write_json
from aforo.engine.pins import LLAMA_SERVER, QWEN_CODER_15B
from aforo.engine.server import Server, healthy
from support.fake_engine import seed_installed, seed_model, write_fake_llama_server

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "real-model"
CHILD = (
    "import os, sys; print(os.environ.get('AFORO_REAL_BASE_URL'), os.environ.get('AFORO_REAL_UNAVAILABLE'))"
)


def script(*args: str, cache: Path, python: str = sys.executable) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "AFORO_ENGINE_HOME": str(cache)}
    return subprocess.run([python, str(SCRIPT), *args], capture_output=True, text=True, env=env, timeout=60)


def test_url_without_a_server_and_run_without_a_command_fail_clearly(tmp_path: Path) -> None:
    url = script("url", cache=tmp_path)
    assert url.returncode == 1 and "scripts/real-model start" in url.stderr
    run = script("run", "--", cache=tmp_path)
    assert run.returncode == 1 and "usage: scripts/real-model run" in run.stderr


@pytest.mark.skipif(not (ROOT / ".venv" / "bin" / "python").exists(), reason="needs the project's .venv")
def test_started_by_a_python_without_aforo_it_runs_in_the_project_venv(tmp_path: Path) -> None:
    base = getattr(sys, "_base_executable", sys.executable)
    plain = subprocess.run([base, "-c", "import aforo"], capture_output=True, check=False)
    if plain.returncode == 0:
        pytest.skip("the base Python has aforo installed: nothing to re-execute")
    url = script("url", cache=tmp_path, python=base)
    assert url.returncode == 1 and "no running server" in url.stderr


def test_run_serves_a_private_engine_passes_the_exit_code_on_and_stops_it(tmp_path: Path) -> None:
    seed_installed(tmp_path / "cache", write_fake_llama_server(tmp_path / "bin"))
    child = CHILD + "; sys.exit(3)"
    run = script("run", "--reproducible", "--", sys.executable, "-c", child, cache=tmp_path / "cache")
    assert run.returncode == 3, run.stderr
    url = run.stdout.split()[0]
    assert url.startswith("http://127.0.0.1:") and url.endswith("/v1")
    assert not healthy(url.removesuffix("/v1"))
    assert not (tmp_path / "cache" / "run" / "server.json").exists()  # private: not the shared engine


def test_an_engine_that_cannot_run_here_is_said_loudly_and_tests_still_run_when_allowed(
    tmp_path: Path,
) -> None:
    home = EngineHome(tmp_path / "cache")
    write_json(home.engine_dir(LLAMA_SERVER) / "unavailable.json", {"reason": "no C++ compiler"})
    refused = script("run", "--", sys.executable, "-c", CHILD, cache=home.root)
    assert refused.returncode == 77
    assert "UNAVAILABLE" in refused.stderr and "no C++ compiler" in refused.stderr
    allowed = script("run", "--allow-unavailable", "--", sys.executable, "-c", CHILD, cache=home.root)
    assert allowed.returncode == 0
    assert "no C++ compiler" in allowed.stdout  # AFORO_REAL_UNAVAILABLE reached CMD


def test_stop_never_signals_a_process_that_is_not_llama_server(tmp_path: Path) -> None:
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        home = EngineHome(tmp_path)
        home.ensure_writable()
        recorded = Server(pid=sleeper.pid, port=1, model="m", model_path="/m.gguf", ctx=4096, log="/log")
        (home.run / "server.json").write_text(json.dumps({**recorded.to_json(), "pinned": True}))
        assert script("stop", cache=tmp_path).returncode == 0
        assert sleeper.poll() is None  # a recycled PID is left alone
    finally:
        sleeper.kill()
        sleeper.wait()


def test_run_serves_the_model_named_and_tells_cmd_its_name_and_pid(tmp_path: Path) -> None:
    home = seed_installed(tmp_path / "cache", write_fake_llama_server(tmp_path / "bin"))
    seed_model(home, QWEN_CODER_15B)
    child = (
        "import os; from pathlib import Path; "
        "cmd = Path('/proc/' + os.environ['AFORO_REAL_SERVER_PID'] + '/cmdline').read_bytes(); "
        "print(os.environ['AFORO_REAL_MODEL'], b'/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf' in cmd)"
    )
    run = script(
        "run", "--model", "qwen2.5-coder-1.5b-instruct", "--", sys.executable, "-c", child, cache=home.root
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == [
        "qwen2.5-coder-1.5b-instruct",
        "True",
    ]  # the server it runs serves that file
    unknown = script("run", "--model", "llama3", "--", sys.executable, "-c", "pass", cache=home.root)
    assert unknown.returncode == 1 and "qwen2.5-coder-1.5b-instruct" in unknown.stderr
