"""scripts/real-model without the engine: cache validity, PID safety, usage errors (fast, no network)."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "real-model"


def load(cache: Path, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.setenv("AFORO_REAL_CACHE", str(cache))
    loader = importlib.machinery.SourceFileLoader("real_model_script", str(SCRIPT))
    spec = importlib.util.spec_from_loader("real_model_script", loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def script(*args: str, cache: Path) -> subprocess.CompletedProcess[str]:
    env = {"AFORO_REAL_CACHE": str(cache), "PATH": "/usr/bin:/bin", "HOME": str(cache)}
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, env=env, timeout=60
    )


def test_engine_dir_is_keyed_on_cpu_and_build_flags(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rm = load(tmp_path, monkeypatch)
    assert rm.cpu_key() == rm.cpu_key()
    first = rm.engine_dir()
    assert first.parent == tmp_path / "engine"
    assert first.name.startswith(f"b11434-{rm.cpu_key()}-")
    monkeypatch.setattr(rm, "CMAKE_ARGS", rm.CMAKE_ARGS + " -DGGML_AVX512=ON")
    assert rm.engine_dir() != first


def test_model_is_valid_only_with_a_matching_stamp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rm = load(tmp_path, monkeypatch)
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    stamp = gguf.with_suffix(".stamp.json")
    assert not rm.model_valid(gguf)
    st = gguf.stat()
    stamp.write_text(json.dumps({"sha256": rm.GGUF_SHA256, "size": st.st_size, "mtime_ns": st.st_mtime_ns}))
    assert rm.model_valid(gguf)
    gguf.write_bytes(b"GGUF but changed")  # a modified file is no longer trusted
    assert not rm.model_valid(gguf)
    stamp.write_text("{not json")
    assert not rm.model_valid(gguf)


def test_stop_never_signals_a_process_that_is_not_llama_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rm = load(tmp_path, monkeypatch)
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        (tmp_path / "server.json").write_text(
            json.dumps({"pid": sleeper.pid, "url": "http://127.0.0.1:1/v1"})
        )
        assert not rm.is_our_server(sleeper.pid)
        assert script("stop", cache=tmp_path).returncode == 0
        assert sleeper.poll() is None  # a recycled PID is left alone
    finally:
        sleeper.kill()
        sleeper.wait()


def test_url_without_a_server_and_run_without_a_command_fail_clearly(tmp_path: Path) -> None:
    url = script("url", cache=tmp_path)
    assert url.returncode == 1 and "scripts/real-model start" in url.stderr
    run = script("run", "--", cache=tmp_path)
    assert run.returncode == 1 and "usage: scripts/real-model run" in run.stderr
