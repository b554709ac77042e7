"""What goes upstream for one admitted request, and what the client gets of the answer that comes back.

The client's body goes as it came, unless the governor changed its conversation (`--compact`): then
its messages are written again through the walk the providers use (`wire.chat`), so what was counted
is what is sent (`with_messages`); an OpenAI stream asks for usage; Ollama is told the window it was
budgeted for (`providers.ollama.with_window`, as the provider tells it). An OpenAI client's request
for a model on Ollama goes to its native API (`bridge`), so that it gets `num_ctx` too, and its answer
comes back in OpenAI's words.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx

from aforo.gateway.bridge import ToOpenAI, to_ollama
from aforo.gateway.decisions import Ticket
from aforo.gateway.inbound import Api, Inbound
from aforo.messages import Request
from aforo.providers.ollama import OLLAMA, with_window
from aforo.wire.chat import chat_messages
from aforo.wire.openai_chat import OPENAI


@dataclass
class Way:
    """Where a request goes, in which dialect its answer comes back, and how the client gets it."""

    inbound: Inbound
    url: str
    body: dict[str, Any]
    api: Api  # the dialect upstream answers in
    bridge: ToOpenAI | None = None  # an OpenAI client's request answered by Ollama's native API

    def shown(self, lines: list[str], docs: list[Any]) -> list[str]:
        """What the client gets of these lines of the answer (`docs`: the documents they hold)."""
        if self.bridge is None:
            return [line for line in lines if _keep(self.inbound, line)] if self.inbound.streams else lines
        if self.inbound.streams:
            return [out for doc in docs for out in self.bridge.chunk(doc)]
        return [self.bridge.completion(docs)]

    def media(self, resp: httpx.Response) -> str | None:
        if self.bridge is None:
            return resp.headers.get("content-type")
        return "text/event-stream" if self.inbound.streams else "application/json"


def way_for(ticket: Ticket) -> Way:
    """What goes upstream: the client's body; the governed conversation when the governor changed it;
    usage asked for in an OpenAI stream; to Ollama, the window's settings, an OpenAI client's request
    included (through its native API: `bridge`)."""
    inbound, lane, server = ticket.inbound, ticket.lane, ticket.lane.server
    if lane.kind.sets_window and inbound.api == "openai":
        asked_usage = _asked_usage(inbound)
        bridge = ToOpenAI(inbound.model, usage=asked_usage)
        body = to_ollama(inbound.body, ticket.admitted.request)
        return Way(inbound, f"{server.root_url}/api/chat", _on_ollama(body, ticket), "ollama_chat", bridge)
    body = with_messages(inbound, ticket.admitted.request) if ticket.transformed else dict(inbound.body)
    if inbound.api == "openai":
        if inbound.streams:
            asked = body.get("stream_options")
            body["stream_options"] = {**(asked if isinstance(asked, dict) else {}), "include_usage": True}
        return Way(inbound, f"{server.v1_url}/chat/completions", body, "openai")
    if lane.kind.sets_window:
        body = _on_ollama(body, ticket)
    path = "chat" if inbound.api == "ollama_chat" else "generate"
    return Way(inbound, f"{server.root_url}/api/{path}", body, inbound.api)


def with_messages(inbound: Inbound, request: Request) -> dict[str, Any]:
    """The client's body, carrying the conversation of `request` (the governor replaced it)."""
    body = dict(inbound.body)
    if inbound.api == "ollama_generate":
        body["prompt"] = "\n\n".join(m.text for m in request.messages)
        return body
    body["messages"] = chat_messages(request, OLLAMA if inbound.api == "ollama_chat" else OPENAI)
    return body


def _on_ollama(body: dict[str, Any], ticket: Ticket) -> dict[str, Any]:
    """The window it was budgeted for, and the answer's limit: the client's, else the reserve."""
    lane, asked = ticket.lane, ticket.inbound.asked_max_tokens
    limit = lane.budget.reserve if asked is None else asked
    return with_window(body, lane.budget.window, limit, lane.server.version)


def _asked_usage(inbound: Inbound) -> bool:
    options = inbound.body.get("stream_options")
    return isinstance(options, dict) and options.get("include_usage") is True


def _keep(inbound: Inbound, line: str) -> bool:
    """Whether a streamed line goes to the client: not the usage-only chunk it did not ask for (a client
    that reads `choices[0]` of every chunk would fail on it)."""
    if inbound.api != "openai" or _asked_usage(inbound) or not line.startswith("data:"):
        return True
    return not ('"choices": []' in line or '"choices":[]' in line)
