"""`aforo serve` as a user starts it: its first line is the URL it serves; no open relay."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import httpx
import pytest

from aforo.engine.server import alive
from dialects.openai_app import Reply, Script, make_openai_app
from support.cli import AFORO, run_cli
from support.fake_engine import FAKE_ANSWER, seed_installed, write_fake_llama_server
from support.live_server import LiveServer


@pytest.mark.parametrize("configured", [False, True], ids=["--upstream", "AFORO_BASE_URL"])
def test_the_first_line_is_the_url_and_a_client_gets_its_answer_there(configured: bool) -> None:
    script = Script(Reply(text="hello from upstream", prompt_tokens=12))
    with LiveServer(make_openai_app(script, models={"test-model": None})) as upstream:
        # The server comes from the flag, or from the configuration a run would read.
        where = [] if configured else ["--upstream", upstream.url]
        env = {**os.environ, "AFORO_BASE_URL": upstream.url} if configured else dict(os.environ)
        cmd = [AFORO, "serve", *where, "--port", "0", "--context-window", "4096"]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        try:
            assert proc.stdout is not None
            url = proc.stdout.readline().strip()
            assert url.startswith("http://127.0.0.1:")
            ask = {"model": "test-model", "messages": [{"role": "user", "content": "hi"}]}
            resp = httpx.post(f"{url}/v1/chat/completions", json=ask, timeout=30)
        finally:
            proc.terminate()
            _, err = proc.communicate(timeout=10)
    assert resp.json()["choices"][0]["message"]["content"] == "hello from upstream"
    assert resp.headers["x-aforo-verdict"] == "clean"
    # Its log says what it did with each request.
    used = resp.headers["x-aforo-context-used"]
    assert f"aforo serve: test-model: {used}/4096 tokens, clean (127.0.0.1 python-httpx/" in err


def test_another_address_needs_a_key() -> None:
    run = run_cli("serve", "--host", "0.0.0.0", "--upstream", "http://127.0.0.1:9")
    assert run.code == 2
    assert (
        "give a key, which every client must send (AFORO_SERVE_KEY=KEY, --key-file PATH or --key KEY)"
        in run.err
    )


def test_local_serves_the_engine_it_starts_and_stops_it_on_exit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`aforo serve --local`: the gateway in front of aforo's own engine (here the fake llama-server of an
    installed cache), started as `aforo --local` starts it and stopped when the gateway ends."""
    root = tmp_path / "engine"
    seed_installed(root, write_fake_llama_server(tmp_path / "bin"))
    monkeypatch.setenv("AFORO_ENGINE_HOME", str(root))
    monkeypatch.setenv("FAKE_LLAMA_STARTS", str(tmp_path / "starts"))
    proc = subprocess.Popen(
        [AFORO, "serve", "--local", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ),
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), proc.stderr.read() if proc.stderr else ""
        models = httpx.get(f"{url}/v1/models", timeout=30).json()
        ask = {"model": models["data"][0]["id"], "messages": [{"role": "user", "content": "hi"}]}
        resp = httpx.post(f"{url}/v1/chat/completions", json=ask, timeout=30)
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    assert resp.status_code == 200, resp.text
    assert resp.json()["choices"][0]["message"]["content"] == FAKE_ANSWER
    assert resp.headers["x-aforo-context-window"] == "8192"  # the window --local gives the engine
    [pid] = [int(x) for x in (tmp_path / "starts").read_text().split()]
    assert not alive(pid), err  # the engine it started is stopped with it


def test_local_and_an_upstream_together_are_a_usage_error() -> None:
    run = run_cli("serve", "--local", "--upstream", "http://127.0.0.1:9")
    assert run.code == 2 and "--upstream" in run.err
