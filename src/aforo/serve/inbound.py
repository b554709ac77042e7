"""What a client sends, read as aforo's canonical `Request`, and a governed conversation written back.

Three wire shapes come in: OpenAI's chat body (`/v1/chat/completions`), Ollama's `/api/chat` and its
`/api/generate` (a prompt and a system text). Each becomes one `Request` the governor can count and
admit. The client's own body is what goes upstream (every field it set, unknown ones too); only when
the governor replaced the conversation (`--compact`) are its messages written again, through the same
walk the providers use (`wire.chat`), so what was counted is what is sent.

The body is untrusted: a field of the wrong type is a `BadRequest` naming it, never a traceback.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from aforo.limits import SERVE_MODEL_CHARS
from aforo.messages import Message, Request, SystemPart, TextBlock, ToolResult, ToolSpec, ToolUse
from aforo.providers.ollama import OLLAMA
from aforo.wire.chat import chat_messages
from aforo.wire.openai_chat import OPENAI

Api = Literal["openai", "ollama_chat", "ollama_generate"]


class BadRequest(ValueError):
    """The client's body is not a request this API takes: the message says which field and why."""


@dataclass(frozen=True)
class Inbound:
    api: Api
    body: dict[str, Any]
    request: Request  # the canonical form the governor counts and admits

    @property
    def model(self) -> str:
        return self.request.model

    @property
    def asked_max_tokens(self) -> int | None:
        """The answer's limit the client set, if it set one."""
        return _limit(self.body, self.api)

    @property
    def streams(self) -> bool:
        # OpenAI streams only when asked; Ollama streams unless told not to.
        default = self.api != "openai"
        return bool(self.body.get("stream", default))


def read_inbound(api: Api, body: Any, max_tokens: int) -> Inbound:
    """The client's body as an `Inbound`; `max_tokens` is what the request reserves when it names none."""
    if not isinstance(body, dict):
        raise BadRequest("the body must be a JSON object")
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise BadRequest("'model' must name a model")
    if len(model) > SERVE_MODEL_CHARS.value:
        raise BadRequest(f"'model' has {len(model):,} characters, past {SERVE_MODEL_CHARS.describe()}")
    if api == "ollama_generate":
        system, messages = _generate(body)
        tools: tuple[ToolSpec, ...] = ()
    else:
        system, messages = _chat(body.get("messages"))
        tools = _tools(body.get("tools"))
    limit = _limit(body, api) or max_tokens
    request = Request(model, system, tools, tuple(messages), limit)
    return Inbound(api, body, request)


def with_messages(inbound: Inbound, request: Request) -> dict[str, Any]:
    """The client's body, carrying the conversation of `request` (the governor replaced it)."""
    body = dict(inbound.body)
    if inbound.api == "ollama_generate":
        body["prompt"] = "\n\n".join(m.text for m in request.messages)
        return body
    body["messages"] = chat_messages(request, OLLAMA if inbound.api == "ollama_chat" else OPENAI)
    return body


def _limit(body: dict[str, Any], api: Api) -> int | None:
    if api == "openai":
        value = body.get("max_completion_tokens", body.get("max_tokens"))
    else:
        options = body.get("options")
        value = options.get("num_predict") if isinstance(options, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _text(content: Any, where: str) -> str:
    """A message's content: a string, or a list of parts whose text parts count (images do not)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(p.get("text", "")) for p in content if isinstance(p, dict) and p.get("type") == "text"
        )
    raise BadRequest(f"{where}: 'content' must be a string or a list of parts")


def _generate(body: dict[str, Any]) -> tuple[tuple[SystemPart, ...], list[Message]]:
    prompt, system = body.get("prompt", ""), body.get("system", "")
    if not isinstance(prompt, str) or not isinstance(system, str):
        raise BadRequest("'prompt' and 'system' must be strings")
    return ((SystemPart(system),) if system else ()), ([Message.user(prompt)] if prompt else [])


def _chat(raw: Any) -> tuple[tuple[SystemPart, ...], list[Message]]:
    """The chat messages as canonical ones. A call without an id (Ollama's) gets a number, and a result
    that names no call answers the oldest call not yet answered."""
    if not isinstance(raw, list):
        raise BadRequest("'messages' must be a list")
    system: list[SystemPart] = []
    out: list[Message] = []
    numbered = 0
    pending: list[str] = []  # ids of the calls not answered yet, oldest first
    for i, entry in enumerate(raw):
        where = f"messages[{i}]"
        if not isinstance(entry, dict):
            raise BadRequest(f"{where} must be an object")
        role, text = entry.get("role"), _text(entry.get("content"), where)
        if role in ("system", "developer"):
            system.append(SystemPart(text))
        elif role == "user":
            out.append(Message.user(text))
        elif role == "assistant":
            blocks: list[TextBlock | ToolUse] = [TextBlock(text)] if text else []
            for call in entry.get("tool_calls") or []:
                numbered += 1
                use = _call(call, f"call_{numbered}", where)
                pending.append(use.id)
                blocks.append(use)
            out.append(Message("assistant", tuple(blocks)))
        elif role == "tool":
            call_id = entry.get("tool_call_id")
            if isinstance(call_id, str):
                pending = [p for p in pending if p != call_id]
            else:
                call_id = pending.pop(0) if pending else f"call_{i}"
            result = ToolResult(call_id, text)
            if out and out[-1].role == "user" and out[-1].tool_results and not out[-1].text:
                out[-1] = Message("user", (*out[-1].content, result))
            else:
                out.append(Message("user", (result,)))
        else:
            raise BadRequest(f"{where}: unknown role {role!r}")
    return tuple(system), out


def _call(call: Any, fallback_id: str, where: str) -> ToolUse:
    function = call.get("function") if isinstance(call, dict) else None
    if not isinstance(function, dict) or not isinstance(function.get("name"), str):
        raise BadRequest(f"{where}: every tool call needs a function with a name")
    arguments = function.get("arguments", {})
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except ValueError:
            arguments = {"_raw": arguments}  # counted as sent; a call the model wrote badly is data
    if not isinstance(arguments, dict):
        arguments = {"_raw": arguments}
    call_id = call.get("id")
    return ToolUse(
        call_id if isinstance(call_id, str) and call_id else fallback_id, function["name"], arguments
    )


def _tools(raw: Any) -> tuple[ToolSpec, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise BadRequest("'tools' must be a list")
    specs = []
    for i, tool in enumerate(raw):
        function = tool.get("function") if isinstance(tool, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            raise BadRequest(f"tools[{i}] needs a function with a name")
        schema = function.get("parameters")
        specs.append(
            ToolSpec(
                function["name"],
                str(function.get("description", "")),
                schema if isinstance(schema, dict) else {},
            )
        )
    return tuple(specs)
