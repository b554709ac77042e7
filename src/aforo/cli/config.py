"""Layered, validated configuration: defaults < user file < project file < environment < flags.

Files are TOML. Unknown keys are rejected with the key's name and the file, so a typo never silently
falls back to a default. `NOT_GIVEN` marks a flag the user did not pass (None is a valid "unset").

Trust (docs/trust.md): the user's flags, environment and user file are trusted; the workspace's
`.aforo.toml` comes with the checkout and is not. Until the user trusts that file (`aforo trust`, kept
by path and content hash in `aforo.store.trust`), it may tune the policy but not choose where requests
go or which credentials are sent: its `base_url`, `server`, `api_key`, `engine` and a `tokenizer`
outside the workspace are ignored with one warning. A key is only attached to a base URL the user configured,
never to the built-in default (a local port any process could listen on).
"""

from __future__ import annotations

import ipaddress
import math
import os
import shlex
import tomllib
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import platformdirs

from aforo.cli.routes import LaneConfig, check_base_url, lane_named, main_route, parse_lanes, untrusted_lanes
from aforo.context.policy import Policy
from aforo.errors import ConfigError, LimitExceeded, StoreError, ToolError
from aforo.limits import ANSWER_TIMEOUT, CONFIG_BYTES, READ_TIMEOUT, RUN_SECONDS
from aforo.server_kinds import SERVER_KINDS
from aforo.store.trust import TrustStore, digest
from aforo.tools.workspace import open_regular, resolve

DEFAULT_BASE_URL = "http://127.0.0.1:11434/v1"
PROJECT_FILE = ".aforo.toml"
# What decides where requests go and which credentials are sent: a project file sets these only once
# the user trusted it (a tokenizer is only read, so one inside the workspace is always allowed).
# `engine = "local"` is one: it replaces the user's server with aforo's own engine, which --yes would
# download and build.
ROUTING_KEYS = ("base_url", "server", "api_key", "engine")
# Conventions other tools share, after aforo's own settings; each stands in for the built-in default.
URL_CONVENTIONS = ("OPENAI_BASE_URL", "OPENAI_API_BASE", "OLLAMA_HOST")
OLLAMA_PORT = 11434


class _NotGiven:
    def __repr__(self) -> str:
        return "NOT_GIVEN"


NOT_GIVEN: Any = _NotGiven()


@dataclass(frozen=True, kw_only=True)
class Config:
    workspace: Path = field(default_factory=Path.cwd)
    base_url: str = DEFAULT_BASE_URL
    base_url_source: str = "default"
    engine: str | None = None  # "local": aforo's own engine (aforo.engine) instead of base_url
    model: str | None = None
    api_key: str | None = field(default=None, repr=False)
    server: str | None = None
    context_window: int | None = None
    context_window_source: str | None = None
    max_tokens: int = 8192
    max_turns: int = 25
    time_budget: float = RUN_SECONDS.value
    # Greedy by default: a server's own default is tuned for chat, and at it the 0.5B model answered `...`
    # 4 times out of 4 where at 0 it answered (issue 32); aider sends 0 too unless told otherwise.
    temperature: float = 0.0
    # auto: constrained steps where the server can force a JSON schema (aforo.reply_format), else tool
    # definitions; "constrained" / "native" choose one.
    tool_mode: str = "auto"
    # Before the first model call, aforo searches the workspace for what the question names
    # (aforo.navigate.presearch); --no-search turns it off.
    presearch: bool = True
    tokenizer: Path | None = None
    policy: Policy = field(default_factory=Policy)
    # Short names for models (`[aliases] coder = "qwen2.5-coder:7b-instruct"`): `-m coder` asks for the
    # model it names. Resolved once, in `load_config`; `model` is always the name the server knows.
    aliases: dict[str, str] = field(default_factory=dict)
    checkpoint_session_quota_mb: float = 20.0
    checkpoint_total_quota_mb: float = 200.0
    read_timeout: float = READ_TIMEOUT.value
    answer_timeout: float = ANSWER_TIMEOUT.value
    json: bool = False
    # For the user, shown once the renderer exists: what of the project file was ignored, and why.
    warnings: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    # Lanes (aforo.cli.routes): named routes, the conversation's lane and where summaries go.
    lanes: Mapping[str, LaneConfig] = field(default_factory=dict)
    lane: str | None = None
    compact_lane: str | None = None
    compact_model: str | None = None


_INT_KEYS = {"context_window", "max_tokens", "max_turns"}
_STR_KEYS = {
    "base_url",
    "model",
    "server",
    "tokenizer",
    "api_key",
    "engine",
    "lane",
    "compact_lane",
    "compact_model",
    "tool_mode",
}
TOOL_MODES = ("auto", "constrained", "native")
_BOOL_KEYS = {"presearch"}
_FLOAT_KEYS = {
    "checkpoint_session_quota_mb",
    "checkpoint_total_quota_mb",
    "temperature",
    "read_timeout",
    "answer_timeout",
    "time_budget",
}
_POLICY_KEYS = {f.name for f in fields(Policy)}


def user_config_path() -> Path:
    return Path(platformdirs.user_config_dir("aforo")) / "config.toml"


def _check(key: str, value: Any, where: str) -> Any:
    if key in _INT_KEYS:
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ConfigError(f"{where}: {key} must be a positive whole number, got {value!r}")
    elif key in _FLOAT_KEYS:
        # 0 is a valid temperature (greedy decoding); a quota must be positive.
        floor_ok = key == "temperature" and value == 0
        if isinstance(value, bool) or not isinstance(value, int | float) or (value <= 0 and not floor_ok):
            raise ConfigError(f"{where}: {key} must be a positive number, got {value!r}")
        if not math.isfinite(value):  # nan passes every comparison above; inf is no timeout or quota
            raise ConfigError(f"{where}: {key} must be a finite number, got {value!r}")
    elif key in _BOOL_KEYS and not isinstance(value, bool):
        raise ConfigError(f"{where}: {key} must be true or false, got {value!r}")
    elif key in _STR_KEYS and (not isinstance(value, str) or not value.strip()):
        shown = "a hidden value" if key == "api_key" else repr(value)
        raise ConfigError(f"{where}: {key} must be a non-empty string, got {shown}")
    if key == "server" and value not in SERVER_KINDS:
        raise ConfigError(f"{where}: server must be one of {', '.join(SERVER_KINDS)}, got {value!r}")
    if key == "tool_mode" and value not in TOOL_MODES:
        raise ConfigError(f"{where}: tool_mode must be one of {', '.join(TOOL_MODES)}, got {value!r}")
    if key == "base_url":
        check_base_url(value, "--base-url" if where == "flags" else f"{where}: base_url")
    if key == "engine" and value != "local":
        raise ConfigError(f'{where}: engine must be "local" (or absent), got {value!r}')
    return value


def _check_aliases(value: Any, where: str) -> dict[str, str]:
    if not isinstance(value, dict):
        raise ConfigError(f'{where}: [aliases] must be a table of names, e.g. coder = "qwen2.5-coder:7b"')
    for name, model in value.items():
        if not isinstance(model, str) or not model.strip():
            raise ConfigError(
                f"{where}: aliases.{name} must name a model (a non-empty string), got {model!r}"
            )
    return dict(value)


def _apply(cfg: Config, values: dict[str, Any], where: str) -> Config:
    changes: dict[str, Any] = {}
    policy_changes: dict[str, Any] = {}
    for key, value in values.items():
        if key == "aliases":
            changes["aliases"] = {**cfg.aliases, **_check_aliases(value, where)}
            continue
        if key == "policy":
            if not isinstance(value, dict):
                raise ConfigError(f"{where}: [policy] must be a table")
            for pkey, pvalue in value.items():
                if pkey not in _POLICY_KEYS:
                    raise ConfigError(
                        f"{where}: unknown key policy.{pkey} (known: {', '.join(sorted(_POLICY_KEYS))})"
                    )
                policy_changes[pkey] = pvalue
            continue
        if key == "lanes":
            changes["lanes"] = {**changes.get("lanes", cfg.lanes), **parse_lanes(value, where)}
            continue
        if key not in _INT_KEYS | _STR_KEYS | _FLOAT_KEYS | _BOOL_KEYS:
            known = ", ".join(
                sorted(_INT_KEYS | _STR_KEYS | _FLOAT_KEYS | _BOOL_KEYS | {"policy", "aliases", "lanes"})
            )
            raise ConfigError(f"{where}: unknown key {key!r} (known: {known})")
        changes[key] = _check(key, value, where)
    if "engine" in changes and "base_url" in changes:
        raise ConfigError(
            f'{where}: engine = "local" (--local) and base_url (--base-url) both say where the model is; '
            "keep one"
        )
    if "base_url" in changes:
        changes["engine"] = None  # a server named by a later layer wins over an earlier `engine = "local"`
    if "tokenizer" in changes:
        changes["tokenizer"] = Path(changes["tokenizer"]).expanduser()
    if "context_window" in changes:
        changes["context_window_source"] = where
    if "base_url" in changes:
        changes["base_url_source"] = where
    if policy_changes:
        try:
            changes["policy"] = replace(cfg.policy, **policy_changes)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"{where}: invalid policy: {exc}") from exc
    return replace(cfg, **changes)


def _parse_toml(raw: bytes, path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: not valid TOML ({exc}); fix or remove the file") from exc
    except RecursionError:
        raise ConfigError(f"{path}: nested too deeply to be a config file; fix or remove it") from None


def _read_bounded(fh: Any, path: Path) -> bytes:
    limit = int(CONFIG_BYTES.value)
    raw: bytes = fh.read(limit + 1)
    if len(raw) > limit:
        raise LimitExceeded(CONFIG_BYTES, f"{path} is too large for a config file")
    return raw


def _read_user_file(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as fh:
            raw = _read_bounded(fh, path)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot be read ({exc.strerror})") from exc
    return _parse_toml(raw, path)


@dataclass(frozen=True)
class ProjectFile:
    path: Path
    raw: bytes  # exactly what was parsed: its hash is what trust is about
    values: dict[str, Any]


def load_project_file(workspace: Path) -> tuple[ProjectFile | None, str | None]:
    """The workspace's project file, parsed and validated (None when absent or unusable), and a
    warning when it is there but unusable.

    It comes with the workspace, so it is opened like a tool opens a file: confined to the workspace (a
    symlink leading out of it is not followed), a regular file only, and bounded in size.
    """
    path = workspace / PROJECT_FILE
    if not os.path.lexists(path):
        return None, None
    try:
        with open_regular(resolve(workspace, PROJECT_FILE), PROJECT_FILE) as fh:
            raw = _read_bounded(fh, path)
    except ToolError as exc:
        return None, f"{path} was not used: {exc}"
    values = _parse_toml(raw, path)
    _apply(Config(workspace=workspace), values, str(path))  # invalid values are an error, trusted or not
    return ProjectFile(path, raw, values), None


def trust_project(workspace: Path, trust: TrustStore) -> ProjectFile:
    """Trust the workspace's project file as it is now (its bytes' hash is remembered)."""
    project, unusable = load_project_file(workspace)
    if project is None:
        why = f" ({unusable})" if unusable else ""
        raise ConfigError(f"{workspace} has no usable {PROJECT_FILE}{why}: nothing to trust")
    trust.trust(workspace, digest(project.raw))
    return project


def needs_trust(
    workspace: Path, values: dict[str, Any], lanes: Mapping[str, LaneConfig] | None = None
) -> tuple[dict[str, Any], list[str]]:
    """What an untrusted project file may set, and the keys it set that need trust; `lanes` are the
    user's, which the file may not pick when they go to another server."""
    kept, needs = untrusted_lanes({k: v for k, v in values.items() if k not in ROUTING_KEYS}, lanes or {})
    needs = [k for k in ROUTING_KEYS if k in values] + needs
    tokenizer = values.get("tokenizer")
    if isinstance(tokenizer, str):
        try:
            kept["tokenizer"] = str(resolve(workspace, tokenizer))
        except ToolError:
            del kept["tokenizer"]
            needs.append("tokenizer (outside the workspace)")
    return kept, needs


def _relative_to(workspace: Path, values: dict[str, Any]) -> dict[str, Any]:
    """A trusted project file's tokenizer path, read relative to the workspace like everything else in it."""
    tokenizer = values.get("tokenizer")
    if not isinstance(tokenizer, str):
        return values
    return {**values, "tokenizer": str(workspace / Path(tokenizer).expanduser())}


@dataclass(frozen=True)
class _Layer:
    values: dict[str, Any]
    where: str
    warnings: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()


def _project_layer(
    workspace: Path, trust: TrustStore, trust_now: bool, lanes: Mapping[str, LaneConfig]
) -> _Layer:
    """The values of the project file that this workspace's trust allows, with what to tell the user."""
    if trust_now:
        trusted = trust_project(workspace, trust)
        forget = f"`aforo trust --revoke {shlex.quote(str(workspace))}` forgets it"
        note = f"{trusted.path} trusted (remembered until it changes; {forget})"
        return _Layer(_relative_to(workspace, trusted.values), f"{trusted.path} (trusted)", notes=(note,))
    project, unusable = load_project_file(workspace)
    if project is None:
        return _Layer({}, PROJECT_FILE, warnings=(unusable,) if unusable else ())
    kept, needs = needs_trust(workspace, project.values, lanes)
    if not needs:
        return _Layer(kept, str(project.path))
    try:
        status = trust.status(workspace, digest(project.raw))
        why = ""
    except StoreError as exc:
        status, why = "untrusted", f" (and the list of trusted workspaces cannot be read: {exc})"
    if status == "trusted":
        return _Layer(_relative_to(workspace, project.values), f"{project.path} (trusted)")
    command = f"aforo trust {shlex.quote(str(workspace))}"
    if status == "changed":
        warning = (
            f"{project.path} changed since you trusted it, so its {', '.join(needs)} was ignored (its "
            f"other settings apply). Check the file, then trust it again: `{command}`."
        )
    else:
        warning = (
            f"{project.path} sets {', '.join(needs)}, which a project file may only do in a workspace "
            f"you trust{why}: ignored (its other settings apply). If you wrote or checked this file, "
            f"trust it once: `{command}`, or pass --trust-workspace."
        )
    return _Layer(kept, str(project.path), warnings=(warning,))


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
        cfg = _apply(cfg, _read_user_file(user_file), str(user_file))
    trust_now = flags.get("trust_workspace") is True
    project = _project_layer(cfg.workspace, trust or TrustStore(), trust_now, cfg.lanes)
    cfg = _apply(cfg, project.values, project.where)
    env_values = _env_values(env)
    cfg = _apply(cfg, env_values, "environment")
    if "context_window" in env_values:
        cfg = replace(cfg, context_window_source="AFORO_CONTEXT_WINDOW")
    if "base_url" in env_values:
        cfg = replace(cfg, base_url_source="AFORO_BASE_URL")
    skip = ("workspace", "json", "trust_workspace")
    given = {k: v for k, v in flags.items() if v is not NOT_GIVEN and k not in skip}
    cfg = _apply(cfg, given, "flags")
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
