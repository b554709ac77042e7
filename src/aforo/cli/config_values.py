"""The configuration's values: the `Config` record, the keys a layer may set, and how one layer's values
are checked and applied (`apply_layer`). Unknown keys are rejected with the key's name and where it was
set, so a typo never silently falls back to a default. `NOT_GIVEN` marks a flag the user did not pass
(None is a valid "unset").
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from aforo.cli.routes import LaneConfig, check_base_url, parse_lanes
from aforo.context.policy import Policy
from aforo.errors import ConfigError
from aforo.limits import ANSWER_TIMEOUT, READ_TIMEOUT, RUN_SECONDS
from aforo.server_kinds import SERVER_KINDS

DEFAULT_BASE_URL = "http://127.0.0.1:11434/v1"


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


def apply_layer(cfg: Config, values: dict[str, Any], where: str) -> Config:
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
