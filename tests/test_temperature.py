"""aforo sends temperature 0 unless told otherwise: a server's own default is tuned for chat, and at it
the 0.5B model answered `...` (issue 32). `--temperature` and the config key still choose."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from support.cli import run_cli
from support.live_server import LiveServer
from test_constrained_cli import llamacpp_steps, workspace


def _temperatures(tmp_path: Path, *flags: str, config: str = "") -> list[Any]:
    ws = workspace(tmp_path)
    if config:
        (ws / ".aforo.toml").write_text(config)
    bodies: list[dict[str, Any]] = []
    with LiveServer(llamacpp_steps(lambda body: {"answer": "It is beta.py."}, bodies)) as server:
        run = run_cli("-w", str(ws), "--base-url", server.url, "-m", "m", *flags, "which?")
    assert run.code == 0, run.err
    return [b.get("temperature", "absent") for b in bodies if b.get("max_tokens") != 1]


def test_the_request_carries_temperature_0_by_default(tmp_path: Path) -> None:
    assert _temperatures(tmp_path) == [0]


@pytest.mark.parametrize(
    ("flags", "config", "sent"),
    [
        (("--temperature", "0.7"), "", 0.7),
        ((), "temperature = 0.4\n", 0.4),
        (("--temperature", "0.9"), "temperature = 0.4\n", 0.9),
    ],
)
def test_the_users_temperature_is_sent_when_given(
    tmp_path: Path, flags: tuple[str, ...], config: str, sent: float
) -> None:
    assert _temperatures(tmp_path, *flags, config=config) == [sent]
