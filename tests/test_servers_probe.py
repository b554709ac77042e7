"""`aforo probe` against servers that refuse, truncate or collapse prompts over their window."""

from __future__ import annotations

import io
import json
from pathlib import Path

import httpx

from aforo.limits import PROBE_WINDOW
from aforo.server_kinds import KINDS
from aforo.servers.detect import detect_server
from aforo.servers.probe import ProbeResult, probe, run_probe_command
from aforo.servers.probe_store import ProbeStore
from dialects.servers_apps import generic_app, llamacpp_app
from support.live_server import LiveServer, free_port


def run_probe(client: httpx.Client, app, **kwargs) -> tuple[ProbeResult, list[str]]:  # type: ignore[no-untyped-def]
    lines: list[str] = []
    with LiveServer(app) as server:
        info = detect_server(client, server.url + "/v1", model="m", kinds=KINDS)
        result = probe(client, info, "m", progress=lines.append, **kwargs)
    return result, lines


def within(value: int, target: int, fraction: float = 0.05) -> bool:
    return abs(value - target) <= fraction * target


def test_silent_truncation_keeping_the_newest(client: httpx.Client) -> None:
    app = generic_app(window=4096, overflow="truncate")
    result, lines = run_probe(client, app)
    assert result.overflow == "truncate"
    assert within(result.window, 4096), result
    assert len(result.samples) <= 10
    assert len(lines) == len(result.samples)
    assert any("silently truncated" in line for line in lines)


def test_llama_server_error_names_its_window(client: httpx.Client) -> None:
    result, _ = run_probe(client, llamacpp_app(n_ctx=4096))
    assert (result.window, result.overflow) == (4096, "error")
    assert len(result.samples) <= 6


def test_llama_server_error_without_the_served_hint(client: httpx.Client) -> None:
    app = llamacpp_app(n_ctx=3000)
    with LiveServer(app) as server:
        info = detect_server(client, server.url, hint="openai", kinds=KINDS)
        result = probe(client, info, "m", progress=lambda _: None)
    assert (result.window, result.overflow) == (3000, "error")


def test_refusal_without_numbers_is_bisected(client: httpx.Client) -> None:
    result, _ = run_probe(client, generic_app(window=5000, overflow="error"))
    assert result.overflow == "error"
    assert within(result.window, 5000)
    assert result.window <= 5000  # the reported window is one that was seen to fit


def test_collapse(client: httpx.Client) -> None:
    result, lines = run_probe(client, generic_app(window=4096, overflow="collapse"))
    assert result.overflow == "collapse"
    assert within(result.window, 4096), result
    assert any("collapsed (server counted 63)" in line for line in lines)


def test_no_limit_up_to_the_maximum_is_none(client: httpx.Client) -> None:
    result, _ = run_probe(client, generic_app(window=10**9), max_window=9000)
    assert result.overflow == "none"
    assert 4000 < result.window <= 9000


def test_a_window_past_probe_window_is_reported_as_fitting_up_to_it(client: httpx.Client) -> None:
    result, _ = run_probe(client, generic_app(window=10**9))
    assert result.overflow == "none"
    assert PROBE_WINDOW.value / 2 < result.window <= PROBE_WINDOW.value
    assert "(probe_window)" in result.source


def test_probe_prompts_share_a_prefix_and_ask_for_one_token(client: httpx.Client) -> None:
    app = generic_app(window=4096, overflow="truncate")
    run_probe(client, app)
    bodies = [body for path, body in app.state.received if path == "/v1/chat/completions"]
    contents = [b["messages"][0]["content"] for b in bodies]
    first_line = contents[0].split("\n", 1)[0]
    assert first_line.startswith("aforo-probe-")
    assert all(c.startswith(first_line + "\n") for c in contents)
    assert all(b["max_tokens"] == 1 and b["stream"] is False for b in bodies)


# --- remembering -----------------------------------------------------------------------------------


def test_store_round_trip_per_server_and_model(tmp_path: Path) -> None:
    store = ProbeStore(tmp_path / "probes.json")
    store.save("http://a:1", "m", 4096, "truncate", "bisection")
    store.save("http://a:1", "other", 8192, "error", "n_ctx")
    reloaded = ProbeStore(tmp_path / "probes.json")
    got = reloaded.load("http://a:1/", "m")
    assert got is not None and (got.window, got.overflow) == (4096, "truncate")
    assert "aforo probe" in got.window_source
    assert reloaded.load("http://a:1", "other").window == 8192  # type: ignore[union-attr]
    assert reloaded.load("http://b:1", "m") is None
    assert (tmp_path / "probes.json").stat().st_mode & 0o777 == 0o600


def test_store_ignores_a_corrupt_file(tmp_path: Path) -> None:
    path = tmp_path / "probes.json"
    path.write_text("{corrupt")
    store = ProbeStore(path)
    assert store.load("http://a:1", "m") is None
    store.save("http://a:1", "m", 4096, "error", "x")
    assert store.load("http://a:1", "m") is not None


def test_command_json_probes_and_remembers(aforo_home: Path) -> None:
    out = io.StringIO()
    with LiveServer(llamacpp_app(n_ctx=4096)) as server:
        code = run_probe_command(server.url + "/v1", None, None, True, out, kinds=KINDS)
    assert code == 0
    doc = json.loads(out.getvalue())
    assert (doc["window"], doc["overflow"]) == (4096, "error")
    assert isinstance(doc["source"], str)
    # Remembered in the state dir (AFORO_HOME), under the model the server lists.
    remembered = ProbeStore().load(server.url, "qwen2.5-coder-0.5b.gguf")
    assert remembered is not None and remembered.window == 4096
    assert (aforo_home / "probes.json").is_file()


def test_command_human_output_shows_progress_and_summary() -> None:
    out = io.StringIO()
    with LiveServer(generic_app(window=4096, overflow="truncate")) as server:
        code = run_probe_command(server.url, "m", None, False, out, kinds=KINDS)
    text = out.getvalue()
    assert code == 0
    assert "probe 1:" in text and "window:" in text and "overflow: truncate" in text


def test_command_errors_have_exit_codes() -> None:
    out = io.StringIO()
    assert run_probe_command(f"http://127.0.0.1:{free_port()}", "m", None, True, out, kinds=KINDS) == 1
    assert "no server at" in json.loads(out.getvalue())["error"]
    out = io.StringIO()
    assert run_probe_command(f"http://127.0.0.1:{free_port()}", None, None, False, out, kinds=KINDS) == 2
    assert "--model" in out.getvalue()
    assert run_probe_command("http://127.0.0.1:1", "m", "nonsense", False, io.StringIO(), kinds=KINDS) == 2
