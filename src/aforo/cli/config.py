"""Layered, validated configuration: defaults < user file < project file < environment < flags.

Files are TOML. Each layer's values are checked and applied by `config_values.apply_layer` (the
`Config` record and its keys live there); the workspace's `.aforo.toml` and the trust it needs by
`project_file`. This module stacks the layers: the user's file, the project file as far as its trust
allows, the environment (aforo's variables, then the conventions other tools share), the flags, and
the conversation's lane. A key is only attached to a base URL the user configured, never to the
built-in default (a local port any process could listen on).
"""

from __future__ import annotations

import ipaddress
import os
import urllib.parse
from dataclasses import replace
from pathlib import Path
from typing import Any

import platformdirs

from aforo.cli.config_values import NOT_GIVEN, Config, apply_layer
from aforo.cli.project_file import parse_toml, project_layer, read_bounded
from aforo.cli.routes import lane_named, main_route
from aforo.errors import ConfigError
from aforo.store.trust import TrustStore

# Conventions other tools share, after aforo's own settings; each stands in for the built-in default.
URL_CONVENTIONS = ("OPENAI_BASE_URL", "OPENAI_API_BASE", "OLLAMA_HOST")
OLLAMA_PORT = 11434


def user_config_path() -> Path:
    return Path(platformdirs.user_config_dir("aforo")) / "config.toml"


def _read_user_file(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as fh:
            raw = read_bounded(fh, path)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot be read ({exc.strerror})") from exc
    return parse_toml(raw, path)


def ollama_url(host: str) -> str:
    """Ollama's `OLLAMA_HOST` (host[:port], with or without a scheme) as the base URL of its /v1 API.

    As Ollama's own clients read it: port 11434 without a scheme, 80/443 with one. The unspecified
    address a server listens on (0.0.0.0, ::) means this machine for a client.
    """
    raw = host.strip()
    scheme, sep, rest = raw.partition("://")
    default_port = {"http": 80, "https": 443}.get(scheme, OLLAMA_PORT) if sep else OLLAMA_PORT
    if not sep:
        scheme, rest = "http", raw
    try:
        split = urllib.parse.urlsplit(f"{scheme}://{rest}")
        port = split.port or default_port
    except ValueError as exc:
        raise ConfigError(f"OLLAMA_HOST={host!r} is not host[:port] ({exc})") from None
    hostname = split.hostname or "127.0.0.1"
    try:
        address = ipaddress.ip_address(hostname)
    except ValueError:
        pass
    else:
        if address.is_unspecified:
            address = ipaddress.ip_address("::1" if address.version == 6 else "127.0.0.1")
        hostname = f"[{address}]" if address.version == 6 else str(address)
    path = split.path.strip("/")
    return f"{scheme}://{hostname}:{port}/{path + '/' if path else ''}v1"


def _conventions(cfg: Config, env: dict[str, str]) -> Config:
    """Where no aforo setting chose the server: the variables other tools share, in URL_CONVENTIONS
    order. `OLLAMA_HOST` also says the kind (Ollama, through its native API) unless one was set."""
    for name in URL_CONVENTIONS:
        value = env.get(name, "").strip()
        if not value:
            continue
        if name == "OLLAMA_HOST":
            return replace(
                cfg, base_url=ollama_url(value), base_url_source=name, server=cfg.server or "ollama"
            )
        return replace(cfg, base_url=value, base_url_source=name)
    return cfg


def _env_values(env: dict[str, str]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for key in ("base_url", "model", "server", "tokenizer"):
        if env.get(f"AFORO_{key.upper()}"):
            values[key] = env[f"AFORO_{key.upper()}"]
    for key in ("context_window", "max_tokens", "max_turns"):
        raw = env.get(f"AFORO_{key.upper()}")
        if raw:
            try:
                values[key] = int(raw)
            except ValueError:
                raise ConfigError(f"AFORO_{key.upper()} must be a whole number, got {raw!r}") from None
    return values


def resolve_workspace(flag: Any) -> Path:
    workspace = Path.cwd() if flag is NOT_GIVEN or flag is None else Path(flag).expanduser()
    if not workspace.is_dir():
        raise ConfigError(f"workspace {workspace} is not a directory (pass --workspace DIR)")
    return workspace.resolve()


def load_config(
    flags: dict[str, Any], env: dict[str, str] | None = None, *, trust: TrustStore | None = None
) -> Config:
    """Build the configuration. `flags` maps keys to values or NOT_GIVEN; `trust_workspace: True`
    trusts (and remembers) the workspace's project file as it is now."""
    env = dict(os.environ) if env is None else env
    cfg = Config(workspace=resolve_workspace(flags.get("workspace", NOT_GIVEN)))
    user_file = user_config_path()
    if user_file.is_file():
        cfg = apply_layer(cfg, _read_user_file(user_file), str(user_file))
    trust_now = flags.get("trust_workspace") is True
    project = project_layer(cfg.workspace, trust or TrustStore(), trust_now, cfg.lanes)
    cfg = apply_layer(cfg, project.values, project.where)
    env_values = _env_values(env)
    cfg = apply_layer(cfg, env_values, "environment")
    if "context_window" in env_values:
        cfg = replace(cfg, context_window_source="AFORO_CONTEXT_WINDOW")
    if "base_url" in env_values:
        cfg = replace(cfg, base_url_source="AFORO_BASE_URL")
    skip = ("workspace", "json", "trust_workspace")
    given = {k: v for k, v in flags.items() if v is not NOT_GIVEN and k not in skip}
    cfg = apply_layer(cfg, given, "flags")
    if "context_window" in given:
        cfg = replace(cfg, context_window_source="--context-window")
    if "base_url" in given:
        cfg = replace(cfg, base_url_source="--base-url")
    cfg = _with_lane(cfg, set(env_values) | set(given))
    if cfg.base_url_source == "default":
        cfg = _conventions(cfg, env)
    api_key = env.get("AFORO_API_KEY") or env.get("OPENAI_API_KEY") or cfg.api_key
    if cfg.base_url_source == "default":
        api_key = None  # nobody chose this URL: whatever listens on the port gets no key
    return replace(
        cfg,
        model=cfg.aliases.get(cfg.model, cfg.model) if cfg.model else cfg.model,
        compact_model=cfg.aliases.get(cfg.compact_model, cfg.compact_model) if cfg.compact_model else None,
        api_key=api_key,
        json=bool(flags.get("json") is True),
        warnings=project.warnings,
        notes=project.notes,
    )


def _with_lane(cfg: Config, explicit: set[str]) -> Config:
    """The conversation's lane's server, model and window, where the environment or a flag does not
    set them (aforo.cli.routes); the compaction lane is checked to exist now, resolved when wired."""
    window = (cfg.context_window, cfg.context_window_source)
    route = main_route(cfg.lanes, cfg.lane, cfg.base_url, cfg.model, window, explicit)
    if cfg.compact_lane is not None:
        lane_named(cfg.lanes, cfg.compact_lane, "compact_lane")
    # A lane that chose the server came from a trusted file (aforo.cli.routes.untrusted_lanes).
    chose = route.base_url != cfg.base_url
    source = cfg.lanes[route.name].where if chose else cfg.base_url_source
    return replace(
        cfg,
        base_url=route.base_url,
        base_url_source=source,
        model=route.model,
        context_window=route.context_window,
        context_window_source=route.context_window_source,
    )
