"""What a client sends, read as aforo's canonical `Request`.

Three wire shapes come in: OpenAI's chat body (`/v1/chat/completions`), Ollama's `/api/chat` and its
`/api/generate` (a prompt and a system text). Each becomes one `Request` the governor can count and
admit. The client's own body is what goes upstream (every field it set, unknown ones too), unless the
governor replaced the conversation (`upstream_call.with_messages`).

The body is untrusted: a field of the wrong type is a `BadRequest` naming it, never a traceback.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from starlette.requests import Request as HttpRequest

from aforo.errors import LimitExceeded
from aforo.limits import SERVE_MODEL_CHARS, SERVE_REQUEST_BYTES
from aforo.messages import Message, Request, SystemPart, TextBlock, ToolResult, ToolSpec, ToolUse

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
    def asks_usage(self) -> bool:
        """Whether an OpenAI stream's client asked for the usage chunk (`stream_options.include_usage`)."""
        options = self.body.get("stream_options")
        return isinstance(options, dict) and options.get("include_usage") is True

    @property
    def streams(self) -> bool:
        # OpenAI streams only when asked; Ollama streams unless told not to.
        default = self.api != "openai"
        return bool(self.body.get("stream", default))


async def read_request(request: HttpRequest) -> bytes:
    """The client's body, refused past `serve_request_bytes` before more of it is read."""
    most = int(SERVE_REQUEST_BYTES.value)
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > most:
            raise LimitExceeded(SERVE_REQUEST_BYTES, "the request body")
        chunks.append(chunk)
    return b"".join(chunks)


def read_inbound(api: Api, body: Any, max_tokens: int) -> Inbound:
    """The client's body as an `Inbound`; `max_tokens` is what the request reserves when it names none."""
    if not isinstance(body, dict):
        raise BadRequest("the body must be a JSON object")
    _check_unicode(body)
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise BadRequest("'model' must name a model")
    if len(model) > SERVE_MODEL_CHARS.value:
        raise BadRequest(f"'model' has {len(model):,} characters, past {SERVE_MODEL_CHARS.describe()}")
    generate = api == "ollama_generate"
    system, messages = _chat(_generate(body) if generate else body.get("messages"))
    tools = () if generate else _tools(body.get("tools"))
    limit = _limit(body, api) or max_tokens
    request = Request(model, system, tools, tuple(messages), limit)
    return Inbound(api, body, request)


def _check_unicode(body: dict[str, Any]) -> None:
    """JSON may write a lone surrogate (`"\\ud800"`), which is no character: no server takes it and
    it cannot be sent on as UTF-8. Found here, where the client can be told which field holds it."""
    stack: list[tuple[str, Any]] = [(key, value) for key, value in body.items()]
    while stack:
        where, value = stack.pop()
        for text in (where, value) if isinstance(value, str) else (where,):
            try:
                text.encode("utf-8")
            except UnicodeEncodeError as exc:
                char = ascii(text[exc.start])[1:-1]
                raise BadRequest(
                    f"{ascii(where)[1:-1]}: a lone surrogate ({char}) at character {exc.start} is not text "
                    "(a surrogate stands only in a pair); send the character itself, as UTF-8"
                ) from None
        if isinstance(value, dict):
            stack += [(f"{where}.{key}", item) for key, item in value.items()]
        elif isinstance(value, list):
            stack += [(f"{where}[{i}]", item) for i, item in enumerate(value)]


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


def _generate(body: dict[str, Any]) -> list[dict[str, str]]:
    """Ollama's `/api/generate` body as the chat it is: its system text, then its prompt."""
    prompt, system = body.get("prompt", ""), body.get("system", "")
    if not isinstance(prompt, str) or not isinstance(system, str):
        raise BadRequest("'prompt' and 'system' must be strings")
    chat = [{"role": "system", "content": system}] if system else []
    return chat + ([{"role": "user", "content": prompt}] if prompt else [])


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
