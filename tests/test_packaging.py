"""What `pip install` / `pipx install` read: the license file, the metadata, dependency ranges; and the
wheel `pipx install .` builds, installed into a venv of its own, where its `aforo` runs.

The wheel test does what `pipx install .` does, offline: build the wheel from a copy of the project (so
the shared checkout gets no build/ or egg-info), install it with `--no-deps --no-index` into a fresh venv,
and run the console script there. The dependencies are the ones already installed in this venv, reached
through a path-only `.pth` (a path line's own .pth files are not processed, so the editable install of
this checkout stays out of sight). pipx itself is not run: it would fetch pip and the dependencies from
the package index on every run.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
import tomllib
import zipfile
from importlib.metadata import version
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parent.parent
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def test_the_license_file_is_the_mit_license_pyproject_names() -> None:
    assert PROJECT["license"] == "MIT" and PROJECT["license-files"] == ["LICENSE"]
    text = (ROOT / "LICENSE").read_text()
    assert text.startswith("MIT License") and "Permission is hereby granted, free of charge" in text


def test_the_metadata_says_who_and_what() -> None:
    assert PROJECT["authors"] and all(a.get("name") for a in PROJECT["authors"])
    classifiers = PROJECT["classifiers"]
    assert "Environment :: Console" in classifiers
    # Only the Python versions requires-python allows, and no license classifier next to the SPDX
    # expression (setuptools refuses both).
    assert PROJECT["requires-python"] == ">=3.11" and "Programming Language :: Python :: 3.11" in classifiers
    assert not any(c.startswith("License ::") for c in classifiers)
    assert PROJECT["urls"] == {
        "Homepage": "https://github.com/aforo-dev/aforo",
        "Repository": "https://github.com/aforo-dev/aforo",
        "Issues": "https://github.com/aforo-dev/aforo/issues",
        "Documentation": "https://github.com/aforo-dev/aforo#readme",
    }


def test_every_dependency_is_a_range_with_a_ceiling() -> None:
    deps = [Requirement(d) for d in PROJECT["dependencies"]]
    for extra in PROJECT["optional-dependencies"].values():
        deps += [Requirement(d) for d in extra if d != "types-jsonschema"]
    for req in deps:
        ops = {s.operator for s in req.specifier}
        assert "==" not in ops and "<" in ops, f"{req} must be a range with an upper bound"


def test_the_ripgrep_range_holds_the_wheel_installed_here() -> None:
    (ripgrep,) = [Requirement(d) for d in PROJECT["dependencies"] if d.startswith("ripgrep")]
    assert version("ripgrep") in ripgrep.specifier
    assert "15.1.0" not in ripgrep.specifier  # a source build only, which cannot install here


def _run(*args: str | Path) -> str:
    proc = subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=110, check=False)
    assert proc.returncode == 0, f"{args}: exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def test_the_wheel_installs_into_a_fresh_venv_with_its_entry_point_and_package_data(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, project / name)
    shutil.copytree(ROOT / "src", project / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    dist = tmp_path / "dist"
    _run(
        sys.executable,
        "-m",
        "pip",
        "wheel",
        "--no-deps",
        "--no-build-isolation",
        "--no-index",
        "-w",
        dist,
        project,
    )
    (wheel,) = dist.glob("aforo-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        metadata = zf.read("aforo-0.1.0.dist-info/METADATA").decode()
    assert "Project-URL: Repository, https://github.com/aforo-dev/aforo" in metadata
    assert "License-Expression: MIT" in metadata

    venv = tmp_path / "venv"
    _run(sys.executable, "-m", "venv", "--without-pip", venv)
    python = venv / "bin" / "python"
    site = Path(_run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])").strip())
    (site / "deps-of-the-test-venv.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    _run(sys.executable, "-m", "pip", "--python", python, "install", "--no-deps", "--no-index", wheel)

    installed = site / "aforo"
    for data in (
        "py.typed",
        "engine/llama-server.txt",
        "engine/model-weights.txt",
        "engine/model-weights-1.5b.txt",
    ):
        assert (installed / data).read_bytes() == (ROOT / "src" / "aforo" / data).read_bytes(), data
    where = _run(python, "-c", "import aforo; print(aforo.__file__)").strip()
    assert Path(where).is_relative_to(installed)  # the wheel's copy, not this checkout's src/

    aforo = venv / "bin" / "aforo"
    assert aforo.read_text().startswith(f"#!{python}")  # the entry point runs the new venv's python
    assert _run(aforo, "--version").strip() == "aforo 0.1.0"
    assert "usage: aforo" in _run(aforo, "--help")
