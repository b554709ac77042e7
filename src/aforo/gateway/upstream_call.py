"""What goes upstream for one admitted request, and in which dialect its answer comes back.

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

from aforo.gateway.bridge import ToOpenAI, to_ollama
from aforo.gateway.decisions import Ticket
from aforo.gateway.inbound import Api, Inbound
from aforo.messages import Request
from aforo.providers.ollama import OLLAMA, with_window
from aforo.wire.chat import chat_messages
from aforo.wire.openai_chat import OPENAI


@dataclass
class Way:
    """Where a request goes, and in which dialect its answer comes back (the leg gives it to the client:
    `upstream_leg.shown`)."""

    inbound: Inbound
    url: str
    body: dict[str, Any]
    api: Api  # the dialect upstream answers in
    bridge: ToOpenAI | None = None  # an OpenAI client's request answered by Ollama's native API


def way_for(ticket: Ticket) -> Way:
    """What goes upstream: the client's body (an OpenAI client's request for a model on Ollama in the
    words of Ollama's native API: `bridge`); to Ollama, the window's settings; usage asked for in an
    OpenAI stream; the governed conversation when the governor changed it (or the bridge translates it)."""
    inbound, lane, server = ticket.inbound, ticket.lane, ticket.lane.server
    bridged = lane.kind.sets_window and inbound.api == "openai"
    bridge = ToOpenAI(inbound.model, usage=inbound.asks_usage) if bridged else None
    body = to_ollama(inbound.body, ticket.admitted.request.model) if bridged else dict(inbound.body)
    api: Api = "ollama_chat" if bridged else inbound.api
    if lane.kind.sets_window:
        # The window it was budgeted for, and the answer's limit: the client's, else the reserve.
        asked = inbound.asked_max_tokens
        limit = lane.budget.reserve if asked is None else asked
        body = with_window(body, lane.budget.window, limit, server.version)
    elif api == "openai" and inbound.streams:
        asked_options = body.get("stream_options")
        options = asked_options if isinstance(asked_options, dict) else {}
        body["stream_options"] = {**options, "include_usage": True}
    if bridged or ticket.transformed:
        body = with_messages(body, api, ticket.admitted.request)
    if api == "openai":
        return Way(inbound, f"{server.v1_url}/chat/completions", body, api)
    path = "chat" if api == "ollama_chat" else "generate"
    return Way(inbound, f"{server.root_url}/api/{path}", body, api, bridge)


def with_messages(body: dict[str, Any], api: Api, request: Request) -> dict[str, Any]:
    """`body` carrying the conversation of `request` (the governor replaced it), in `api`'s words."""
    if api == "ollama_generate":
        return {**body, "prompt": "\n\n".join(m.text for m in request.messages)}
    return {**body, "messages": chat_messages(request, OLLAMA if api == "ollama_chat" else OPENAI)}
