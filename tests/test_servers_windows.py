"""The served window from each server's own API, and the order windows are trusted in."""

from __future__ import annotations

import httpx
import pytest

from aforo.server_kinds import KINDS
from aforo.servers.detect import detect_server
from aforo.servers.documents import Documents
from aforo.servers.windows import (
    DEFAULT_WINDOW_WARNING,
    llamacpp_models_window,
    resolve_window,
    served_window,
)
from dialects.servers_apps import (
    generic_app,
    litellm_app,
    llamacpp_app,
    lmstudio_app,
    ollama_app,
    tgi_app,
    vllm_app,
)
from support.live_server import LiveServer


def test_llamacpp_window_is_n_ctx_from_props_never_the_trained_length(client: httpx.Client) -> None:
    with LiveServer(llamacpp_app(n_ctx=4096)) as server:
        info = detect_server(client, server.url + "/v1", kinds=KINDS)
    # The app advertises n_ctx_train 32768 in /v1/models: the served 4096 must win.
    assert (info.served_window, info.window_detail) == (4096, "llama.cpp /props n_ctx")


def test_llamacpp_models_meta_is_the_fallback_and_ignores_n_ctx_train() -> None:
    doc = {"data": [{"id": "m", "meta": {"n_ctx_train": 32768, "n_ctx": 8192}}]}
    assert llamacpp_models_window(doc) == 8192
    assert llamacpp_models_window({"data": [{"id": "m", "meta": {"n_ctx_train": 32768}}]}) is None


def test_vllm_window_is_max_model_len(client: httpx.Client) -> None:
    with LiveServer(vllm_app(max_model_len=16384, model="org/m")) as server:
        info = detect_server(client, server.url, model="org/m", kinds=KINDS)
    assert (info.served_window, info.window_detail) == (16384, "vllm /v1/models max_model_len")


def test_ollama_window_is_the_loaded_models_context_length(client: httpx.Client) -> None:
    app = ollama_app(
        loaded={"qwen2.5-coder:0.5b": 4096, "other:latest": 8192},
        models=("qwen2.5-coder:0.5b", "other:latest"),
    )
    with LiveServer(app) as server:
        info = detect_server(client, server.url, model="qwen2.5-coder:0.5b", kinds=KINDS)
        other = detect_server(client, server.url, model="other", kinds=KINDS)  # ":latest" is implicit
    assert (info.served_window, info.window_detail) == (4096, "ollama /api/ps context_length (loaded model)")
    assert other.served_window == 8192


def test_ollama_unloaded_model_has_no_served_window_not_the_trained_maximum(client: httpx.Client) -> None:
    # /api/show says 32768 (trained); another model is loaded at 8192. Neither is this model's window.
    with LiveServer(ollama_app(loaded={"other:latest": 8192})) as server:
        info = detect_server(client, server.url, model="qwen2.5-coder:0.5b", kinds=KINDS)
    assert info.served_window is None


def test_lmstudio_window_is_loaded_context_length(client: httpx.Client) -> None:
    with LiveServer(lmstudio_app(loaded_context_length=8192, model="qwen")) as server:
        info = detect_server(client, server.url, model="qwen", kinds=KINDS)
    assert (info.served_window, info.window_detail) == (8192, "lmstudio /api/v0/models loaded_context_length")
    with LiveServer(lmstudio_app(loaded_context_length=None, model="qwen")) as server:
        assert detect_server(client, server.url, model="qwen", kinds=KINDS).served_window is None


def test_litellm_window_is_max_input_tokens_of_the_named_model(client: httpx.Client) -> None:
    with LiveServer(litellm_app(max_input_tokens=128000, model="gpt-4o")) as server:
        info = detect_server(client, server.url, model="local", kinds=KINDS)
        named = detect_server(client, server.url, model="gpt-4o", kinds=KINDS)
    assert info.served_window == 32768
    assert named.served_window == 128000
    assert "LiteLLM catalog" in named.window_detail


def test_tgi_window_is_max_input_tokens(client: httpx.Client) -> None:
    with LiveServer(tgi_app(max_input_tokens=4095, max_total_tokens=4096)) as server:
        info = detect_server(client, server.url, kinds=KINDS)
    assert info.served_window == 4095
    assert info.window_detail == "tgi /info max_input_tokens, max_total_tokens 4096"


@pytest.mark.parametrize("field", ["context_length", "max_model_len", "context_window", "max_input_tokens"])
def test_generic_catalog_window_field(client: httpx.Client, field: str) -> None:
    with LiveServer(generic_app(catalog={field: 12000})) as server:
        info = detect_server(client, server.url, model="m", kinds=KINDS)
    assert info.kind in ("openai", "vllm")
    assert info.served_window == 12000
    assert field in info.window_detail


def test_generic_server_without_a_window_field(client: httpx.Client) -> None:
    with LiveServer(generic_app()) as server:
        info = detect_server(client, server.url, kinds=KINDS)
        docs = Documents(client, info.root_url, info.v1_url)
        assert served_window(docs, None, "m") is None
    assert info.served_window is None


# --- resolution --------------------------------------------------------------------------------------


def test_configured_window_wins_when_it_is_not_larger() -> None:
    res = resolve_window(2048, "--context-window", 4096, "llama.cpp /props n_ctx", None)
    assert (res.window, res.source, res.warnings) == (2048, "--context-window", [])


def test_configured_larger_than_served_uses_the_served_and_warns_with_both() -> None:
    res = resolve_window(
        32768, "--context-window", 4096, "ollama /api/ps context_length (loaded model)", None
    )
    assert res.window == 4096
    assert res.source == "ollama /api/ps context_length (loaded model)"
    [warning] = res.warnings
    assert "32768" in warning and "--context-window" in warning
    assert "4096" in warning and "/api/ps" in warning


def test_served_then_probe_then_default() -> None:
    assert resolve_window(None, None, 8192, "vllm /v1/models max_model_len", 4096).window == 8192
    probed = resolve_window(None, None, None, None, 4000, "aforo probe (x)")
    assert (probed.window, probed.source, probed.warnings) == (4000, "aforo probe (x)", [])
    default = resolve_window(None, None, None, None, None)
    assert (default.window, default.source) == (4096, "default")
    assert default.warnings == [DEFAULT_WINDOW_WARNING]
    assert default.warnings[0].startswith("! The context window is not set: assuming 4096 tokens")


def test_configured_larger_than_a_remembered_probe_is_lowered_and_says_how_to_refresh() -> None:
    res = resolve_window(16000, "AFORO_CONTEXT_WINDOW", None, None, 4096)
    assert res.window == 4096
    assert "aforo probe" in res.warnings[0]
