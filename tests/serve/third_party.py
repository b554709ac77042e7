"""Third-party clients for the real-client tests, each installed from the package registry into its own
venv under the user's cache (`~/.cache/aforo/test-clients/NAME-VERSION`), kept between runs.

Their own venvs, not aforo's dev extra: mini-swe-agent alone brings litellm, datasets and textual, whose
pins must not move aforo's; and a client is run as its users run it, as its own program. The first run
on a machine installs them (a minute or more); a failed install fails the test with pip's words.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import platformdirs
import pytest

CACHE = Path(platformdirs.user_cache_dir("aforo")) / "test-clients"
INSTALL_TIMEOUT_S = 900
CLIENT_TIMEOUT_S = 600
DONE = ".installed"

LLM = ("llm", "0.36")
MINI_SWE_AGENT = ("mini-swe-agent", "2.4.6")


def venv(package: tuple[str, str]) -> Path:
    """The venv holding `package` (name, pinned version), installed on first use; one installer at a
    time (pytest-xdist workers, two checkouts), a half-done venv started over."""
    name, version = package
    root = CACHE / f"{name}-{version}"
    if (root / DONE).exists():
        return root
    CACHE.mkdir(parents=True, exist_ok=True)
    with (CACHE / f"{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (root / DONE).exists():
            return root
        shutil.rmtree(root, ignore_errors=True)
        pip = [str(root / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
        steps: Sequence[list[str]] = ([sys.executable, "-m", "venv", str(root)], [*pip, f"{name}=={version}"])
        for step in steps:
            done = subprocess.run(step, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S)
            if done.returncode != 0:
                pytest.fail(f"could not install {name}=={version}: {done.stderr[-2000:]}")
        (root / DONE).touch()
    return root


def client_env(**extra: str) -> dict[str, str]:
    """The test's environment (already hermetic: conftest cleared every OPENAI_* and proxy setting) plus
    `extra`: what the client reads is only what the test gives it."""
    return {**os.environ, **extra}


LLM_MODEL_ID = "aforo-test"


class Llm:
    """The `llm` command with its own user directory (LLM_USER_PATH) and one model declared in its
    extra-openai-models.yaml: `model` served at `base_url`, as llm's users declare a local server."""

    def __init__(self, home: Path, base_url: str, model: str = "test-model") -> None:
        self.python = venv(LLM) / "bin" / "python"
        self.home = home
        home.mkdir(parents=True, exist_ok=True)
        (home / "extra-openai-models.yaml").write_text(
            f"- model_id: {LLM_MODEL_ID}\n  model_name: {model}\n  api_base: {base_url}/v1\n"
        )

    def __call__(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.python), "-m", "llm", *args],
            env=client_env(LLM_USER_PATH=str(self.home)),
            capture_output=True,
            text=True,
            timeout=CLIENT_TIMEOUT_S,
        )


def mini(
    base_url: str, workdir: Path, *, task: str, steps: int, model: str = "test-model"
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """mini-swe-agent's `mini -y --exit-immediately` with its own mini.yaml (a bash tool, through
    litellm) on `model` at `base_url`, in `workdir`, at most `steps` model calls; its exit and the
    trajectory it saved ({} when none)."""
    python = venv(MINI_SWE_AGENT) / "bin" / "python"
    trajectory = workdir / "trajectory.json"
    workdir.mkdir(parents=True, exist_ok=True)
    settings = {
        "model.model_kwargs.api_base": f"{base_url}/v1",
        "model.model_kwargs.api_key": "unused",
        "model.cost_tracking": "ignore_errors",  # a local model has no price
        "agent.step_limit": str(steps),
    }
    command = [str(python), "-m", "minisweagent.run.mini", "-y", "--exit-immediately"]
    command += ["-m", f"openai/{model}", "-t", task, "-c", "mini.yaml"]
    command += [arg for key, value in settings.items() for arg in ("-c", f"{key}={value}")]
    command += ["-o", str(trajectory)]
    env = client_env(
        MSWEA_CONFIGURED="true",  # no first-run setup wizard
        MSWEA_GLOBAL_CONFIG_DIR=str(workdir / "config"),
        MSWEA_SILENT_STARTUP="1",
        LITELLM_LOCAL_MODEL_COST_MAP="True",  # litellm would fetch its price list from the network
    )
    done = subprocess.run(
        command, cwd=workdir, env=env, capture_output=True, text=True, timeout=CLIENT_TIMEOUT_S
    )
    saved = json.loads(trajectory.read_text()) if trajectory.exists() else {}
    return done, saved
