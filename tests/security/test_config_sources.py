"""Who decides where requests go: the user's flags, environment and config files, in a documented order,
and the conventions other tools share (OPENAI_BASE_URL, OPENAI_API_BASE, OLLAMA_HOST). Credentials go
only to a base URL one of them set, never to the built-in default."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hostile import write_user_config

from aforo.cli.config import NOT_GIVEN, load_config, ollama_url
from aforo.cli.config_values import DEFAULT_BASE_URL
from aforo.errors import ConfigError
from dialects.servers_apps import ollama_app
from support.cli import run_cli
from support.live_server import LiveServer

KEY = "sk-proj-user0000secret0000key0000abcd"


def config(tmp_path: Path, env: dict[str, str], **flags: Any) -> Any:
    return load_config({"workspace": str(tmp_path), **flags}, env=env)


def test_no_key_goes_to_the_built_in_default_url(tmp_path: Path) -> None:
    """Nobody chose 127.0.0.1:11434: any local process may listen there, so it gets no key."""
    for env in ({"OPENAI_API_KEY": KEY}, {"AFORO_API_KEY": KEY}):
        cfg = config(tmp_path, env)
        assert (cfg.base_url, cfg.base_url_source, cfg.api_key) == (DEFAULT_BASE_URL, "default", None)


def test_user_config_key_does_not_go_to_the_default_either(tmp_path: Path) -> None:
    write_user_config(f'api_key = "{KEY}"\n')
    assert config(tmp_path, {}).api_key is None
    write_user_config(f'api_key = "{KEY}"\nbase_url = "{DEFAULT_BASE_URL}"\n')  # chosen, even if the same
    assert config(tmp_path, {}).api_key == KEY


@pytest.mark.parametrize(
    ("env", "flags", "user_file", "source"),
    [
        ({}, {"base_url": "http://gpu:8000/v1"}, "", "--base-url"),
        ({"AFORO_BASE_URL": "http://gpu:8000/v1"}, {}, "", "AFORO_BASE_URL"),
        ({"OPENAI_BASE_URL": "http://gpu:8000/v1"}, {}, "", "OPENAI_BASE_URL"),
        ({"OPENAI_API_BASE": "http://gpu:8000/v1"}, {}, "", "OPENAI_API_BASE"),
        ({"OLLAMA_HOST": "gpu:8000"}, {}, "", "OLLAMA_HOST"),
        ({}, {}, 'base_url = "http://gpu:8000/v1"\n', "config.toml"),
    ],
)
def test_the_key_goes_to_a_url_the_user_chose(
    tmp_path: Path, env: dict[str, str], flags: dict[str, str], user_file: str, source: str
) -> None:
    if user_file:
        write_user_config(user_file)
    cfg = config(tmp_path, {**env, "OPENAI_API_KEY": KEY}, **flags)
    assert cfg.base_url.startswith("http://gpu:8000")
    assert source in cfg.base_url_source
    assert cfg.api_key == KEY


def test_aforo_settings_come_before_the_shared_conventions(tmp_path: Path) -> None:
    conventions = {
        "OPENAI_BASE_URL": "http://openai-base:1/v1",
        "OPENAI_API_BASE": "http://openai-api-base:2/v1",
        "OLLAMA_HOST": "ollama-host:3",
    }
    assert config(tmp_path, conventions).base_url == "http://openai-base:1/v1"
    assert config(tmp_path, {k: v for k, v in conventions.items() if k != "OPENAI_BASE_URL"}).base_url == (
        "http://openai-api-base:2/v1"
    )
    write_user_config('base_url = "http://user-file:4/v1"\n')
    assert config(tmp_path, conventions).base_url == "http://user-file:4/v1"
    env = {**conventions, "AFORO_BASE_URL": "http://aforo-env:5/v1"}
    assert config(tmp_path, env).base_url == "http://aforo-env:5/v1"
    assert config(tmp_path, env, base_url="http://flag:6/v1").base_url == "http://flag:6/v1"
    assert config(tmp_path, env, base_url=NOT_GIVEN).base_url == "http://aforo-env:5/v1"


def test_ollama_host_chooses_the_native_kind_unless_a_kind_was_set(tmp_path: Path) -> None:
    assert config(tmp_path, {"OLLAMA_HOST": "gpu"}).server == "ollama"
    assert config(tmp_path, {"OLLAMA_HOST": "gpu", "AFORO_SERVER": "vllm"}).server == "vllm"
    # Another URL won: OLLAMA_HOST says nothing about that server's kind.
    assert config(tmp_path, {"OLLAMA_HOST": "gpu", "OPENAI_BASE_URL": "http://x:1/v1"}).server is None


@pytest.mark.parametrize(
    ("host", "url"),
    [
        ("", "http://127.0.0.1:11434/v1"),
        ("0.0.0.0", "http://127.0.0.1:11434/v1"),
        ("0.0.0.0:11435", "http://127.0.0.1:11435/v1"),
        (":56789", "http://127.0.0.1:56789/v1"),
        ("gpu.lan", "http://gpu.lan:11434/v1"),
        ("10.0.0.5:8080", "http://10.0.0.5:8080/v1"),
        ("http://gpu.lan", "http://gpu.lan:80/v1"),
        ("https://ollama.example.com", "https://ollama.example.com:443/v1"),
        ("https://ollama.example.com:8443/prefix/", "https://ollama.example.com:8443/prefix/v1"),
        ("[::1]:11434", "http://[::1]:11434/v1"),
        ("[::]", "http://[::1]:11434/v1"),
    ],
)
def test_ollama_host_is_read_as_ollama_reads_it(host: str, url: str) -> None:
    assert ollama_url(host) == url


def test_a_bad_ollama_host_port_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="OLLAMA_HOST"):
        config(tmp_path, {"OLLAMA_HOST": "gpu:notaport"})


def test_ollama_host_reaches_ollama_through_its_native_api(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text("print('hi')\n")
    app = ollama_app(script=[{"chunks": ["Native ", "Ollama answered."], "omit_counts": True}])
    with LiveServer(app) as server:
        run = run_cli("-w", str(tmp_path), "--json", "hi", env={"OLLAMA_HOST": f"127.0.0.1:{server.port}"})
    assert run.code == 0, run.out + run.err
    info = next(e for e in run.events() if e["type"] == "info" and "server" in e)
    assert (info["server"], info["base_url"]) == ("ollama", server.url)
    assert [path for path, _ in app.state.received if path == "/api/chat"]
