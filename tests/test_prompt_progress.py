"""The server's own progress through the prompt reaches the status line: llama-server is asked for it
(`return_progress`, and only llama-server: others may refuse a field they do not know), its
`prompt_progress` chunks (as b11434 sends them) become Progress events, then the answer's pieces count."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from aforo.errors import ProtocolError
from aforo.events import Event, Progress
from aforo.messages import Message, Request, StreamProgress, StreamText
from aforo.protocols import Provider
from aforo.providers.openai_compat import OpenAICompatProvider
from aforo.server_kinds import KINDS
from aforo.servers.kind import Connection, ServerInfo, kind_named
from aforo.stream import collect
from aforo.wire.bounded import Deadlines
from dialects.openai_app import Raw, Script, make_openai_app
from support.live_server import LiveServer


def chunk(**extra: Any) -> str:
    base = {"object": "chat.completion.chunk", "model": "m", "choices": [], **extra}
    return f"data: {json.dumps(base)}\n\n"


def delta(text: str | None, finish: str | None = None) -> dict[str, Any]:
    return {"index": 0, "delta": {"content": text}, "finish_reason": finish}


# What llama-server b11434 streamed for a 2 534-token prompt (batch 2 048), shortened to two tokens.
LLAMA_STREAM = "".join(
    [
        chunk(
            choices=[delta(None)], prompt_progress={"total": 2534, "cache": 0, "processed": 0, "time_ms": 0}
        ),
        chunk(
            choices=[delta(None)],
            prompt_progress={"total": 2534, "cache": 0, "processed": 2048, "time_ms": 24387},
        ),
        chunk(
            choices=[delta(None)],
            prompt_progress={"total": 2534, "cache": 0, "processed": 2534, "time_ms": 34687},
        ),
        chunk(choices=[delta("The")]),
        chunk(choices=[delta(" end", "stop")]),
        chunk(usage={"prompt_tokens": 2534, "completion_tokens": 2, "total_tokens": 2536}),
        "data: [DONE]\n\n",
    ]
)


def request() -> Request:
    return Request("m", (), (), (Message.user("hi"),), 16)


@contextmanager
def provider_of(kind: str, url: str) -> Iterator[Provider]:
    """The provider the registry builds for `kind`, closed afterwards."""
    info = ServerInfo(kind=kind, root_url=url, v1_url=f"{url}/v1")
    provider = kind_named(KINDS, kind).provider(info, "m", Connection(4096, None, Deadlines(30, 60)))
    try:
        yield provider
    finally:
        if isinstance(provider, OpenAICompatProvider):
            provider.close()


def test_llama_server_progress_becomes_progress_events_before_the_answer() -> None:
    script = Script(Raw(LLAMA_STREAM))
    with LiveServer(make_openai_app(script)) as live, provider_of("llama.cpp", live.url) as provider:
        events = list(provider.stream(request()))
        assert script.bodies[0]["return_progress"] is True
        script.answers.append(Raw(LLAMA_STREAM))
        seen: list[Event] = []
        reply = collect(provider, request(), progress=seen.append)
    assert [e for e in events if isinstance(e, StreamProgress)] == [
        StreamProgress(0, 2534),
        StreamProgress(2048, 2534),
        StreamProgress(2534, 2534),
    ]
    assert isinstance(events[3], StreamText)  # progress first, then the text
    assert reply.text == "The end"
    assert seen == [
        Progress(phase="prompt"),
        Progress(phase="prompt", done=0, total=2534),
        Progress(phase="prompt", done=2048, total=2534),
        Progress(phase="prompt", done=2534, total=2534),
        Progress(phase="generating", tokens=1),
        Progress(phase="generating", tokens=2),
        Progress(phase="idle"),
    ]


def test_only_llama_server_is_asked_for_its_progress() -> None:
    for kind in ("openai", "vllm", "lmstudio", "litellm", "tgi"):
        script = Script(Raw(LLAMA_STREAM))
        with LiveServer(make_openai_app(script)) as live, provider_of(kind, live.url) as provider:
            list(provider.stream(request()))
        assert "return_progress" not in script.bodies[0], kind


def test_progress_ends_even_when_the_call_fails() -> None:
    seen: list[Event] = []
    with (
        LiveServer(make_openai_app(Script(Raw("", status=200)))) as live,
        provider_of("openai", live.url) as provider,
        pytest.raises(ProtocolError),
    ):  # an empty stream
        collect(provider, request(), progress=seen.append)
    assert seen[0] == Progress(phase="prompt") and seen[-1] == Progress(phase="idle")
