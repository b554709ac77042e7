"""Build a runnable assistant from a Config: ask the server what it is, settle the window, pick the
provider and the best token counter, and hand everything to the agent. No policy lives here."""

from __future__ import annotations

from collections.abc import Sequence
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
from aforo.server_kinds import KINDS
from aforo.servers.counters import make_counter
from aforo.servers.detect import detect_server
from aforo.servers.kind import ServerInfo, ServerKind, kind_named
from aforo.servers.probe_store import ProbeStore
from aforo.servers.windows import resolve_window
from aforo.tools.registry import default_registry


@dataclass
class Runtime:
    agent: Agent
    server: ServerInfo
    provider: Provider
    counter: TokenCounter | None
    model: str


def build_runtime(
    cfg: Config, emit: EventSink, journal: Journal, *, kinds: Sequence[ServerKind] = KINDS
) -> Runtime:
    client = httpx.Client(timeout=httpx.Timeout(30.0, connect=5.0))
    server = detect_server(client, cfg.base_url, cfg.server, kinds=kinds, model=cfg.model)
    kind = kind_named(kinds, server.kind)
    model = cfg.model or (server.models[0] if len(server.models) == 1 else None)
    if model is None:
        listed = f" The server lists: {', '.join(server.models[:10])}." if server.models else ""
        raise ConfigError(f"no model given: pass --model NAME (or set AFORO_MODEL).{listed}")
    served, served_src = server.served_window, server.window_detail or None
    if kind.sets_window and cfg.context_window:
        # The adapter sends the window itself: the configured window is what the server will serve.
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
    provider = kind.provider(
        server,
        model,
        window=budget.window,
        api_key=cfg.api_key,
        read_timeout=cfg.read_timeout,
        answer_timeout=cfg.answer_timeout,
    )
    counter = make_counter(kind.counter, client, server.root_url, model, cfg.tokenizer)
    window_known = served is not None or remembered is not None
    governor = Governor(
        budget=budget,
        policy=cfg.policy,
        journal=journal,
        emit=emit,
        counter=counter,
        model=model,
        server=server.kind,
        window_known=window_known,
    )
    # Answers stream, and a truncated one is marked discarded afterwards; only where a silent truncation
    # is likely (a server that does not refuse, with a window nobody measured) are they held until
    # checked.
    live = kind.loud or window_known
    registry = default_registry(cfg.workspace)
    prompt = system_prompt(cfg.workspace)
    for warning in prompt.warnings:
        emit(Warning(warning))
    agent = Agent(
        provider=provider,
        tools=registry,
        governor=governor,
        system=prompt.parts,
        emit=emit,
        max_turns=cfg.max_turns,
        temperature=cfg.temperature,
        live_text=live,
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
                "counter": counter.name if counter else "estimate",
                "answers": "streamed" if live else "held",
            }
        )
    )
    return Runtime(agent, server, provider, counter, model)
