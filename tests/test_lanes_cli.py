"""Lanes over real HTTP on 127.0.0.1: the providers say which model served, a run with a second server for
summaries names its lanes in `--json` and in `aforo stats`, and a wrong lane is a clear error that names
it and leaves the saved conversation untouched."""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from aforo.cli.config import load_config, user_config_path
from aforo.cli.render import HumanRenderer
from aforo.cli.wiring import build_runtime
from aforo.context.memory_journal import MemoryJournal
from aforo.events import Info
from aforo.messages import Message
from aforo.messages import Request as ChatRequest
from aforo.providers.ollama import OllamaProvider
from aforo.providers.openai_compat import OpenAICompatProvider
from aforo.stream import collect
from dialects.openai_app import Call, Reply, models_endpoint, read_body, respond
from dialects.servers_apps import chat_tokens, ollama_app
from support.cli import run_cli
from support.live_server import LiveServer, free_port
from support.scenario import Recorder

MARKER = "LANE-4242"
SCHEMA = json.loads((Path(__file__).parents[1] / "docs" / "json-events.schema.json").read_text())
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)


def serving(
    served: str, responder: Callable[[dict[str, Any]], Reply], models: Mapping[str, int | None]
) -> Starlette:
    """An OpenAI-compatible server that says `served` served every answer, whatever the request named
    (as llama-server does with its --alias)."""
    bodies: list[dict[str, Any]] = []

    async def chat(request: Request) -> Response:
        body = await read_body(request)
        if isinstance(body, Response):
            return body
        bodies.append(body)
        return await respond(responder(body), {**body, "model": served})

    app = Starlette(
        routes=[
            Route("/v1/chat/completions", chat, methods=["POST"]),
            Route("/v1/models", models_endpoint(models, "max_model_len"), methods=["GET"]),
        ]
    )
    app.state.bodies = bodies
    return app


def ask(text: str, model: str = "asked-for") -> ChatRequest:
    return ChatRequest(model, (), (), (Message.user(text),), 16)


@pytest.mark.parametrize("as_json", [False, True])
def test_the_openai_adapter_says_which_model_served(as_json: bool) -> None:
    app = serving("served-alias", lambda body: Reply(text="hi", json=as_json), {"served-alias": None})
    with LiveServer(app) as server, OpenAICompatProvider(f"{server.url}/v1", "asked-for") as provider:
        end = collect(provider, ask("hello")).end
    assert end.model == "served-alias"


def test_the_ollama_adapter_says_which_model_served() -> None:
    with LiveServer(ollama_app(models=("qwen2.5-coder:0.5b",))) as server:
        provider = OllamaProvider(server.url, "qwen2.5-coder:0.5b", num_ctx=4096, version="0.12.6")
        end = collect(provider, ask("hello", "qwen2.5-coder:0.5b")).end
    assert end.model == "qwen2.5-coder:0.5b"


# --- a run on two servers -------------------------------------------------------------------------


def reader(files: list[str]) -> Callable[[dict[str, Any]], Reply]:
    """The conversation's model: reads `files` one per turn, then answers with the marker if it still
    sees it. Counts its prompt with the toy tokenizer, as a real server would count its own."""

    def answer(body: dict[str, Any]) -> Reply:
        tokens = chat_tokens(body)
        if not body.get("tools"):  # a max_tokens=1 measurement
            return Reply(text=".", prompt_tokens=tokens)
        seen = json.dumps(body["messages"])
        read = {
            json.loads(c["function"]["arguments"])["file_path"]
            for m in body["messages"]
            for c in m.get("tool_calls") or []
        }
        read |= {f for f in files if f"<evidence>Read {f}</evidence>" in seen}
        todo = [f for f in files if f not in read]
        if todo:
            return Reply(calls=[Call("Read", json.dumps({"file_path": todo[0]}))], prompt_tokens=tokens)
        found = MARKER if MARKER in seen else "no marker"
        return Reply(text=f"{found}: all {len(files)} files read.", prompt_tokens=tokens)

    return answer


def summarizer(body: dict[str, Any]) -> Reply:
    read = sorted({w for w in json.dumps(body).replace('"', " ").split() if w.startswith("notes")})
    return Reply(
        text=f"Goal: read every notes file.\nEvidence: read {', '.join(read)}.\nNext action: read the rest.",
        prompt_tokens=chat_tokens(body),
    )


def notes(root: Path, count: int = 8, size: int = 2600) -> list[str]:
    names = []
    for i in range(count):
        name = f"notes{i:02d}.txt"
        (root / name).write_text(
            "".join(f"note {i}.{n}: the window is a budget\n" for n in range(size // 36))
        )
        names.append(name)
    return names


def lanes_file(fast_url: str, *, model: str = "fast-model", window: int = 2048) -> None:
    path = user_config_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        f'[lanes.fast]\nbase_url = "{fast_url}/v1"\nmodel = "{model}"\ncontext_window = {window}\n'
    )


def test_summaries_on_a_second_server_named_in_json_events_and_stats(tmp_path: Path) -> None:
    files = notes(tmp_path)
    main_app = serving("main-alias", reader(files), {"main-model": None})
    fast_app = serving("fast-alias", summarizer, {"fast-model": None})
    with LiveServer(main_app) as main, LiveServer(fast_app) as fast:
        lanes_file(fast.url)
        run = run_cli(
            "-w", str(tmp_path), "--base-url", f"{main.url}/v1", "-m", "main-model",
            "--context-window", "4096", "--compact-lane", "fast", "--json",
            f"{MARKER}: read every notes*.txt file, then say the code.", timeout=120,
        )  # fmt: skip
    events = run.events()
    assert run.code == 0, run.out[-3000:] + run.err
    for event in events:  # the --json contract (docs/json-events.schema.json) holds with lanes too
        VALIDATOR.validate(event)
    info = next(e for e in events if e["type"] == "info" and "window" in e)
    assert (info["lane"], info["compact_lane"], info["compact_window"]) == ("default", "fast", 2048)
    compactions = [e for e in events if e["type"] == "context" and e["action"] == "compacted"]
    assert compactions and {(e["lane"], e["model"]) for e in compactions} == {("fast", "fast-alias")}
    checks = [e for e in events if e["type"] == "model_check"]
    assert checks and all(c["restored"] and c["served"] == "main-alias" for c in checks)
    assert {(e["lane"], e["model"]) for e in events if e["type"] == "turn_end"} == {("default", "main-alias")}
    assert MARKER in "".join(e["text"] for e in events if e["type"] == "text_delta")
    # The summary requests went to the fast server, named its model, and fitted its window.
    assert fast_app.state.bodies and {b["model"] for b in fast_app.state.bodies} == {"fast-model"}
    assert all(chat_tokens(b) <= 2048 for b in fast_app.state.bodies)
    assert not any(b.get("tools") is None and "summarize" in json.dumps(b) for b in main_app.state.bodies)

    stats = run_cli("stats", "--json")
    lanes = json.loads(stats.out)["overall"]["lanes"]
    assert lanes["fast"]["models_served"] == {"fast-alias": len(compactions)}
    assert "main-alias" in lanes["default"]["models_served"]
    table = run_cli("stats").out
    assert "fast-alias" in table and "main-alias" in table and "model restored" in table


def test_compact_model_on_ollama_asks_the_same_server_for_the_small_model(tmp_path: Path) -> None:
    big, small = "qwen2.5-coder:7b", "qwen2.5-coder:0.5b"
    # The summary's reported prompt is plausible for its size, so it is not taken for a truncated one.
    app = ollama_app(
        models=(big, small),
        loaded={small: 2048},
        script=[{"chunks": ["Goal: greet.\nNext action: answer."], "prompt_eval_count": 1100}],
    )
    rec, journal = Recorder(), MemoryJournal()
    with LiveServer(app) as server:
        flags = {"workspace": str(tmp_path), "base_url": server.url, "model": big, "compact_model": small}
        cfg = load_config({**flags, "context_window": 4096}, env={})
        runtime = build_runtime(cfg, rec, journal)
        governor = runtime.agent.governor
        conversation = [
            Message.user(f"{MARKER}: say hello " + "please " * 300),
            Message.assistant("hello " * 200),
        ]
        governor.conversation.replace(conversation)
        governor.compact_now(runtime.agent.request(), runtime.provider)
    (_path, body), *_ = [(p, b) for p, b in app.state.received if p == "/api/chat"]
    # The same server, asked for the small model, with the small model's own window (from /api/ps).
    assert body["model"] == small and body["options"]["num_ctx"] == 2048
    (action,) = rec.of("context")
    assert (action.action, action.lane, action.model) == ("compacted", "compact", small)
    assert MARKER in governor.conversation.messages[0].text
    assert [(r.stamp.lane, r.stamp.served) for r in journal.events("compaction")] == [("compact", small)]
    # The start-up lines say where summaries go.
    out = io.StringIO()
    HumanRenderer(out=out)(next(e for e in rec.events if isinstance(e, Info)))
    assert f"summaries: lane compact, {small} (ollama), window 2048" in out.getvalue()


# --- a wrong lane: an error naming it, before anything is touched ---------------------------------


def saved_session(home: Path) -> tuple[Path, bytes]:
    (path,) = (home / "sessions").glob("*.json")
    return path, path.read_bytes()


@pytest.mark.parametrize(
    ("lane", "says"),
    [
        ({"url": "down"}, "no server answers"),
        ({"model": "nope"}, "does not have the model 'nope'"),
        ({"window": 200}, "cannot hold a summary request"),
    ],
)
def test_a_wrong_lane_is_an_error_naming_it_and_the_conversation_is_untouched(
    tmp_path: Path, aforo_home: Path, lane: dict[str, Any], says: str
) -> None:
    main_app = serving(
        "main-alias", lambda body: Reply(text="hello", prompt_tokens=chat_tokens(body)), {"m": None}
    )
    fast_app = serving("fast-alias", summarizer, {"fast-model": None})
    with LiveServer(main_app) as main, LiveServer(fast_app) as fast:
        flags = ("-w", str(tmp_path), "--base-url", f"{main.url}/v1", "-m", "m", "--context-window", "4096")
        assert run_cli(*flags, "hello").code == 0
        path, before = saved_session(aforo_home)
        url = f"http://127.0.0.1:{free_port()}" if lane.get("url") == "down" else fast.url
        lanes_file(url, model=lane.get("model", "fast-model"), window=lane.get("window", 2048))
        run = run_cli(*flags, "--compact-lane", "fast", "--resume", "and now?")
    assert run.code == 2, run.out + run.err
    assert "lane 'fast'" in run.err and says in run.err, run.err
    assert path.read_bytes() == before
    assert not fast_app.state.bodies
