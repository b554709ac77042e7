"""Exact token counters, best first: the server's own tokenizer with the chat template applied, then a
local Hugging Face `tokenizer.json`; without either the governor estimates (SPEC §2.3).

Server counters send exactly the body the OpenAI adapter sends (`openai_chat.chat_body`), so the count is
the `prompt_tokens` the server will report. Each count is one round-trip in which the server only
tokenizes (no inference); counts are cached per identical request, so admission, `/context` and telemetry
asking about the same request cost one call. A server cannot count a suffix of a templated conversation
exactly (the template's framing of the boundary and the generation prompt belong to the whole), so the
new part is not counted alone there; the local counter, which frames each message itself, caches per
message and counts only the new ones.

A counter that fails at run time raises ProviderError subclasses: the caller falls back to the estimate
and warns, it never stops the run.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import OrderedDict
from pathlib import Path
from typing import Any

import httpx

from aforo.errors import (
    ConfigError,
    ConfigLimitExceeded,
    HTTPStatusError,
    ProtocolError,
    ProviderError,
    ToolError,
)
from aforo.limits import TOKENIZER_BYTES
from aforo.messages import Message, Request, TextBlock, ToolResult, ToolUse
from aforo.protocols import TokenCounter
from aforo.servers.kind import CounterFactory
from aforo.tools.workspace import open_regular
from aforo.wire.http import post_json
from aforo.wire.openai_chat import chat_body

COUNT_TIMEOUT = 30.0
CACHE_SIZE = 256


def _messages_request(model: str, messages: tuple[Message, ...] | list[Message]) -> Request:
    return Request(model=model, system=(), tools=(), messages=tuple(messages), max_tokens=1)


class _ServerCounter:
    """Shared by the server counters: the per-request cache and the messages-only request."""

    name = "server"
    exact = True

    def __init__(self, client: httpx.Client, root_url: str, model: str) -> None:
        self.client = client
        self.root_url = root_url
        self.model = model
        self._cache: OrderedDict[str, int] = OrderedDict()

    def count(self, request: Request) -> int:
        body = chat_body(request, stream=False)
        # max_tokens and stream do not change the prompt: leave them out of the key.
        keyed = {k: body[k] for k in ("model", "messages", "tools") if k in body}
        key = hashlib.sha256(json.dumps(keyed, sort_keys=True).encode()).hexdigest()
        hit = self._cache.get(key)
        if hit is not None:
            self._cache.move_to_end(key)
            return hit
        value = self._count_body(body)
        self._cache[key] = value
        if len(self._cache) > CACHE_SIZE:
            self._cache.popitem(last=False)
        return value

    def count_messages(self, messages: tuple[Message, ...] | list[Message]) -> int:
        return self.count(_messages_request(self.model, messages))

    def _count_body(self, body: dict[str, Any]) -> int:
        raise NotImplementedError

    def _post(self, path: str, body: dict[str, Any]) -> Any:
        return post_json(self.client, f"{self.root_url}{path}", body, COUNT_TIMEOUT)


def _int_field(doc: Any, key: str, url: str) -> int:
    value = doc.get(key) if isinstance(doc, dict) else None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ProtocolError(f"{url} answered without an integer {key!r}: {str(doc)[:200]}")
    return value


class LlamaCppCounter(_ServerCounter):
    """llama-server: `/v1/chat/completions/input_tokens`, else `/apply-template` + `/tokenize`."""

    name = "llama.cpp"

    def __init__(self, client: httpx.Client, root_url: str, model: str) -> None:
        super().__init__(client, root_url, model)
        self._input_tokens = True  # until the server says it does not have that endpoint

    def _count_body(self, body: dict[str, Any]) -> int:
        if self._input_tokens:
            try:
                doc = self._post("/v1/chat/completions/input_tokens", body)
                return _int_field(doc, "input_tokens", "/v1/chat/completions/input_tokens")
            except HTTPStatusError as exc:
                # Older builds: no such route. Remember it, so each count is not two requests.
                if exc.status not in (404, 405, 501):
                    raise
                self._input_tokens = False
        prompt = self._post("/apply-template", body)
        if not isinstance(prompt, dict) or not isinstance(prompt.get("prompt"), str):
            raise ProtocolError(f"/apply-template answered without a 'prompt': {str(prompt)[:200]}")
        # add_special: the BOS the server adds to every prompt is part of prompt_tokens.
        doc = self._post(
            "/tokenize", {"content": prompt["prompt"], "add_special": True, "parse_special": True}
        )
        tokens = doc.get("tokens") if isinstance(doc, dict) else None
        if not isinstance(tokens, list):
            raise ProtocolError(f"/tokenize answered without 'tokens': {str(doc)[:200]}")
        return len(tokens)


class VllmCounter(_ServerCounter):
    """vLLM: `POST /tokenize` with messages (+ tools) applies the chat template and returns `count`."""

    name = "vllm"

    def _count_body(self, body: dict[str, Any]) -> int:
        payload: dict[str, Any] = {k: body[k] for k in ("model", "messages", "tools") if k in body}
        return _int_field(self._post("/tokenize", payload), "count", "/tokenize")


class TgiCounter(_ServerCounter):
    """TGI: `POST /chat_tokenize` takes a chat request and returns its templated tokens."""

    name = "tgi"

    def _count_body(self, body: dict[str, Any]) -> int:
        doc = self._post("/chat_tokenize", body)
        tokens = doc.get("tokenize_response") if isinstance(doc, dict) else doc
        if not isinstance(tokens, list):
            raise ProtocolError(f"/chat_tokenize answered without 'tokenize_response': {str(doc)[:200]}")
        return len(tokens)


class TokenizerJsonCounter:
    """A local Hugging Face `tokenizer.json`, with a ChatML framing standing in for the chat template.

    `exact` is True because the text — system prompt, tools, messages, tool results, which is nearly all
    of a coding conversation — is tokenized by the model's own tokenizer. Only the framing is ChatML's
    (`<|im_start|>role ... <|im_end|>`, Qwen-style `<tool_call>`): exact for ChatML models, and a few
    tokens per message off for other templates — a bounded error, unlike the estimate's 0.2x-1.5x.
    Each message is framed on its own, so counts are cached per message and a turn tokenizes only the
    new ones.
    """

    name = "tokenizer.json"
    exact = True

    def __init__(self, path: str | Path) -> None:
        try:
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise ConfigError(
                "--tokenizer needs the optional 'tokenizers' library: pip install 'aforo[tokenizers]'"
            ) from exc
        self.path = Path(path)
        text = read_tokenizer_json(self.path)
        try:
            self._tokenizer = Tokenizer.from_str(text)
        except Exception as exc:  # the library raises a bare Exception for malformed files
            raise ConfigError(f"--tokenizer {self.path} is not a valid tokenizer.json: {exc}") from exc
        self._messages: dict[int, tuple[Message, int]] = {}
        self._heads: dict[str, int] = {}
        self._tail = self._tokens("<|im_start|>assistant\n")

    def _tokens(self, text: str) -> int:
        return len(self._tokenizer.encode(text, add_special_tokens=False).ids)

    def _head(self, request: Request) -> int:
        parts = [request.system_text] if request.system_text else []
        if request.tools:
            specs = "\n".join(json.dumps(t.to_dict(), ensure_ascii=False) for t in request.tools)
            parts.append(f"# Tools\n\n<tools>\n{specs}\n</tools>")
        if not parts:
            return 0
        body = "\n\n".join(parts)
        text = f"<|im_start|>system\n{body}<|im_end|>\n"
        if text not in self._heads:
            if len(self._heads) > 16:
                self._heads.clear()
            self._heads[text] = self._tokens(text)
        return self._heads[text]

    def _message(self, message: Message) -> int:
        hit = self._messages.get(id(message))
        if hit is not None and hit[0] is message:
            return hit[1]
        value = self._tokens(render_chatml(message))
        if len(self._messages) > 8 * CACHE_SIZE:
            self._messages.clear()
        self._messages[id(message)] = (message, value)
        return value

    def count(self, request: Request) -> int:
        return self._head(request) + self.count_messages(request.messages)

    def count_messages(self, messages: tuple[Message, ...] | list[Message]) -> int:
        return sum(self._message(m) for m in messages) + self._tail


def read_tokenizer_json(path: Path) -> str:
    """The text of a tokenizer.json, read the way the tools read a workspace's file (a workspace's
    `.aforo.toml` may name one): a regular file only, never a FIFO or a device, and at most
    `tokenizer_bytes` of it, checked before it is read whole."""
    if not os.path.lexists(path):
        raise ConfigError(f"--tokenizer {path}: no such file (expected a Hugging Face tokenizer.json)")
    most = int(TOKENIZER_BYTES.value)
    try:
        # resolve(): a symlink the user's own path goes through is followed; the file itself is opened
        # without following one (open_regular), so it cannot be swapped for one in between.
        with open_regular(path.resolve(), str(path)) as fh:
            size = os.fstat(fh.fileno()).st_size
            raw = fh.read(most + 1) if size <= most else b""
    except ToolError as exc:
        raise ConfigError(f"--tokenizer {path} cannot be used: {exc}") from exc
    except OSError as exc:
        raise ConfigError(f"--tokenizer {path} cannot be read ({exc.strerror or exc})") from exc
    if size > most or len(raw) > most:
        raise ConfigLimitExceeded(TOKENIZER_BYTES, f"--tokenizer {path} is {max(size, len(raw)):,} bytes")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"--tokenizer {path} is not a valid tokenizer.json: not UTF-8 ({exc})") from exc


def render_chatml(message: Message) -> str:
    """One canonical message in ChatML, tool calls and results the way Qwen's template writes them."""
    out: list[str] = []
    text: list[str] = []
    for block in message.content:
        if isinstance(block, TextBlock):
            text.append(block.text)
        elif isinstance(block, ToolUse):
            call = json.dumps({"name": block.name, "arguments": block.input}, ensure_ascii=False)
            text.append(f"<tool_call>\n{call}\n</tool_call>")
        elif isinstance(block, ToolResult):
            out.append(f"<|im_start|>user\n<tool_response>\n{block.content}\n</tool_response><|im_end|>\n")
    if text:
        joined = "\n".join(text)
        out.append(f"<|im_start|>{message.role}\n{joined}<|im_end|>\n")
    return "".join(out)


def make_counter(
    server_counter: CounterFactory | None,
    client: httpx.Client,
    root_url: str,
    model: str,
    tokenizer_path: str | Path | None,
) -> TokenCounter | None:
    """The best exact counter that works now: the server's (checked with one tiny count), else the local
    tokenizer.json; None when neither (the governor then estimates). A bad `tokenizer_path` is a
    ConfigError even when the server's counter wins: a flag the user gave is never silently ignored."""
    local = TokenizerJsonCounter(tokenizer_path) if tokenizer_path else None
    if server_counter is not None:
        counter = server_counter(client, root_url, model)
        try:
            counter.count_messages([Message.user("hi")])
            return counter
        except ProviderError:
            pass  # an old or restricted server: the local counter, if any, is still exact
    return local
