"""What `pip install` / `pipx install` read: the license file, the metadata, dependency ranges.

`pipx install .` itself was checked by hand (README, "Install"): it needs the package index, which the
fast suite does not reach.
"""

from __future__ import annotations

import tomllib
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
