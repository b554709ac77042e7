"""Layered, validated configuration: defaults < user file < project file < environment < flags.

Files are TOML. Unknown keys are rejected with the key's name and the file, so a typo never silently
falls back to a default. `NOT_GIVEN` marks a flag the user did not pass (None is a valid "unset").
"""

from __future__ import annotations

import math
import os
import tomllib
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import platformdirs

from aforo.context.policy import Policy
from aforo.errors import ConfigError
from aforo.limits import ANSWER_TIMEOUT, READ_TIMEOUT
from aforo.server_kinds import SERVER_KINDS

DEFAULT_BASE_URL = "http://127.0.0.1:11434/v1"
PROJECT_FILE = ".aforo.toml"


class _NotGiven:
    def __repr__(self) -> str:
        return "NOT_GIVEN"


NOT_GIVEN: Any = _NotGiven()


@dataclass(frozen=True)
class Config:
    workspace: Path = field(default_factory=Path.cwd)
    base_url: str = DEFAULT_BASE_URL
    model: str | None = None
    api_key: str | None = None
    server: str | None = None
    context_window: int | None = None
    context_window_source: str | None = None
    max_tokens: int = 8192
    max_turns: int = 25
    temperature: float | None = None
    tokenizer: Path | None = None
    policy: Policy = field(default_factory=Policy)
    checkpoint_session_quota_mb: float = 20.0
    checkpoint_total_quota_mb: float = 200.0
    read_timeout: float = READ_TIMEOUT.value
    answer_timeout: float = ANSWER_TIMEOUT.value
    json: bool = False


_INT_KEYS = {"context_window", "max_tokens", "max_turns"}
_STR_KEYS = {"base_url", "model", "server", "tokenizer"}
_FLOAT_KEYS = {
    "checkpoint_session_quota_mb",
    "checkpoint_total_quota_mb",
    "temperature",
    "read_timeout",
    "answer_timeout",
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
    elif key in _STR_KEYS and (not isinstance(value, str) or not value.strip()):
        raise ConfigError(f"{where}: {key} must be a non-empty string, got {value!r}")
    if key == "server" and value not in SERVER_KINDS:
        raise ConfigError(f"{where}: server must be one of {', '.join(SERVER_KINDS)}, got {value!r}")
    return value


def _apply(cfg: Config, values: dict[str, Any], where: str) -> Config:
    changes: dict[str, Any] = {}
    policy_changes: dict[str, Any] = {}
    for key, value in values.items():
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
        if key not in _INT_KEYS | _STR_KEYS | _FLOAT_KEYS:
            known = ", ".join(sorted(_INT_KEYS | _STR_KEYS | _FLOAT_KEYS | {"policy"}))
            raise ConfigError(f"{where}: unknown key {key!r} (known: {known})")
        changes[key] = _check(key, value, where)
    if "tokenizer" in changes:
        changes["tokenizer"] = Path(changes["tokenizer"]).expanduser()
    if "context_window" in changes:
        changes["context_window_source"] = where
    if policy_changes:
        try:
            changes["policy"] = replace(cfg.policy, **policy_changes)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"{where}: invalid policy: {exc}") from exc
    return replace(cfg, **changes)


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML ({exc}); fix or remove the file") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"{path}: not valid TOML (byte {exc.start} is not UTF-8, as TOML must be); fix or remove the file"
        ) from exc
    except OSError as exc:
        raise ConfigError(f"{path}: cannot be read ({exc.strerror})") from exc


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


def load_config(flags: dict[str, Any], env: dict[str, str] | None = None) -> Config:
    """Build the configuration. `flags` maps keys to values or NOT_GIVEN."""
    env = dict(os.environ) if env is None else env
    workspace_flag = flags.get("workspace", NOT_GIVEN)
    workspace = Path.cwd() if workspace_flag is NOT_GIVEN else Path(workspace_flag).expanduser()
    if not workspace.is_dir():
        raise ConfigError(f"workspace {workspace} is not a directory (pass --workspace DIR)")
    cfg = Config(workspace=workspace.resolve())
    user_file = user_config_path()
    if user_file.is_file():
        cfg = _apply(cfg, _read_toml(user_file), str(user_file))
    project_file = cfg.workspace / PROJECT_FILE
    if project_file.is_file():
        cfg = _apply(cfg, _read_toml(project_file), str(project_file))
    env_values = _env_values(env)
    cfg = _apply(cfg, env_values, "environment")
    if "context_window" in env_values:
        cfg = replace(cfg, context_window_source="AFORO_CONTEXT_WINDOW")
    given = {k: v for k, v in flags.items() if v is not NOT_GIVEN and k not in ("workspace", "json")}
    cfg = _apply(cfg, given, "flags")
    if "context_window" in given:
        cfg = replace(cfg, context_window_source="--context-window")
    api_key = env.get("AFORO_API_KEY") or env.get("OPENAI_API_KEY")
    return replace(cfg, api_key=api_key, json=bool(flags.get("json") is True))
