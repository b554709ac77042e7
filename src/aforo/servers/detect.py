"""Which server is behind the base URL, from a few cheap GETs that each fail quietly.

Every local server speaks OpenAI's `/v1`, but each tells its served window, its version and its token
counter through its own endpoints; knowing the kind tells us where to ask. The checks go from the most
distinctive answer to the least (Ollama's `/api/version`, llama-server's `/props`, TGI's `/info`, ...);
anything that answers none of them is a generic "openai" server. `--server` skips the guessing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, cast

import httpx

from aforo.errors import ConfigError
from aforo.servers.http import get_json_quiet
from aforo.servers.windows import served_window

ServerKind = Literal["openai", "ollama", "llama.cpp", "vllm", "lmstudio", "litellm", "tgi"]
SERVER_KINDS: tuple[str, ...] = ("openai", "ollama", "llama.cpp", "vllm", "lmstudio", "litellm", "tgi")


@dataclass(frozen=True)
class ServerInfo:
    kind: ServerKind
    root_url: str  # without /v1: where the server's own endpoints live
    v1_url: str  # root + /v1: the OpenAI-compatible API
    version: str | None = None
    served_window: int | None = None
    window_detail: str = ""  # where served_window came from, e.g. "llama.cpp /props n_ctx"
    models: list[str] = field(default_factory=list)


def normalize_base_url(url: str) -> tuple[str, str]:
    """`http://h:p`, `http://h:p/`, `http://h:p/v1` and `http://h:p/v1/` -> (root, root + "/v1")."""
    url = url.strip()
    if not url:
        raise ConfigError("the base URL is empty: pass --base-url http://HOST:PORT/v1")
    if "://" not in url:
        url = f"http://{url}"
    root = url.rstrip("/").removesuffix("/v1").rstrip("/")
    return root, f"{root}/v1"


# --- one check per kind: (client, root, v1) -> version string ("" when the kind has none) or None ---


def _ollama(client: httpx.Client, root: str, v1: str) -> str | None:
    doc = get_json_quiet(client, f"{root}/api/version")
    if isinstance(doc, dict) and isinstance(doc.get("version"), str):
        return str(doc["version"])
    tags = get_json_quiet(client, f"{root}/api/tags")
    return "" if isinstance(tags, dict) and isinstance(tags.get("models"), list) else None


def _llamacpp(client: httpx.Client, root: str, v1: str) -> str | None:
    props = get_json_quiet(client, f"{root}/props")
    if isinstance(props, dict) and isinstance(props.get("default_generation_settings"), dict):
        build = props.get("build_info")
        return str(build) if build else ""
    return None


def _tgi(client: httpx.Client, root: str, v1: str) -> str | None:
    info = get_json_quiet(client, f"{root}/info")
    if isinstance(info, dict) and ("max_input_tokens" in info or "max_input_length" in info):
        return str(info.get("version") or "")
    return None


def _lmstudio(client: httpx.Client, root: str, v1: str) -> str | None:
    doc = get_json_quiet(client, f"{root}/api/v0/models")
    entries = doc.get("data") if isinstance(doc, dict) else None
    if isinstance(entries, list) and any(
        isinstance(e, dict) and ("max_context_length" in e or "loaded_context_length" in e) for e in entries
    ):
        return ""
    return None


def _litellm(client: httpx.Client, root: str, v1: str) -> str | None:
    doc = get_json_quiet(client, f"{root}/model/info")
    entries = doc.get("data") if isinstance(doc, dict) else None
    if isinstance(entries, list) and any(isinstance(e, dict) and "model_info" in e for e in entries):
        return ""
    return None


def _vllm(client: httpx.Client, root: str, v1: str) -> str | None:
    models = get_json_quiet(client, f"{v1}/models")
    entries = models.get("data") if isinstance(models, dict) else None
    if not isinstance(entries, list) or not any(
        isinstance(e, dict) and ("max_model_len" in e or e.get("owned_by") in ("vllm", "sglang"))
        for e in entries
    ):
        return None
    version = get_json_quiet(client, f"{root}/version")
    return str(version["version"]) if isinstance(version, dict) and version.get("version") else ""


Check = Callable[[httpx.Client, str, str], str | None]
# Most distinctive answers first, so a server is never mistaken for one it imitates (LM Studio and
# LiteLLM also answer /v1/models; only vLLM/SGLang put max_model_len there).
CHECKS: tuple[tuple[ServerKind, Check], ...] = (
    ("ollama", _ollama),
    ("llama.cpp", _llamacpp),
    ("tgi", _tgi),
    ("lmstudio", _lmstudio),
    ("litellm", _litellm),
    ("vllm", _vllm),
)


def _model_ids(client: httpx.Client, kind: str, root: str, v1: str) -> list[str]:
    if kind == "ollama":
        tags = get_json_quiet(client, f"{root}/api/tags")
        entries: Any = tags.get("models") if isinstance(tags, dict) else None
        key = "name"
    else:
        models = get_json_quiet(client, f"{v1}/models")
        entries = models.get("data") if isinstance(models, dict) else None
        key = "id"
    if not isinstance(entries, list):
        return []
    return [str(e[key]) for e in entries if isinstance(e, dict) and isinstance(e.get(key), str)]


def detect_server(
    client: httpx.Client, base_url: str, hint: str | None = None, *, model: str | None = None
) -> ServerInfo:
    """Detect the kind (or trust `hint`), then read its version, models and served window for `model`."""
    root, v1 = normalize_base_url(base_url)
    kind: ServerKind = "openai"
    version: str | None = None
    if hint is not None:
        if hint not in SERVER_KINDS:
            raise ConfigError(f"unknown --server {hint!r}: choose one of {', '.join(SERVER_KINDS)}")
        kind = cast(ServerKind, hint)
        check = dict(CHECKS).get(kind)
        version = check(client, root, v1) if check else None
    else:
        for candidate, check in CHECKS:
            version = check(client, root, v1)
            if version is not None:
                kind = candidate
                break
    models = _model_ids(client, kind, root, v1)
    window = served_window(client, kind, root, v1, model)
    return ServerInfo(
        kind=kind,
        root_url=root,
        v1_url=v1,
        version=version or None,
        served_window=window.window if window else None,
        window_detail=window.detail if window else "",
        models=models,
    )
