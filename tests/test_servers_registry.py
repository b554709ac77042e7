"""A server kind is one registry entry: a kind the registry did not know is detected, its window read,
its counter and its provider used, from that entry alone."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.requests import Request as HttpRequest
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from aforo.cli.config import Config
from aforo.cli.wiring import build_runtime
from aforo.context.memory_journal import MemoryJournal
from aforo.events import Event, Info
from aforo.messages import Message, MessageEnd, Request, StreamText
from aforo.protocols import Provider
from aforo.providers.openai_compat import OpenAICompatProvider
from aforo.server_kinds import KINDS
from aforo.servers.documents import Documents
from aforo.servers.kind import Connection, ServerInfo, ServerKind
from aforo.servers.windows import ServedWindow
from aforo.wire.http import post_json
from aforo.wire.openai_chat import chat_body
from dialects.servers_apps import chat_tokens
from support.live_server import LiveServer

MODEL = "kobold-7b"
WINDOW = 6144


def kobold_app() -> Starlette:
    """A server of a kind aforo does not know, with its own version, window and token-count endpoints."""

    async def tokencount(request: HttpRequest) -> Response:
        body = await request.json()
        request.app.state.received.append("/api/extra/tokencount")
        return JSONResponse({"value": chat_tokens(body)})

    async def chat(request: HttpRequest) -> Response:
        body = await request.json()
        request.app.state.received.append("/v1/chat/completions")
        message = {"role": "assistant", "content": "hello from kobold"}
        tokens = chat_tokens(body)
        return JSONResponse(
            {
                "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": tokens, "completion_tokens": 3, "total_tokens": tokens + 3},
            }
        )

    models = {"object": "list", "data": [{"id": MODEL, "object": "model", "owned_by": "koboldcpp"}]}
    app = Starlette(
        routes=[
            Route("/api/extra/version", lambda r: JSONResponse({"result": "KoboldCpp", "version": "1.80"})),
            Route("/api/extra/true_max_context_length", lambda r: JSONResponse({"value": WINDOW})),
            Route("/api/extra/tokencount", tokencount, methods=["POST"]),
            Route("/v1/models", lambda r: JSONResponse(models)),
            Route("/v1/chat/completions", chat, methods=["POST"]),
        ]
    )
    app.state.received = []
    return app


# --- the one entry: everything aforo needs to know about this kind ---------------------------------------


def check_kobold(docs: Documents) -> str | None:
    doc = docs.root("/api/extra/version")
    return str(doc["version"]) if isinstance(doc, dict) and doc.get("result") == "KoboldCpp" else None


def read_kobold(docs: Documents, model: str | None) -> ServedWindow | None:
    doc = docs.root("/api/extra/true_max_context_length")
    value = doc.get("value") if isinstance(doc, dict) else None
    return (
        ServedWindow(value, "kobold /api/extra/true_max_context_length") if isinstance(value, int) else None
    )


class KoboldCounter:
    name = "kobold"
    exact = True

    def __init__(self, client: httpx.Client, root_url: str, model: str) -> None:
        self.client, self.url, self.model = client, f"{root_url}/api/extra/tokencount", model

    def count(self, request: Request) -> int:
        return int(post_json(self.client, self.url, chat_body(request, stream=False), 5.0)["value"])

    def count_messages(self, messages: tuple[Message, ...] | list[Message]) -> int:
        return self.count(Request(self.model, (), (), tuple(messages), 1))


made: list[dict[str, Any]] = []


def kobold_provider(server: ServerInfo, model: str, conn: Connection) -> Provider:
    made.append({"kind": server.kind, "model": model, "window": conn.window})
    return OpenAICompatProvider(server.v1_url, model, api_key=conn.api_key)


KOBOLD = ServerKind(
    name="kobold",
    check=check_kobold,
    window=read_kobold,
    counter=KoboldCounter,
    loud=True,
    provider=kobold_provider,
)


def start(url: str, tmp_path: Path, kinds: tuple[ServerKind, ...]) -> tuple[Any, Info]:
    events: list[Event] = []
    cfg = Config(workspace=tmp_path, base_url=f"{url}/v1", model=MODEL)
    runtime = build_runtime(cfg, events.append, MemoryJournal(), kinds=kinds)
    [info] = [e for e in events if isinstance(e, Info)]
    return runtime, info


def test_a_new_kind_is_one_registry_entry(tmp_path: Path) -> None:
    made.clear()
    app = kobold_app()
    with LiveServer(app) as server:
        runtime, info = start(server.url, tmp_path, (*KINDS, KOBOLD))
        request = Request(MODEL, (), (), (Message.user("hi there"),), 16)
        assert isinstance(runtime.counter, KoboldCounter)
        counted = runtime.counter.count(request)
        answer = list(runtime.provider.stream(request))
    # Detected, with the version its check read.
    assert (runtime.server.kind, runtime.server.version) == ("kobold", "1.80")
    # Its window reader gave the window, and says where it came from.
    assert (info.fields["window"], info.fields["window_source"]) == (
        WINDOW,
        "kobold /api/extra/true_max_context_length",
    )
    # Its counter was chosen (checked with one count) and counts what the server counts.
    assert info.fields["counter"] == "kobold"
    assert counted == chat_tokens(chat_body(request, stream=False))
    # Its provider factory built the provider, with the resolved window, and that provider talks to it.
    assert made == [{"kind": "kobold", "model": MODEL, "window": WINDOW}]
    assert [e.text for e in answer if isinstance(e, StreamText)] == ["hello from kobold"]
    assert isinstance(answer[-1], MessageEnd)
    assert app.state.received.count("/api/extra/tokencount") == 2
    assert app.state.received[-1] == "/v1/chat/completions"


def test_without_its_entry_the_same_server_is_a_generic_one(tmp_path: Path) -> None:
    made.clear()
    with LiveServer(kobold_app()) as server:
        runtime, info = start(server.url, tmp_path, KINDS)
    assert runtime.server.kind == "openai"
    assert info.fields["counter"] == "estimate"
    assert info.fields["window_source"] == "default"
    assert made == []


def test_the_registry_has_one_fallback_and_unique_names() -> None:
    names = [kind.name for kind in KINDS]
    assert len(names) == len(set(names))
    # Detection falls back to the one kind without a check; a second one would never be chosen.
    assert [kind.name for kind in KINDS if kind.check is None] == ["openai"]
