"""Hermetic tests: state lives in a temp dir, the environment carries no aforo/proxy settings."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

sys.path.insert(0, str(Path(__file__).parent))

# Besides every AFORO_* variable: what points a client at a server or a proxy, or changes output.
_CLEARED = frozenset(
    {
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "OPENAI_API_BASE",
        "OLLAMA_HOST",
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
        "NO_COLOR",
        "XDG_CONFIG_HOME",
    }
)


# Set by scripts/real-model for the real-model suite (which server, which cache); aforo never reads them.
_HARNESS_PREFIX = "AFORO_REAL_"


def leaked_settings() -> list[str]:
    """The variables of the environment a test must not inherit."""
    return sorted(
        name
        for name in os.environ
        if (name.startswith("AFORO_") and not name.startswith(_HARNESS_PREFIX)) or name in _CLEARED
    )


@pytest.fixture(autouse=True)
def hermetic_env(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path_factory.mktemp("aforo-home")
    # By prefix, not by list: a setting added later (AFORO_SERVER, AFORO_TOKENIZER...) is covered too.
    for name in leaked_settings():
        monkeypatch.delenv(name)
    monkeypatch.setenv("AFORO_HOME", str(home))
    # No user config file leaks in from the developer's machine.
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "xdg-config"))
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    return home


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    """A plain httpx client for tests that talk to a local test server directly."""
    with httpx.Client() as c:
        yield c


@pytest.fixture
def aforo_home(hermetic_env: Path) -> Path:
    return hermetic_env


def pytest_report_header() -> str:
    return f"AFORO_HOME is a per-test temp dir; python {sys.version.split()[0]} ({os.name})"
