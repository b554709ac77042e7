"""Build a runnable assistant from a Config: for each lane, ask its server what it is, settle its window,
pick its provider and its best token counter; then hand everything to the agent. No policy lives here.

The conversation runs on one lane; summary requests may go to another (`compact_lane`, `--compact-model`,
see aforo.cli.routes), wired the same way with its own window, counter and detection. A lane the
configuration defines is checked before anything runs: its server answers, has its model, and has room
for a summary request; each failure is a ConfigError naming the lane.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import httpx

from aforo.cli.config import Config
from aforo.cli.first_contact import not_an_llm_server, not_llm_message
from aforo.cli.routes import Route, compact_route
from aforo.context.budget import Budget
from aforo.context.counting import Meter
from aforo.context.governor import Governor
from aforo.context.lanes import DEFAULT_LANE, Lane
from aforo.context.summary_request import MIN_SUMMARY_WORDS, WORDS_PER_TOKEN, summary_request
from aforo.errors import AforoError, ConfigError
from aforo.events import EventSink, Info, Warning
from aforo.loop.agent import Agent
from aforo.loop.budgets import RunBudget
from aforo.loop.cited import Checker
from aforo.loop.prompt import system_prompt
from aforo.messages import Request
from aforo.navigate.guide import Navigator
from aforo.protocols import Journal, Provider, TokenCounter
from aforo.reply_format import definition_chars
from aforo.server_kinds import KINDS
from aforo.servers.counters import make_counter
from aforo.servers.detect import detect_server
from aforo.servers.kind import Connection, ServerInfo, ServerKind, kind_named
from aforo.servers.open_lane import OpenLane
from aforo.servers.probe_store import ProbeStore
from aforo.servers.windows import resolve_window
from aforo.tools.registry import default_registry
from aforo.tools.symbol_cache import SymbolCache, cache_path
from aforo.wire.bounded import Deadlines
from aforo.wire.http import DISCOVERY_TIMEOUT, reach


@dataclass
class Runtime:
    agent: Agent
    server: ServerInfo
    provider: Provider
    counter: TokenCounter | None
    model: str


def open_lane(
    client: httpx.Client,
    route: Route,
    cfg: Config,
    emit: EventSink,
    kinds: Sequence[ServerKind],
    *,
    hint: str | None,
    tokenizer: Path | None = None,
    auth: httpx.BasicAuth | None = None,
) -> OpenLane:
    """Wire one lane; `hint` is its server's kind when already known (skips detection); `auth` the
    server's Basic credentials, for its provider (`client` carries them for the rest)."""
    server = detect_server(client, route.base_url, hint, kinds=kinds, model=route.model)
    kind = kind_named(kinds, server.kind)
    # Detection recognised no kind (none was named: --server is believed), and it lists nothing.
    if hint is None and kind.check is None and not server.models:
        why = not_an_llm_server(client, server.v1_url, DISCOVERY_TIMEOUT)
        if why is not None:
            source = f"lane {route.name!r}" if route.configured else cfg.base_url_source
            raise AforoError(not_llm_message(route.base_url, source, why))
    if route.configured:
        _check_served(client, route, server)
    model = route.model or (server.models[0] if len(server.models) == 1 else None)
    if model is None:
        listed = f" The server lists: {', '.join(server.models[:10])}." if server.models else ""
        raise ConfigError(f"no model given: pass --model NAME (or set AFORO_MODEL).{listed}")
    served, served_src = server.served_window, server.window_detail or None
    if kind.sets_window and route.context_window:
        # The adapter sends the window itself: the configured window is what the server will serve.
        served, served_src = None, None
    remembered = ProbeStore().load(server.root_url, model)
    resolution = resolve_window(
        route.context_window,
        route.context_window_source,
        served,
        served_src,
        remembered.window if remembered else None,
        *((remembered.window_source,) if remembered else ()),
    )
    for warning in resolution.warnings:
        emit(Warning(message=warning.removeprefix("! ")))
    budget = Budget(resolution.window, cfg.max_tokens, resolution.source)
    deadlines = Deadlines(cfg.read_timeout, cfg.answer_timeout)
    connection = Connection(budget.window, cfg.api_key, deadlines, auth)
    provider = kind.provider(server, model, connection)
    counter = make_counter(kind.counter, client, server.root_url, model, tokenizer)
    known = served is not None or remembered is not None
    return OpenLane(
        server=server,
        kind=kind,
        provider=provider,
        budget=budget,
        name=route.name,
        model=model,
        server_kind=server.kind,
        counter=counter,
        window_known=known,
    )


def _check_served(client: httpx.Client, route: Route, server: ServerInfo) -> None:
    """A configured lane's server must answer and have its model."""
    if not server.models:
        try:
            reach(client, f"{server.v1_url}/models", DISCOVERY_TIMEOUT)
        except httpx.TransportError as exc:
            raise ConfigError(
                f"lane {route.name!r}: no server answers at {route.base_url} ({type(exc).__name__}). "
                f"Start it, or fix the lane's base_url."
            ) from exc
    model = route.model
    if model and server.models and model not in server.models and f"{model}:latest" not in server.models:
        raise ConfigError(
            f"lane {route.name!r}: the server at {route.base_url} does not have the model {model!r}; it "
            f"lists {', '.join(server.models[:10])}. Fix the lane's model (or load that model there)."
        )


def _check_summary_room(lane: OpenLane, meter: Meter) -> None:
    """The compaction lane's window must hold the smallest summary request and a summary's minimum."""
    smallest = summary_request(lane.model, [], lane.budget.reserve, None, MIN_SUMMARY_WORDS)
    needs, budget = meter.count(smallest).tokens, lane.budget
    if needs > budget.available or budget.reserve < math.ceil(MIN_SUMMARY_WORDS / WORDS_PER_TOKEN):
        raise ConfigError(
            f"lane {lane.name!r}: its window of {budget.window} tokens ({budget.source}) cannot "
            f"hold a summary request: even an empty one needs {needs} tokens plus room for a summary of "
            f"{MIN_SUMMARY_WORDS} words, and {budget.available} are left after reserving {budget.reserve} "
            "for the answer. Give that lane a larger context_window, or compact on another lane."
        )


def _compaction_lane(
    main: OpenLane,
    main_route: Route,
    cfg: Config,
    emit: EventSink,
    client: httpx.Client,
    kinds: Sequence[ServerKind],
) -> Lane | None:
    route = compact_route(cfg.lanes, cfg.compact_lane, cfg.compact_model, main_route)
    if route is None:
        return None
    if route.model is not None:  # a lane's model may be one of the config's aliases too
        route = replace(route, model=cfg.aliases.get(route.model, route.model))
    # On the conversation's server it is the same kind; another server is detected on its own.
    same = route.base_url == main_route.base_url
    side = open_lane(client, route, cfg, emit, kinds, hint=main.server_kind if same else None)
    meter = Meter(side.counter, emit)
    _check_summary_room(side, meter)
    return side.summary_lane(meter)


def build_runtime(
    cfg: Config, emit: EventSink, journal: Journal, *, kinds: Sequence[ServerKind] = KINDS
) -> Runtime:
    client = httpx.Client(timeout=httpx.Timeout(30.0, connect=5.0))
    route = Route(
        cfg.lane or DEFAULT_LANE,
        cfg.base_url,
        cfg.model,
        cfg.context_window,
        cfg.context_window_source,
        configured=cfg.lane is not None,
    )
    main = open_lane(client, route, cfg, emit, kinds, hint=cfg.server, tokenizer=cfg.tokenizer)
    compaction = _compaction_lane(main, route, cfg, emit, client, kinds)
    # Answers stream, and a truncated one is marked discarded afterwards; only where a silent truncation
    # is likely (a server that does not refuse, with a window nobody measured) are they held until
    # checked.
    live = main.kind.loud or main.window_known
    governor = Governor(main, policy=cfg.policy, journal=journal, emit=emit, compaction=compaction)
    # One symbol cache for the workspace: the tools, the map, the pre-search and the citation check.
    symbols = SymbolCache(cfg.workspace, cache_path(cfg.workspace))
    registry = default_registry(cfg.workspace, symbols)
    constrained = constrain(cfg.tool_mode, main)
    navigator = Navigator(cfg.workspace, main.budget.window, presearch=cfg.presearch, symbols=symbols)
    specs = registry.specs_for(main.budget.window)
    tools_chars = definition_chars(Request(main.model, (), specs, (), 0, constrained=constrained))
    prompt = system_prompt(cfg.workspace, lambda chars: navigator.repo_map(chars + tools_chars))
    for warning in prompt.warnings:
        emit(Warning(message=warning))
    agent = Agent(
        provider=main.provider,
        tools=registry,
        governor=governor,
        system=prompt.parts,
        emit=emit,
        run_budget=RunBudget(cfg.max_turns, cfg.time_budget),
        temperature=cfg.temperature,
        live_text=live,
        constrained=constrained,
        guide=navigator.guide,
        defined=navigator.defined,
        check=Checker(cfg.workspace, symbols),
    )
    mode = "constrained" if constrained else "native"
    emit(
        Info(
            fields={
                **_info(cfg, main, compaction),
                "answers": "streamed" if live else "held",
                "tool_mode": mode,
            }
        )
    )
    return Runtime(agent, main.server, main.provider, main.counter, main.model)


def constrain(mode: str, lane: OpenLane) -> bool:
    """Whether each answer is one constrained step: asked for, or (auto) where the server can force a
    JSON schema. A server that turns the schema down gets tool definitions instead (the agent)."""
    if mode != "auto":
        return mode == "constrained"
    return lane.kind.constrains is not None and lane.kind.constrains(lane.server)


def _info(cfg: Config, main: OpenLane, compaction: Lane | None) -> dict[str, object]:
    fields: dict[str, object] = {
        "workspace": str(cfg.workspace),
        "lane": main.name,
        "model": main.model,
        "server": main.server_kind,
        "base_url": main.server.root_url,
        "window": main.budget.window,
        "window_source": main.budget.source,
        "reserve": main.budget.reserve,
        "counter": main.counter.name if main.counter else "estimate",
        "max_turns": cfg.max_turns,
        "time_budget": cfg.time_budget,
    }
    if compaction is not None:
        fields |= {
            "compact_lane": compaction.name,
            "compact_model": compaction.model,
            "compact_server": compaction.server,
            "compact_window": compaction.budget.window,
            "compact_counter": compaction.meter.name,
        }
    return fields
