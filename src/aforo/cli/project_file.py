"""The workspace's project file (`.aforo.toml`) and the trust it needs (docs/trust.md).

It comes with the checkout, so it is not trusted: until the user trusts it (`aforo trust`, kept by path
and content hash in `aforo.store.trust`), it may tune the policy but not choose where requests go or
which credentials are sent (`ROUTING_KEYS`, and a `tokenizer` outside the workspace): those are ignored
with one warning (`project_layer`). Its values are checked like any layer's, trusted or not.
"""

from __future__ import annotations

import os
import shlex
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aforo.cli.config_values import Config, apply_layer
from aforo.cli.routes import LaneConfig, untrusted_lanes
from aforo.errors import ConfigError, LimitExceeded, StoreError, ToolError
from aforo.limits import CONFIG_BYTES
from aforo.store.trust import TrustStore, digest
from aforo.tools.workspace import open_regular, resolve

PROJECT_FILE = ".aforo.toml"
# What decides where requests go and which credentials are sent: a project file sets these only once
# the user trusted it (a tokenizer is only read, so one inside the workspace is always allowed).
# `engine = "local"` is one: it replaces the user's server with aforo's own engine, which --yes would
# download and build.
ROUTING_KEYS = ("base_url", "server", "api_key", "engine")


def parse_toml(raw: bytes, path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: not valid TOML ({exc}); fix or remove the file") from exc
    except RecursionError:
        raise ConfigError(f"{path}: nested too deeply to be a config file; fix or remove it") from None


def read_bounded(fh: Any, path: Path) -> bytes:
    limit = int(CONFIG_BYTES.value)
    raw: bytes = fh.read(limit + 1)
    if len(raw) > limit:
        raise LimitExceeded(CONFIG_BYTES, f"{path} is too large for a config file")
    return raw


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
            raw = read_bounded(fh, path)
    except ToolError as exc:
        return None, f"{path} was not used: {exc}"
    values = parse_toml(raw, path)
    apply_layer(Config(workspace=workspace), values, str(path))  # invalid values are an error, trusted or not
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
class Layer:
    values: dict[str, Any]
    where: str
    warnings: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()


def project_layer(
    workspace: Path, trust: TrustStore, trust_now: bool, lanes: Mapping[str, LaneConfig]
) -> Layer:
    """The values of the project file that this workspace's trust allows, with what to tell the user."""
    if trust_now:
        trusted = trust_project(workspace, trust)
        forget = f"`aforo trust --revoke {shlex.quote(str(workspace))}` forgets it"
        note = f"{trusted.path} trusted (remembered until it changes; {forget})"
        return Layer(_relative_to(workspace, trusted.values), f"{trusted.path} (trusted)", notes=(note,))
    project, unusable = load_project_file(workspace)
    if project is None:
        return Layer({}, PROJECT_FILE, warnings=(unusable,) if unusable else ())
    kept, needs = needs_trust(workspace, project.values, lanes)
    if not needs:
        return Layer(kept, str(project.path))
    try:
        status = trust.status(workspace, digest(project.raw))
        why = ""
    except StoreError as exc:
        status, why = "untrusted", f" (and the list of trusted workspaces cannot be read: {exc})"
    if status == "trusted":
        return Layer(_relative_to(workspace, project.values), f"{project.path} (trusted)")
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
    return Layer(kept, str(project.path), warnings=(warning,))
