"""The window a server actually serves, from its own API, and the order in which windows are trusted.

Peers read windows from static catalogs or from a model's *trained* maximum and are wrong exactly when
it matters (llama-server started with `-c 4096` for a 32k model, Ollama loading at its default). So each
reader here takes the number the running server uses — llama-server's `n_ctx` (never `n_ctx_train`),
vLLM's `max_model_len`, Ollama's `context_length` of the *loaded* model (never `/api/show`'s trained
maximum), LM Studio's `loaded_context_length` — and says where it came from.

`resolve_window` is SPEC §2.1 plus one rule: configuration comes first but can only lower the window;
a configured window larger than what the server serves is a silent loss waiting to happen, so it is
reported and the smaller one wins.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aforo.context.budget import DEFAULT_WINDOW
from aforo.servers.documents import Documents

DEFAULT_WINDOW_WARNING = (
    f"! The context window is not set: assuming {DEFAULT_WINDOW} tokens. Set it with --context-window N"
    " (or AFORO_CONTEXT_WINDOW, or context_window in the config file); erring low only clears earlier,"
    " erring high disables the stages."
)

# Window fields that OpenAI-compatible catalogs put in `/v1/models` entries, most specific first.
CATALOG_FIELDS = (
    "max_model_len",
    "context_length",
    "context_window",
    "max_input_tokens",
    "max_context_length",
)


@dataclass(frozen=True)
class ServedWindow:
    window: int
    detail: str  # where it came from, e.g. "llama.cpp /props n_ctx"


# One server kind's own way to say its window for a model (None when it does not say).
WindowReader = Callable[[Documents, str | None], ServedWindow | None]


@dataclass(frozen=True)
class WindowResolution:
    window: int
    source: str
    warnings: list[str] = field(default_factory=list)


# --- parsers: documented JSON shapes -> window (pure, so they are tested without a server) ----------


def _positive_int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float) and value > 0:
        return int(value)
    return None


def _entries(doc: Any, key: str = "data") -> list[dict[str, Any]]:
    if isinstance(doc, dict) and isinstance(doc.get(key), list):
        return [e for e in doc[key] if isinstance(e, dict)]
    return []


def _model_entry(
    entries: list[dict[str, Any]], model: str | None, *keys: str, strict: bool = False
) -> dict[str, Any] | None:
    """The entry naming `model`; with a single entry, that one (a server serving one model, whatever
    name it gives it) unless `strict`, for lists of *loaded* models where another model's entry is wrong."""
    keys = keys or ("id",)
    for entry in entries:
        if model is not None and any(_same_model(entry.get(k), model) for k in keys):
            return entry
    if strict and model is not None:
        return None
    return entries[0] if len(entries) == 1 else None


def _same_model(name: Any, model: str) -> bool:
    if not isinstance(name, str):
        return False
    # Ollama names carry an implicit ":latest" tag; "qwen2.5" and "qwen2.5:latest" are one model.
    return name == model or name.removesuffix(":latest") == model.removesuffix(":latest")


def llamacpp_props_window(props: Any) -> int | None:
    settings = props.get("default_generation_settings") if isinstance(props, dict) else None
    return _positive_int(settings.get("n_ctx")) if isinstance(settings, dict) else None


def llamacpp_models_window(models: Any) -> int | None:
    entries = _entries(models)
    meta = entries[0].get("meta") if entries else None
    # `meta.n_ctx_train` is the trained maximum, not what the server runs: deliberately ignored.
    return _positive_int(meta.get("n_ctx")) if isinstance(meta, dict) else None


def vllm_window(models: Any, model: str | None) -> int | None:
    entry = _model_entry(_entries(models), model)
    return _positive_int(entry.get("max_model_len")) if entry else None


def ollama_ps_window(ps: Any, model: str | None) -> int | None:
    entry = _model_entry(_entries(ps, "models"), model, "name", "model", strict=True)
    return _positive_int(entry.get("context_length")) if entry else None


def lmstudio_v0_window(models: Any, model: str | None) -> int | None:
    entry = _model_entry(_entries(models), model)
    # `max_context_length` is what the model could take; only a loaded model has a served window.
    return _positive_int(entry.get("loaded_context_length")) if entry else None


def lmstudio_v1_window(models: Any, model: str | None) -> int | None:
    entry = _model_entry(_entries(models, "models"), model, "key", "id")
    if entry is None:
        return None
    for instance in entry.get("loaded_instances") or []:
        config = instance.get("config") if isinstance(instance, dict) else None
        if isinstance(config, dict) and _positive_int(config.get("context_length")):
            return _positive_int(config.get("context_length"))
    return None


def litellm_window(info: Any, model: str | None) -> int | None:
    entry = _model_entry(_entries(info), model, "model_name")
    model_info = entry.get("model_info") if entry else None
    return _positive_int(model_info.get("max_input_tokens")) if isinstance(model_info, dict) else None


def tgi_window(info: Any) -> tuple[int, int | None] | None:
    """(max_input_tokens, max_total_tokens). The input limit is the window: TGI refuses longer prompts."""
    if not isinstance(info, dict):
        return None
    max_input = _positive_int(info.get("max_input_tokens") or info.get("max_input_length"))
    return (max_input, _positive_int(info.get("max_total_tokens"))) if max_input else None


def catalog_window(models: Any, model: str | None) -> tuple[int, str] | None:
    """A window field of a generic `/v1/models` entry, with the field's name."""
    entry = _model_entry(_entries(models), model)
    if entry is None:
        return None
    for name in CATALOG_FIELDS:
        value = _positive_int(entry.get(name))
        if value:
            return value, name
    return None


# --- readers: ask the running server ----------------------------------------------------------------


def _served(window: int | None, detail: str) -> ServedWindow | None:
    return ServedWindow(window, detail) if window else None


# A reader with two sources asks the second only when the first has no window (`or`): each document
# is fetched when it is needed, and once (Documents).
def read_llamacpp(docs: Documents, model: str | None) -> ServedWindow | None:
    return _served(llamacpp_props_window(docs.root("/props")), "llama.cpp /props n_ctx") or _served(
        llamacpp_models_window(docs.v1("/models")), "llama.cpp /v1/models meta.n_ctx"
    )


def read_vllm(docs: Documents, model: str | None) -> ServedWindow | None:
    return _served(vllm_window(docs.v1("/models"), model), "vllm /v1/models max_model_len")


def read_ollama(docs: Documents, model: str | None) -> ServedWindow | None:
    # Only a loaded model has a served window; an unloaded one will load at the default num_ctx, which
    # no endpoint reports. The native adapter sets num_ctx itself, so this is informative there.
    return _served(
        ollama_ps_window(docs.root("/api/ps"), model), "ollama /api/ps context_length (loaded model)"
    )


def read_lmstudio(docs: Documents, model: str | None) -> ServedWindow | None:
    v0 = lmstudio_v0_window(docs.root("/api/v0/models"), model)
    return _served(v0, "lmstudio /api/v0/models loaded_context_length") or _served(
        lmstudio_v1_window(docs.root("/api/v1/models"), model),
        "lmstudio /api/v1/models loaded context_length",
    )


def read_litellm(docs: Documents, model: str | None) -> ServedWindow | None:
    # LiteLLM's number comes from its own catalog, not from the backend it proxies: say so.
    window = litellm_window(docs.root("/model/info"), model)
    return _served(window, "litellm /model/info max_input_tokens (LiteLLM catalog)")


def read_tgi(docs: Documents, model: str | None) -> ServedWindow | None:
    limits = tgi_window(docs.root("/info"))
    if limits is None:
        return None
    max_input, max_total = limits
    total = f", max_total_tokens {max_total}" if max_total else ""
    return ServedWindow(max_input, f"tgi /info max_input_tokens{total}")


def served_window(docs: Documents, reader: WindowReader | None, model: str | None) -> ServedWindow | None:
    """The window the server serves for `model`: its own API first, then a catalog field in /v1/models."""
    found = reader(docs, model) if reader else None
    if found is not None:
        return found
    catalog = catalog_window(docs.v1("/models"), model)
    return ServedWindow(catalog[0], f"catalog /v1/models {catalog[1]}") if catalog else None


# --- resolution ---------------------------------------------------------------------------------------


def resolve_window(
    configured: int | None,
    configured_source: str | None,
    served: int | None,
    served_source: str | None,
    probed: int | None,
    probed_source: str = "aforo probe (remembered)",
) -> WindowResolution:
    """Configuration, then the served window, then a remembered probe, then 4096 with a warning.

    What the server does (served, else probed) is a ceiling: configuration may lower the window, never
    raise it, because a window larger than the server's makes it truncate silently or refuse.
    """
    if served is not None:
        observed, observed_source = served, served_source or "the server"
    elif probed is not None:
        observed, observed_source = probed, probed_source
    else:
        observed, observed_source = None, ""
    if configured is not None:
        source = configured_source or "configuration"
        if observed is not None and configured > observed:
            hint = " (run `aforo probe` again if the server changed)" if served is None else ""
            warning = (
                f"! The configured context window {configured} ({source}) exceeds the {observed} tokens"
                f" the server serves ({observed_source}){hint}: using {observed}. Lower it with"
                f" --context-window, or start the server with a larger window."
            )
            return WindowResolution(observed, observed_source, [warning])
        return WindowResolution(configured, source)
    if observed is not None:
        return WindowResolution(observed, observed_source)
    return WindowResolution(DEFAULT_WINDOW, "default", [DEFAULT_WINDOW_WARNING])
