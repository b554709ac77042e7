"""Server detection against real local servers speaking each dialect, with and without /v1."""

from __future__ import annotations

import collections
import contextlib
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from aforo.errors import ConfigError
from aforo.server_kinds import KINDS
from aforo.servers.detect import detect_server
from aforo.wire.http import normalize_base_url
from dialects.servers_apps import (
    generic_app,
    litellm_app,
    llamacpp_app,
    lmstudio_app,
    ollama_app,
    tgi_app,
    vllm_app,
)
from support.live_server import LiveServer, free_port


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8080",
        "http://127.0.0.1:8080/",
        "http://127.0.0.1:8080/v1",
        "http://127.0.0.1:8080/v1/",
    ],
)
def test_normalize_base_url_accepts_root_or_v1(url: str) -> None:
    assert normalize_base_url(url) == ("http://127.0.0.1:8080", "http://127.0.0.1:8080/v1")


def test_normalize_base_url_keeps_a_path_prefix_and_adds_a_scheme() -> None:
    assert normalize_base_url("https://h/proxy/v1") == ("https://h/proxy", "https://h/proxy/v1")
    assert normalize_base_url("localhost:11434") == ("http://localhost:11434", "http://localhost:11434/v1")
    with pytest.raises(ConfigError):
        normalize_base_url("  ")


APPS: list[tuple[str, Any]] = [
    ("ollama", lambda: ollama_app(version="0.12.6")),
    ("llama.cpp", lambda: llamacpp_app()),
    ("vllm", lambda: vllm_app()),
    ("lmstudio", lambda: lmstudio_app()),
    ("litellm", lambda: litellm_app()),
    ("tgi", lambda: tgi_app()),
    ("openai", lambda: generic_app()),
]


@pytest.fixture(scope="module")
def running() -> Iterator[dict[str, str]]:
    """One server of each kind for the whole module: starting them is the slow part."""
    with contextlib.ExitStack() as stack:
        yield {kind: stack.enter_context(LiveServer(make_app())).url for kind, make_app in APPS}


@pytest.mark.parametrize("kind", [k for k, _ in APPS])
@pytest.mark.parametrize("suffix", ["", "/", "/v1", "/v1/"])
def test_detects_each_kind_with_or_without_v1(
    client: httpx.Client, running: dict[str, str], kind: str, suffix: str
) -> None:
    url = running[kind]
    info = detect_server(client, url + suffix, kinds=KINDS)
    assert info.kind == kind
    assert info.root_url == url
    assert info.v1_url == f"{url}/v1"


def test_detection_reads_version_and_models(client: httpx.Client) -> None:
    with LiveServer(ollama_app(version="0.13.1", models=("a:latest", "b:7b"))) as server:
        info = detect_server(client, server.url, kinds=KINDS)
    assert info.version == "0.13.1"
    assert info.models == ["a:latest", "b:7b"]
    with LiveServer(vllm_app(model="org/model")) as server:
        info = detect_server(client, server.url, kinds=KINDS)
    assert (info.version, info.models) == ("0.6.3", ["org/model"])


def test_hint_overrides_detection(client: httpx.Client) -> None:
    with LiveServer(llamacpp_app()) as server:
        info = detect_server(client, server.url, hint="openai", kinds=KINDS)
    assert info.kind == "openai"
    # As a generic server only /v1/models is read, and llama-server keeps its window under `meta` there.
    assert info.window_detail == ""


def test_hint_of_the_right_kind_still_reads_the_window(client: httpx.Client) -> None:
    with LiveServer(llamacpp_app(n_ctx=2048)) as server:
        info = detect_server(client, server.url, hint="llama.cpp", kinds=KINDS)
    assert (info.kind, info.served_window, info.window_detail) == (
        "llama.cpp",
        2048,
        "llama.cpp /props n_ctx",
    )


def test_unknown_hint_is_a_config_error(client: httpx.Client) -> None:
    with pytest.raises(ConfigError, match="--server"):
        detect_server(client, "http://127.0.0.1:1", hint="kobold", kinds=KINDS)


def test_nothing_listening_is_a_generic_server_not_a_crash(client: httpx.Client) -> None:
    info = detect_server(client, f"http://127.0.0.1:{free_port()}/v1", kinds=KINDS)
    assert (info.kind, info.served_window, info.models) == ("openai", None, [])


def counting(app: Any) -> tuple[Any, collections.Counter[str]]:
    """`app` behind an ASGI wrapper that counts the GETs of each path."""
    gets: collections.Counter[str] = collections.Counter()

    async def wrapped(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["method"] == "GET":
            gets[scope["path"]] += 1
        await app(scope, receive, send)

    return wrapped, gets


@pytest.mark.parametrize(("kind", "make_app"), APPS)
def test_detection_fetches_each_document_once(client: httpx.Client, kind: str, make_app: Any) -> None:
    app, gets = counting(make_app())
    with LiveServer(app) as server:
        # A model the server does not serve: every window reader and the catalog fallback are asked.
        info = detect_server(client, server.url, kinds=KINDS, model="not-served")
    assert info.kind == kind
    assert gets, "detection asked nothing"
    assert {path: n for path, n in gets.items() if n > 1} == {}
    # On a generic server the vLLM check, the model list and the catalog fallback all read it.
    assert gets["/v1/models"] == 1
