"""A client cannot fill the disk or the terminal through what the gateway records (issue 39, D8): a model
name past `serve_model_chars` is a clear 400, and every text a telemetry row or a log line holds is cut at
`record_chars`."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from aforo.cli.serve_command import _log
from aforo.events import Info, Warning
from aforo.store.telemetry import Telemetry
from dialects.openai_app import Reply, Script, make_openai_app
from dialects.servers_apps import ollama_app
from serve.gateway_support import gateway

HUGE = "m" * 1_000_000


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/api/chat"])
def test_a_model_name_of_a_megabyte_is_refused_without_being_repeated(path: str) -> None:
    script = Script(Reply(text="hello", prompt_tokens=9))
    server = make_openai_app(script, models={"test-model": None}) if path.startswith("/v1") else ollama_app()
    ask = {"model": HUGE, "messages": [{"role": "user", "content": "hi"}], "stream": False}
    with gateway(server, window=4096) as (url, events):
        resp = httpx.post(f"{url}{path}", json=ask)
    assert resp.status_code == 400
    error = resp.json()["error"]
    message = error["message"] if isinstance(error, dict) else error
    assert "'model' has 1,000,000 characters, past serve_model_chars (1,024 characters" in message
    assert len(resp.text) < 1000  # the name is not sent back
    assert script.bodies == []
    assert all(len(repr(event)) < 1000 for event in events)
    assert all(HUGE[:2000] not in str(row) for row in Telemetry().rows())


def test_a_telemetry_row_holds_record_chars_of_each_text(tmp_path: Path) -> None:
    store = Telemetry(tmp_path / "telemetry.sqlite")
    try:
        store.record("run", session="s", cause="c" * 1_000_000, model="m" * 5000, client="a" * 1999)
        [row] = store.rows()
    finally:
        store.close()
    assert row["cause"] == "c" * 2000 + "… (998,000 more characters)"
    assert row["model"] == "m" * 2000 + "… (3,000 more characters)"
    assert row["client"] == "a" * 1999  # what fits is kept whole


def test_a_line_of_the_gateways_log_holds_record_chars(capsys: pytest.CaptureFixture[str]) -> None:
    _log(Warning(message="w" * 1_000_000))
    _log(Info(fields={"serve": "s" * 10}))
    warning, info = capsys.readouterr().err.splitlines()
    assert (
        warning == "aforo serve: ! " + "w" * (2000 - len("aforo serve: ! ")) + "… (998,015 more characters)"
    )
    assert info == "aforo serve: " + "s" * 10
