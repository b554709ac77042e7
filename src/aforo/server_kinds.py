"""Every kind of server aforo knows, one entry each: adding a kind is adding one entry here.

An entry says how to recognise the kind, where it says its served window, how it counts tokens exactly
(if it can), whether it refuses a prompt that does not fit (loud) or silently drops part of it, and which
adapter talks to it. Detection, the window, the counter, live streaming, `--server`'s choices and the
config file's check all read this table. It stands above `providers` and `servers`, which never import
each other: it joins a server's readers to a provider's constructor.
"""

from __future__ import annotations

from aforo.protocols import Provider
from aforo.providers.ollama import OllamaProvider
from aforo.providers.openai_compat import OpenAICompatProvider
from aforo.servers import detect, windows
from aforo.servers.counters import LlamaCppCounter, TgiCounter, VllmCounter
from aforo.servers.kind import ServerInfo, ServerKind


def openai_provider(server: ServerInfo, model: str, *, window: int, api_key: str | None) -> Provider:
    return OpenAICompatProvider(server.v1_url, model, api_key=api_key)


def ollama_provider(server: ServerInfo, model: str, *, window: int, api_key: str | None) -> Provider:
    return OllamaProvider(server.root_url, model, num_ctx=window, version=server.version)


# Detection tries the checks in this order, most distinctive answer first, so a server is never taken
# for one it imitates (LM Studio and LiteLLM also answer /v1/models; only vLLM/SGLang put max_model_len
# there). The first entry has no check: it is what a server that answers none of them is.
KINDS: tuple[ServerKind, ...] = (
    ServerKind("openai", check=None, window=None, counter=None, loud=False, provider=openai_provider),
    ServerKind(
        "ollama",
        check=detect.check_ollama,
        window=windows.read_ollama,
        counter=None,
        loud=True,  # the native adapter sends `truncate: false`, and its overflow 400 is mapped
        provider=ollama_provider,
        models=detect.ollama_model_ids,
        sets_window=True,
        probe_note=(
            "note: this is Ollama's OpenAI endpoint; aforo's native Ollama adapter sets num_ctx itself"
        ),
    ),
    ServerKind(
        "llama.cpp",
        check=detect.check_llamacpp,
        window=windows.read_llamacpp,
        counter=LlamaCppCounter,
        loud=True,
        provider=openai_provider,
    ),
    ServerKind(
        "tgi",
        check=detect.check_tgi,
        window=windows.read_tgi,
        counter=TgiCounter,
        loud=True,
        provider=openai_provider,
    ),
    ServerKind(
        "lmstudio",
        check=detect.check_lmstudio,
        window=windows.read_lmstudio,
        counter=None,
        loud=False,
        provider=openai_provider,
    ),
    ServerKind(
        "litellm",
        check=detect.check_litellm,
        window=windows.read_litellm,
        counter=None,
        loud=False,
        provider=openai_provider,
    ),
    ServerKind(
        "vllm",
        check=detect.check_vllm,
        window=windows.read_vllm,
        counter=VllmCounter,
        loud=True,
        provider=openai_provider,
    ),
)

SERVER_KINDS: tuple[str, ...] = tuple(kind.name for kind in KINDS)
