"""Build a runnable assistant from a Config: ask the server what it is, settle the window, pick the
provider and the best token counter, and hand everything to the agent. No policy lives here."""

from __future__ import annotations

from dataclasses import dataclass

import httpx

from aforo.agent import Agent
from aforo.cli.config import Config
from aforo.context.budget import Budget
from aforo.context.governor import Governor
from aforo.errors import ConfigError
from aforo.events import EventSink, Info, Warning
from aforo.prompt import system_prompt
from aforo.protocols import Journal, Provider, TokenCounter
from aforo.providers.ollama import OllamaProvider
from aforo.providers.openai_compat import OpenAICompatProvider
from aforo.servers.counters import make_counter
from aforo.servers.detect import ServerInfo, detect_server
from aforo.servers.probe_store import ProbeStore
from aforo.servers.windows import resolve_window
from aforo.tools.registry import default_registry

# Servers that answer an over-long prompt with an error instead of dropping part of it: on these an
# answer can be streamed as it arrives, since it cannot be a silently truncated one.
LOUD_SERVERS = frozenset({"llama.cpp", "vllm", "tgi", "ollama"})


@dataclass
class Runtime:
    agent: Agent
    server: ServerInfo
    provider: Provider
    counter: TokenCounter | None
    model: str


def build_runtime(cfg: Config, emit: EventSink, journal: Journal) -> Runtime:
    client = httpx.Client(timeout=httpx.Timeout(30.0, connect=5.0))
    server = detect_server(client, cfg.base_url, cfg.server, model=cfg.model)
    model = cfg.model or (server.models[0] if len(server.models) == 1 else None)
    if model is None:
        listed = f" The server lists: {', '.join(server.models[:10])}." if server.models else ""
        raise ConfigError(f"no model given: pass --model NAME (or set AFORO_MODEL).{listed}")
    served, served_src = server.served_window, server.window_detail or None
    if server.kind == "ollama" and cfg.context_window:
        # The native adapter sends num_ctx itself: the configured window is what Ollama will serve.
        served, served_src = None, None
    remembered = ProbeStore().load(server.root_url, model)
    resolution = resolve_window(
        cfg.context_window,
        cfg.context_window_source,
        served,
        served_src,
        remembered.window if remembered else None,
        *((remembered.window_source,) if remembered else ()),
    )
    for warning in resolution.warnings:
        emit(Warning(warning.removeprefix("! ")))
    budget = Budget(resolution.window, cfg.max_tokens, resolution.source)
    provider: Provider
    if server.kind == "ollama":
        provider = OllamaProvider(server.root_url, model, num_ctx=budget.window, version=server.version)
    else:
        provider = OpenAICompatProvider(server.v1_url, model, api_key=cfg.api_key)
    chosen = make_counter(server, client, cfg.tokenizer, model=model)
    counter = chosen if chosen.exact else None
    governor = Governor(
        budget=budget,
        policy=cfg.policy,
        journal=journal,
        emit=emit,
        counter=counter,
        model=model,
        server=server.kind,
        window_known=served is not None or remembered is not None,
    )
    registry = default_registry(cfg.workspace)
    agent = Agent(
        provider=provider,
        tools=registry,
        governor=governor,
        system=system_prompt(cfg.workspace),
        emit=emit,
        max_turns=cfg.max_turns,
        temperature=cfg.temperature,
        live_text=server.kind in LOUD_SERVERS,
    )
    emit(
        Info(
            {
                "workspace": str(cfg.workspace),
                "model": model,
                "server": server.kind,
                "base_url": server.root_url,
                "window": budget.window,
                "window_source": resolution.source,
                "reserve": budget.reserve,
                "counter": chosen.name if counter else "estimate",
            }
        )
    )
    return Runtime(agent, server, provider, counter, model)
