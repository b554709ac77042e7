"""Every kind of server aforo knows, one entry each: adding a kind is adding one entry here.

An entry says how to recognise the kind, where it says its served window, how it counts tokens exactly
(if it can), whether it refuses a prompt that does not fit (loud) or silently drops part of it, and which
adapter talks to it. Detection, the window, the counter, live streaming, `--server`'s choices and the
config file's check all read this table. It stands above `providers` and `servers`, which never import
each other: it joins a server's readers to a provider's constructor.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from aforo.protocols import Provider
from aforo.providers.ollama import OllamaProvider, supports_schema_format
from aforo.providers.openai_compat import OpenAICompatProvider
from aforo.servers.counters import LlamaCppCounter, TgiCounter, VllmCounter
from aforo.servers.detect import (
    check_litellm,
    check_llamacpp,
    check_lmstudio,
    check_ollama,
    check_tgi,
    check_vllm,
    ollama_model_ids,
)
from aforo.servers.kind import Connection, ServerInfo, ServerKind
from aforo.servers.windows import (
    read_litellm,
    read_llamacpp,
    read_lmstudio,
    read_ollama,
    read_tgi,
    read_vllm,
)


def openai_compat(
    server: ServerInfo, model: str, conn: Connection, extra_body: dict[str, Any] | None = None
) -> Provider:
    return OpenAICompatProvider(
        server.v1_url,
        model,
        api_key=conn.api_key,
        deadlines=conn.deadlines,
        extra_body=extra_body,
        auth=conn.auth,
    )


# llama.cpp's DRY sampler ("don't repeat yourself"): a token that would extend a passage already in the
# last `dry_penalty_last_n` tokens beyond `dry_allowed_length` tokens loses multiplier * base^(excess)
# of its logit, before the temperature (so at 0 too). At temperature 0 the 1.5B repeated one sentence
# to the output limit on `make demo`; llama-server applies no repeat penalty by default. The values are
# llama.cpp's suggested start; on the real-code suite they cost nothing and on `make demo` they end the
# loop (docs/real-code.md, "The round measured whole"); other servers may refuse fields
# they do not know, and Ollama applies its own repeat penalty by default (1.1 over the last 64 tokens).
LLAMACPP_SAMPLING = {
    "dry_multiplier": 0.8,
    "dry_base": 1.75,
    "dry_allowed_length": 4,
    "dry_penalty_last_n": 1024,
}

# Asked to, llama-server streams its own progress through the prompt (`prompt_progress`, one chunk per
# batch), which the status line shows.
llamacpp_compat = partial(openai_compat, extra_body={"return_progress": True, **LLAMACPP_SAMPLING})


def ollama_native(server: ServerInfo, model: str, conn: Connection) -> Provider:
    return OllamaProvider(
        server.root_url,
        model,
        num_ctx=conn.window,
        version=server.version,
        deadlines=conn.deadlines,
        auth=conn.auth,
    )


# Each entry: name, detection check, window reader, provider factory, then what only some kinds have
# (an exact counter, `loud`, ...; see ServerKind). Detection tries the checks in this order, most
# distinctive answer first, so a server is never taken for one it imitates (LM Studio and LiteLLM also
# answer /v1/models; only vLLM/SGLang put max_model_len there). The first entry has no check: it is
# what a server that answers none of them is.
KINDS: tuple[ServerKind, ...] = (
    ServerKind(name="openai", check=None, window=None, provider=openai_compat),
    ServerKind(
        name="ollama",
        check=check_ollama,
        window=read_ollama,
        provider=ollama_native,
        loud=True,  # the native adapter sends `truncate: false`, and its overflow 400 is mapped
        models=ollama_model_ids,
        sets_window=True,
        constrains=lambda server: supports_schema_format(server.version),
        probe_note=(
            "note: this is Ollama's OpenAI endpoint; aforo's native Ollama adapter sets num_ctx itself"
        ),
    ),
    ServerKind(
        name="llama.cpp",
        check=check_llamacpp,
        window=read_llamacpp,
        provider=llamacpp_compat,
        counter=LlamaCppCounter,
        loud=True,
        constrains=lambda server: True,  # `response_format` with a JSON schema, as a grammar
    ),
    ServerKind(
        name="tgi", check=check_tgi, window=read_tgi, provider=openai_compat, counter=TgiCounter, loud=True
    ),
    ServerKind(name="lmstudio", check=check_lmstudio, window=read_lmstudio, provider=openai_compat),
    ServerKind(name="litellm", check=check_litellm, window=read_litellm, provider=openai_compat),
    ServerKind(
        name="vllm",
        check=check_vllm,
        window=read_vllm,
        provider=openai_compat,
        counter=VllmCounter,
        loud=True,
    ),
)

SERVER_KINDS: tuple[str, ...] = tuple(kind.name for kind in KINDS)
