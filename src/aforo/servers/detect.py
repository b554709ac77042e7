"""Which server is behind the base URL, from a few cheap GETs that each fail quietly.

Every local server speaks OpenAI's `/v1`, but each tells its served window, its version and its token
counter through its own endpoints; knowing the kind tells us where to ask. Each kind's check looks for
its most distinctive answer (Ollama's `/api/version`, llama-server's `/props`, TGI's `/info`, ...); the
kinds are tried in the registry's order, and anything that answers none of them is the fallback kind.
`--server` skips the guessing. All the documents of one run come from one `Documents`, so each is
fetched once however many checks and readers ask for it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import httpx

from aforo.servers.documents import Documents
from aforo.servers.kind import ServerInfo, ServerKind, kind_named
from aforo.servers.windows import served_window
from aforo.wire.http import normalize_base_url

# --- one check per kind: the documents -> version string ("" when the kind has none) or None ----------


def check_ollama(docs: Documents) -> str | None:
    doc = docs.root("/api/version")
    if isinstance(doc, dict) and isinstance(doc.get("version"), str):
        return str(doc["version"])
    tags = docs.root("/api/tags")
    return "" if isinstance(tags, dict) and isinstance(tags.get("models"), list) else None


def check_llamacpp(docs: Documents) -> str | None:
    props = docs.root("/props")
    if isinstance(props, dict) and isinstance(props.get("default_generation_settings"), dict):
        build = props.get("build_info")
        return str(build) if build else ""
    return None


def check_tgi(docs: Documents) -> str | None:
    info = docs.root("/info")
    if isinstance(info, dict) and ("max_input_tokens" in info or "max_input_length" in info):
        return str(info.get("version") or "")
    return None


def check_lmstudio(docs: Documents) -> str | None:
    doc = docs.root("/api/v0/models")
    entries = doc.get("data") if isinstance(doc, dict) else None
    if isinstance(entries, list) and any(
        isinstance(e, dict) and ("max_context_length" in e or "loaded_context_length" in e) for e in entries
    ):
        return ""
    return None


def check_litellm(docs: Documents) -> str | None:
    doc = docs.root("/model/info")
    entries = doc.get("data") if isinstance(doc, dict) else None
    if isinstance(entries, list) and any(isinstance(e, dict) and "model_info" in e for e in entries):
        return ""
    return None


def check_vllm(docs: Documents) -> str | None:
    models = docs.v1("/models")
    entries = models.get("data") if isinstance(models, dict) else None
    if not isinstance(entries, list) or not any(
        isinstance(e, dict) and ("max_model_len" in e or e.get("owned_by") in ("vllm", "sglang"))
        for e in entries
    ):
        return None
    version = docs.root("/version")
    return str(version["version"]) if isinstance(version, dict) and version.get("version") else ""


def _ids(entries: Any, key: str) -> list[str]:
    if not isinstance(entries, list):
        return []
    return [str(e[key]) for e in entries if isinstance(e, dict) and isinstance(e.get(key), str)]


def v1_model_ids(docs: Documents) -> list[str]:
    models = docs.v1("/models")
    return _ids(models.get("data") if isinstance(models, dict) else None, "id")


def ollama_model_ids(docs: Documents) -> list[str]:
    tags = docs.root("/api/tags")
    return _ids(tags.get("models") if isinstance(tags, dict) else None, "name")


def detect_server(
    client: httpx.Client,
    base_url: str,
    hint: str | None = None,
    *,
    kinds: Sequence[ServerKind],
    model: str | None = None,
) -> ServerInfo:
    """Detect the kind among `kinds` (or trust `hint`), then read its version, models and served window
    for `model`."""
    root, v1 = normalize_base_url(base_url)
    docs = Documents(client, root, v1)
    version: str | None = None
    if hint is not None:
        kind = kind_named(kinds, hint)
        version = kind.check(docs) if kind.check else None
    else:
        kind = next(k for k in kinds if k.check is None)
        for candidate in kinds:
            version = candidate.check(docs) if candidate.check else None
            if version is not None:
                kind = candidate
                break
    window = served_window(docs, kind.window, model)
    return ServerInfo(
        kind=kind.name,
        root_url=root,
        v1_url=v1,
        version=version or None,
        served_window=window.window if window else None,
        window_detail=window.detail if window else "",
        models=(kind.models or v1_model_ids)(docs),
    )
