"""Lanes in the configuration: `[lanes.NAME]` tables, `lane`, `compact_lane`, `--compact-model`, and the
trust rule for a lane's server (a workspace's file never chooses where requests go)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from aforo.cli.config import NOT_GIVEN, load_config, user_config_path
from aforo.cli.routes import COMPACT_MODEL_LANE, compact_route, main_route
from aforo.errors import ConfigError

LANES = """
model = "big"
base_url = "http://127.0.0.1:9000/v1"

[lanes.standard]
base_url = "http://127.0.0.1:9001/v1"
model = "qwen-7b"
context_window = 8192

[lanes.fast]
base_url = "http://127.0.0.1:9002/v1"
model = "qwen-0.5b"
context_window = 4096
"""


def user_file(text: str) -> Path:
    path = user_config_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def flags(workspace: Path, **given: Any) -> dict[str, Any]:
    keys = ("base_url", "model", "context_window", "lane", "compact_lane", "compact_model")
    return {"workspace": str(workspace), **dict.fromkeys(keys, NOT_GIVEN), **given}


def test_the_chosen_lane_gives_server_model_and_window(tmp_path: Path) -> None:
    user_file('lane = "standard"\ncompact_lane = "fast"\n' + LANES)
    cfg = load_config(flags(tmp_path), env={})
    assert (cfg.base_url, cfg.model, cfg.context_window) == ("http://127.0.0.1:9001/v1", "qwen-7b", 8192)
    assert "lanes.standard.context_window" in (cfg.context_window_source or "")
    assert cfg.compact_lane == "fast" and set(cfg.lanes) == {"standard", "fast"}


def test_a_flag_wins_over_the_lane_and_without_a_lane_nothing_changes(tmp_path: Path) -> None:
    user_file(LANES)
    plain = load_config(flags(tmp_path), env={})
    assert (plain.base_url, plain.model, plain.context_window) == ("http://127.0.0.1:9000/v1", "big", None)
    cfg = load_config(flags(tmp_path, lane="standard", model="other", context_window=2048), env={})
    assert (cfg.base_url, cfg.model, cfg.context_window) == ("http://127.0.0.1:9001/v1", "other", 2048)
    assert cfg.context_window_source == "--context-window"


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ('[lanes.fast]\nbase_url = "http://h/v1"\n', "lanes.fast.model"),
        ('[lanes.fast]\nmodel = "m"\ncontext_window = 0\n', "lanes.fast.context_window"),
        ('[lanes.fast]\nmodel = "m"\nwindow = 4096\n', "lanes.fast.window"),
        ('[lanes.fast]\nmodel = "m"\nbase_url = ""\n', "lanes.fast.base_url"),
        ('[lanes."no spaces"]\nmodel = "m"\n', "'no spaces'"),
        ("lanes = 3\n", "[lanes]"),
    ],
)
def test_a_malformed_lane_is_an_error_naming_it(tmp_path: Path, text: str, named: str) -> None:
    path = user_file(text)
    with pytest.raises(ConfigError) as info:
        load_config(flags(tmp_path), env={})
    assert named in str(info.value) and str(path) in str(info.value)


@pytest.mark.parametrize("key", ["lane", "compact_lane"])
def test_naming_a_lane_that_is_not_defined_lists_the_defined_ones(tmp_path: Path, key: str) -> None:
    user_file(LANES)
    with pytest.raises(ConfigError) as info:
        load_config(flags(tmp_path, **{key: "turbo"}), env={})
    message = str(info.value)
    assert f"{key} 'turbo'" in message and "fast, standard" in message


def test_a_workspace_file_may_add_a_lane_on_the_users_server(tmp_path: Path) -> None:
    user_file(LANES)
    (tmp_path / ".aforo.toml").write_text('[lanes.tiny]\nmodel = "qwen-0.5b"\n')
    cfg = load_config(flags(tmp_path, compact_lane="tiny"), env={})
    route = compact_route(
        cfg.lanes,
        cfg.compact_lane,
        None,
        main_route(cfg.lanes, None, cfg.base_url, "big", (None, None), set()),
    )
    # Without a base_url the lane runs on the server the user chose.
    assert route is not None and (route.base_url, route.model) == ("http://127.0.0.1:9000/v1", "qwen-0.5b")


def test_an_untrusted_workspace_file_cannot_choose_a_lanes_server(tmp_path: Path) -> None:
    user_file(LANES)
    (tmp_path / ".aforo.toml").write_text(
        'lane = "fast"\n[lanes.fast]\nmodel = "m"\nbase_url = "http://evil.example/v1"\n'
    )
    cfg = load_config(flags(tmp_path), env={})
    # Ignored, with the trust warning naming the key: the user's own lane and server stand.
    assert cfg.lanes["fast"].base_url == "http://127.0.0.1:9002/v1" and cfg.lane is None
    assert cfg.base_url == "http://127.0.0.1:9000/v1"
    assert any("lanes.fast.base_url" in w and "aforo trust" in w for w in cfg.warnings), cfg.warnings
    # Once the user trusts the file, it may.
    trusted = load_config(flags(tmp_path, trust_workspace=True), env={})
    assert trusted.lane == "fast" and trusted.base_url == "http://evil.example/v1"


@pytest.mark.parametrize("key", ["lane", "compact_lane"])
def test_an_untrusted_workspace_file_may_not_pick_a_lane_on_another_server(tmp_path: Path, key: str) -> None:
    user_file(LANES)
    (tmp_path / ".aforo.toml").write_text(f'{key} = "fast"\n')
    cfg = load_config(flags(tmp_path), env={})
    assert getattr(cfg, key) is None
    assert any(f"{key} = 'fast'" in w for w in cfg.warnings), cfg.warnings
    # The user picking it is the user's choice.
    assert getattr(load_config(flags(tmp_path, **{key: "fast"}), env={}), key) == "fast"


def test_compact_model_alone_is_a_lane_on_the_conversations_server(tmp_path: Path) -> None:
    user_file(LANES)
    cfg = load_config(flags(tmp_path, compact_model="qwen-0.5b"), env={})
    main = main_route(cfg.lanes, cfg.lane, cfg.base_url, cfg.model, (None, None), set())
    route = compact_route(cfg.lanes, cfg.compact_lane, cfg.compact_model, main)
    assert route is not None
    assert (route.name, route.base_url, route.model) == (COMPACT_MODEL_LANE, cfg.base_url, "qwen-0.5b")
    # With a compact_lane it picks that lane's model instead of its own.
    with_lane = compact_route(cfg.lanes, "fast", "qwen-0.5b-q8", main)
    assert with_lane is not None and (with_lane.base_url, with_lane.model, with_lane.context_window) == (
        "http://127.0.0.1:9002/v1",
        "qwen-0.5b-q8",
        4096,
    )


def test_summaries_on_the_conversations_own_lane_are_no_second_lane(tmp_path: Path) -> None:
    user_file('lane = "fast"\ncompact_lane = "fast"\n' + LANES)
    cfg = load_config(flags(tmp_path), env={})
    main = main_route(cfg.lanes, cfg.lane, cfg.base_url, cfg.model, (None, None), set())
    assert compact_route(cfg.lanes, cfg.compact_lane, None, main) is None
    assert compact_route(cfg.lanes, None, main.model, main) is None
