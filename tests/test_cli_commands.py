"""Subcommands and the conventions around them: which first word is a subcommand, `aforo ask`, help on
every flag, shell completion, `aforo models`, model aliases, and `aforo probe` reading the config."""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from aforo.cli.completion import script
from aforo.cli.config import user_config_path
from aforo.cli.flags import build_parser
from aforo.cli.parsing import Subcommand
from aforo.cli.subcommands import SUBCOMMANDS, parsers
from dialects.openai_app import Reply, make_openai_app
from dialects.servers_apps import llamacpp_app, ollama_app
from support.cli import run_cli
from support.live_server import LiveServer, free_port


class Recorder:
    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []

    def __call__(self, body: dict[str, Any]) -> Reply:
        self.bodies.append(body)
        return Reply(text="ok", prompt_tokens=len(json.dumps(body)) // 4)

    def question(self) -> str:
        return str(next(m["content"] for m in self.bodies[0]["messages"] if m["role"] == "user"))

    def model(self) -> str:
        return str(self.bodies[0]["model"])


def user_config(text: str) -> None:
    path = user_config_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


# --- which first word is a subcommand --------------------------------------------------------------


@pytest.mark.parametrize(
    ("words", "question"),
    [
        (("--", "stats"), "stats"),
        (("--", "stats", "of", "the", "repo?"), "stats of the repo?"),
        (("ask", "stats", "of", "the", "repo?"), "stats of the repo?"),
        (("ask", "sessions"), "sessions"),
        (("statistics", "please"), "statistics please"),  # only a subcommand's exact name is one
    ],
)
def test_questions_that_start_with_a_subcommands_name(
    tmp_path: Path, words: tuple[str, ...], question: str
) -> None:
    model = Recorder()
    with LiveServer(make_openai_app(model)) as server:
        flags = ("-w", str(tmp_path), "--base-url", server.url, "-m", "test-model")
        # `ask` comes first, the flags after it; otherwise the flags come first.
        run = run_cli("ask", *flags, *words[1:]) if words[0] == "ask" else run_cli(*flags, *words)
    assert run.code == 0, run.err
    assert model.question() == question


def test_a_subcommand_refusing_words_says_how_to_ask_them(tmp_path: Path) -> None:
    run = run_cli("stats", "of", "the", "repo?")
    assert run.code == 2
    assert "unrecognized arguments: of the repo?" in run.err
    assert "aforo ask stats" in run.err and "aforo -- stats" in run.err


def every_parser() -> list[tuple[str, argparse.ArgumentParser]]:
    out = [("aforo", build_parser())]
    for name, parser in parsers().items():
        assert parser is not None, f"the subcommand {name} has no parser for its help and completion"
        out.append((name, parser))
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                out += [(f"{name} {sub}", p) for sub, p in action.choices.items()]
    return out


def test_every_subcommand_is_an_entry_with_a_parser() -> None:
    assert all(isinstance(entry, Subcommand) for entry in SUBCOMMANDS.values())
    assert {"probe", "models", "stats", "sessions", "trust", "completion"} <= set(SUBCOMMANDS)


def test_every_flag_of_every_command_has_help() -> None:
    missing = [
        f"{name} {'/'.join(action.option_strings) or action.dest}"
        for name, parser in every_parser()
        for action in parser._actions
        if not isinstance(action, argparse._SubParsersAction) and not (action.help or "").strip()
    ]
    assert missing == []


def test_top_level_help_lists_the_subcommands_and_the_rule() -> None:
    run = run_cli("--help")
    assert run.code == 0
    for name in (*SUBCOMMANDS, "ask"):
        assert f"\n  {name} " in run.out
    assert "aforo -- stats" in run.out


# --- shell completion ------------------------------------------------------------------------------


def bash_complete(tmp_path: Path, line: str) -> list[str]:
    """What the generated bash completion offers for `line` (the cursor at its end)."""
    path = tmp_path / "aforo.bash"
    path.write_text(run_cli("completion", "bash").out)
    words = line.split(" ")
    probe = (
        f"source {path}; COMP_WORDS=({' '.join(repr(w) for w in words)}); "
        f"COMP_CWORD={len(words) - 1}; _aforo; printf '%s\\n' \"${{COMPREPLY[@]}}\""
    )
    done = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, check=True, timeout=30)
    return done.stdout.split()


def test_the_bash_script_is_valid_bash(tmp_path: Path) -> None:
    path = tmp_path / "aforo.bash"
    run = run_cli("completion", "bash")
    assert run.code == 0
    path.write_text(run.out)
    subprocess.run(["bash", "-n", str(path)], check=True, timeout=30)


def test_bash_completes_subcommands_flags_and_their_values(tmp_path: Path) -> None:
    assert bash_complete(tmp_path, "aforo st") == ["stats"]
    assert {"sessions", "models", "completion", "ask"} <= set(bash_complete(tmp_path, "aforo "))
    assert "--model" in bash_complete(tmp_path, "aforo --")
    assert "llama.cpp" in bash_complete(tmp_path, "aforo --server ")
    assert bash_complete(tmp_path, "aforo completion ") == ["bash", "zsh", "fish"]
    assert "--older-than" in bash_complete(tmp_path, "aforo sessions prune --")
    assert "--older-than" not in bash_complete(tmp_path, "aforo sessions --")
    assert "--resume" in bash_complete(tmp_path, "aforo ask --re")


@pytest.mark.parametrize(("shell", "check"), [("zsh", ["zsh", "-n"]), ("fish", ["fish", "--no-execute"])])
def test_the_zsh_and_fish_scripts_parse(tmp_path: Path, shell: str, check: list[str]) -> None:
    text = script(shell, parsers())
    assert "older-than" in text and "llama.cpp" in text
    if shutil.which(check[0]) is None:
        pytest.skip(f"{shell} is not installed here")
    path = tmp_path / f"aforo.{shell}"
    path.write_text(text)
    subprocess.run([*check, str(path)], check=True, timeout=30)


# --- models and aliases ----------------------------------------------------------------------------


def test_models_lists_what_the_server_offers_through_its_kind(tmp_path: Path) -> None:
    user_config('[aliases]\ncoder = "qwen2.5-coder:7b-instruct"\nbig = "llama3.3:70b"\n')
    with LiveServer(ollama_app(models=("qwen2.5-coder:7b-instruct", "llama3.2:3b"))) as server:
        # OLLAMA_HOST says where, and that the server is Ollama: its /api/tags lists the models.
        env = {"OLLAMA_HOST": f"127.0.0.1:{server.port}"}
        run = run_cli("models", "-w", str(tmp_path), env=env)
        as_json = run_cli("models", "--json", "-w", str(tmp_path), env=env)
    assert run.code == 0, run.err
    assert run.out.splitlines() == [
        "qwen2.5-coder:7b-instruct  (alias: coder)",
        "llama3.2:3b",
        "big -> llama3.3:70b (not listed by this server)",
    ]
    assert f"ollama at http://127.0.0.1:{server.port}: 2 model(s)" in run.err
    doc = json.loads(as_json.out)
    assert doc["server"] == "ollama" and doc["models"] == ["qwen2.5-coder:7b-instruct", "llama3.2:3b"]
    assert doc["aliases"]["coder"] == "qwen2.5-coder:7b-instruct"


def test_models_without_a_server_names_the_url_tried(tmp_path: Path) -> None:
    port = free_port()
    run = run_cli("models", "-w", str(tmp_path), env={"OPENAI_BASE_URL": f"http://127.0.0.1:{port}/v1"})
    assert run.code == 1
    assert f"http://127.0.0.1:{port}/v1" in run.err and "no server answered" in run.err


def test_an_alias_names_the_model_a_run_asks_for(tmp_path: Path) -> None:
    user_config('[aliases]\ncoder = "qwen2.5-coder:7b-instruct"\n')
    model = Recorder()
    with LiveServer(make_openai_app(model)) as server:
        run = run_cli("-w", str(tmp_path), "--base-url", server.url, "-m", "coder", "hi")
    assert run.code == 0, run.err
    assert model.model() == "qwen2.5-coder:7b-instruct"


def test_an_alias_that_names_no_model_is_a_config_error(tmp_path: Path) -> None:
    user_config("[aliases]\ncoder = 7\n")
    run = run_cli("-w", str(tmp_path), "-m", "coder", "hi")
    assert run.code == 2
    assert "aliases.coder" in run.err and "config.toml" in run.err


# --- probe reads the config like a run ---------------------------------------------------------------


def test_probe_reads_the_user_config_and_its_aliases(tmp_path: Path, aforo_home: Path) -> None:
    with LiveServer(llamacpp_app(n_ctx=4096)) as server:
        user_config(f'base_url = "{server.url}/v1"\n[aliases]\nq = "qwen2.5-coder-0.5b.gguf"\n')
        run = run_cli("probe", "-w", str(tmp_path), "-m", "q", "--json", timeout=120)
    assert run.code == 0, run.out + run.err
    assert json.loads(run.out)["window"] == 4096
    remembered = json.loads((aforo_home / "probes.json").read_text())
    assert "qwen2.5-coder-0.5b.gguf" in json.dumps(remembered)


def test_probe_follows_the_conventions_like_a_run(tmp_path: Path) -> None:
    port = free_port()
    run = run_cli(
        "probe", "-w", str(tmp_path), "-m", "m", env={"OPENAI_BASE_URL": f"http://127.0.0.1:{port}/v1"}
    )
    assert run.code == 1
    assert f"127.0.0.1:{port}" in run.out  # it went where the convention points, not to the default


# --- stats: what each session cost ----------------------------------------------------------------


def test_each_run_is_recorded_with_its_tokens_time_and_model(tmp_path: Path) -> None:
    script = iter(
        [
            Reply(text="first", prompt_tokens=400, completion_tokens=30, cached_tokens=0),
            Reply(text="second", prompt_tokens=500, completion_tokens=20, cached_tokens=400),
        ]
    )
    with LiveServer(make_openai_app(lambda body: next(script))) as server:
        flags = ("-w", str(tmp_path), "--base-url", server.url, "-m", "test-model")
        first = run_cli(*flags, "one?")
        second = run_cli(*flags, "--resume", "two?")
    assert first.code == 0 and second.code == 0, first.err + second.err
    doc = json.loads(run_cli("stats", "--json").out)
    (usage,) = [s["usage"] for s in doc["sessions"].values()]
    assert (usage["runs"], usage["input_tokens"], usage["output_tokens"]) == (2, 900, 50)
    assert usage["cached_tokens"] == 400 and usage["cached_share"] == round(400 / 900, 4)
    assert usage["models"] == ["test-model"] and 0 < usage["wall_seconds"] < 60
    table = run_cli("stats").out
    assert "44%" in table and "test-model" in table
    runs = [json.loads(line) for line in run_cli("stats", "--export").out.splitlines()]
    assert [r["cause"] for r in runs if r["event"] == "run"] == ["end_turn", "end_turn"]
    # Like every record, a run's names the lane and the model the server said served its answers.
    assert {(r["lane"], r["model_served"]) for r in runs if r["event"] == "run"} == {
        ("default", "test-model")
    }
