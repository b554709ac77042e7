"""The routes requests take, from the lanes in the configuration (SPEC §9): `[lanes.NAME]` tables, `lane`,
`compact_lane`, `--compact-model`.

A lane is a named route: a `model`, the `base_url` of its server (the conversation's when not given)
and, optionally, its `context_window`. `lane` picks the lane the conversation runs on: its values stand
in for `base_url`, `model` and `context_window` wherever the environment or a flag does not set them.
`compact_lane` picks the lane summary requests go to; `--compact-model` names the model they ask for, on
that lane's server (the conversation's when no `compact_lane` is set).

A lane's `base_url` decides where requests go, so a workspace's project file sets it, or picks a lane
that has one, only once the user trusted that file (SPEC §8; aforo.cli.config's trust rule).
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from aforo.context.lanes import DEFAULT_LANE
from aforo.errors import ConfigError

LANE_KEYS = ("base_url", "model", "context_window")
_NAME = re.compile(r"[A-Za-z0-9_-]{1,40}")
# The name of the lane `--compact-model` makes when no compact_lane names one.
COMPACT_MODEL_LANE = "compact"


@dataclass(frozen=True)
class LaneConfig:
    name: str
    model: str
    base_url: str | None = None  # None: the conversation's server
    context_window: int | None = None
    where: str = ""  # the file that defined it


@dataclass(frozen=True)
class Route:
    """Where the requests of one lane go, resolved from the configuration."""

    name: str
    base_url: str
    model: str | None
    context_window: int | None = None
    context_window_source: str | None = None
    # Defined by a [lanes.NAME] table or --compact-model: checked at start (server up, model there,
    # room for a summary request), so a wrong lane is an error before the conversation is touched.
    configured: bool = False


def parse_lanes(value: Any, where: str) -> dict[str, LaneConfig]:
    """The `[lanes.NAME]` tables of one file, validated; ConfigError names the lane and the key."""
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: [lanes] must hold tables, one per lane: [lanes.fast] model = ...")
    lanes: dict[str, LaneConfig] = {}
    for name, table in value.items():
        if not _NAME.fullmatch(name):
            raise ConfigError(f"{where}: lane name {name!r} must be letters, digits, '-' or '_' (≤ 40)")
        if not isinstance(table, dict):
            raise ConfigError(f"{where}: [lanes.{name}] must be a table with base_url, model, context_window")
        unknown = sorted(set(table) - set(LANE_KEYS))
        if unknown:
            raise ConfigError(
                f"{where}: unknown key lanes.{name}.{unknown[0]} (known: {', '.join(LANE_KEYS)})"
            )
        model = table.get("model")
        if not isinstance(model, str) or not model.strip():
            raise ConfigError(f"{where}: lanes.{name}.model must name the lane's model (a non-empty string)")
        base_url = table.get("base_url")
        if base_url is not None and (not isinstance(base_url, str) or not base_url.strip()):
            raise ConfigError(f"{where}: lanes.{name}.base_url must be a non-empty string, got {base_url!r}")
        if base_url is not None:
            check_base_url(base_url, f"{where}: lanes.{name}.base_url")
        window = table.get("context_window")
        if window is not None and (isinstance(window, bool) or not isinstance(window, int) or window < 1):
            raise ConfigError(f"{where}: lanes.{name}.context_window must be a positive whole number")
        lanes[name] = LaneConfig(name, model, base_url, window, where)
    return lanes


def check_base_url(url: str, named: str) -> None:
    """A base URL names its scheme: without one, `notaurl` would fail as a DNS error far from the cause."""
    scheme, sep, rest = url.strip().partition("://")
    if not sep:
        raise ConfigError(
            f"{named} {url!r} has no scheme (http:// expected): give it as http://HOST:PORT, "
            "e.g. http://127.0.0.1:8080"
        )
    if scheme.lower() not in ("http", "https") or not rest.strip("/"):
        raise ConfigError(f"{named} {url!r} is not an http:// or https:// URL with a host")


def split_credentials(url: str) -> tuple[str, tuple[str, str] | None]:
    """`http://user:PASSWORD@host:port/path` as the URL without its user and password, and them (decoded):
    the URL is printed, recorded and put in error messages; the credentials go in a header only."""
    parts = urllib.parse.urlsplit(url.strip())
    userinfo, at, hostport = parts.netloc.rpartition("@")
    if not at:
        return url, None
    user, _, password = userinfo.partition(":")
    bare = urllib.parse.urlunsplit(parts._replace(netloc=hostport))
    return bare, (urllib.parse.unquote(user), urllib.parse.unquote(password))


def routing_keys(values: Mapping[str, Any], lanes: Mapping[str, LaneConfig]) -> list[str]:
    """The lane keys of a file's values that decide where requests go (a trust question, SPEC §8): a
    lane's base_url, and `lane` or `compact_lane` naming a lane (of `lanes`, defined before) that has one."""
    tables = values.get("lanes")
    tables = tables if isinstance(tables, dict) else {}
    keys = [f"lanes.{n}.base_url" for n, t in tables.items() if isinstance(t, dict) and "base_url" in t]
    for key in ("lane", "compact_lane"):
        name = values.get(key)
        if isinstance(name, str) and name not in tables and name in lanes and lanes[name].base_url:
            keys.append(f"{key} = {name!r} (a lane with its own base_url)")
    return keys


def lane_settings(values: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """What of a file's lane settings can send requests elsewhere, as (key, value) to show the user who
    trusts it: each lane's base_url, and `lane` / `compact_lane` (which pick the lane requests go to)."""
    tables = values.get("lanes")
    tables = tables if isinstance(tables, dict) else {}
    shown = [
        (f"lanes.{name}.base_url", table["base_url"])
        for name, table in tables.items()
        if isinstance(table, dict) and "base_url" in table
    ]
    return shown + [(key, values[key]) for key in ("lane", "compact_lane") if key in values]


def untrusted_lanes(
    values: dict[str, Any], lanes: Mapping[str, LaneConfig]
) -> tuple[dict[str, Any], list[str]]:
    """What an untrusted file may set of lanes, and the keys it set that need trust (SPEC §8): its lanes
    with a base_url are left out, and so are its `lane` / `compact_lane` when they pick a lane (its own
    or one of `lanes`, the user's) that goes to a server of its own."""
    keys = routing_keys(values, lanes)
    if not keys:
        return values, []
    given = values.get("lanes")
    tables: dict[str, Any] = given if isinstance(given, dict) else {}
    routed = {n for n, t in tables.items() if isinstance(t, dict) and "base_url" in t}
    kept = dict(values)
    if tables:
        kept["lanes"] = {n: t for n, t in tables.items() if n not in routed}
    for key in ("lane", "compact_lane"):
        name = values.get(key)
        if not isinstance(name, str):
            continue
        if name in routed or (name not in tables and name in lanes and lanes[name].base_url):
            del kept[key]
    return kept, keys


def lane_named(lanes: Mapping[str, LaneConfig], name: str, key: str) -> LaneConfig:
    """The lane `key` (lane, compact_lane) names, or a ConfigError listing the lanes there are."""
    if name not in lanes:
        defined = ", ".join(sorted(lanes)) or "none; add a [lanes.NAME] table with base_url and model"
        raise ConfigError(f"{key} {name!r} names no lane (defined: {defined})")
    return lanes[name]


def main_route(
    lanes: Mapping[str, LaneConfig],
    lane: str | None,
    base_url: str,
    model: str | None,
    window: tuple[int | None, str | None],
    explicit: set[str],
) -> Route:
    """The conversation's route: the chosen lane's values, except where `explicit` (set by the
    environment or a flag) says otherwise."""
    if lane is None:
        return Route(DEFAULT_LANE, base_url, model, *window)
    chosen = lane_named(lanes, lane, "lane")
    if chosen.base_url is not None and "base_url" not in explicit:
        base_url = chosen.base_url
    if "model" not in explicit:
        model = chosen.model
    if chosen.context_window is not None and "context_window" not in explicit:
        window = (chosen.context_window, f"lanes.{lane}.context_window in {chosen.where}")
    return Route(lane, base_url, model, *window, configured=True)


def compact_route(
    lanes: Mapping[str, LaneConfig], compact_lane: str | None, compact_model: str | None, main: Route
) -> Route | None:
    """Where summary requests go; None when that is the conversation's own lane."""
    if compact_lane is None:
        if compact_model is None or compact_model == main.model:
            return None
        return Route(COMPACT_MODEL_LANE, main.base_url, compact_model, configured=True)
    chosen = lane_named(lanes, compact_lane, "compact_lane")
    route = Route(
        compact_lane,
        chosen.base_url or main.base_url,
        compact_model or chosen.model,
        chosen.context_window,
        f"lanes.{compact_lane}.context_window in {chosen.where}" if chosen.context_window else None,
        configured=True,
    )
    if (route.name, route.base_url, route.model) == (main.name, main.base_url, main.model):
        return None
    return route
