"""A pass-through HTTP proxy to llama-server that records what each chat request cost the server.

aforo talks to the proxy as to the server itself (detection, exact counts and chats all pass through
unchanged); for every POST to /v1/chat/completions the proxy keeps what kind of request it was and the
server's own `timings` of it: `prompt_n` (prompt tokens the server evaluated) and `cache_n` (prompt
tokens it took from its cache). The kind is told from the request alone, as the server would see it:
a `max_tokens: 1` request is aforo's truncation check ("verify"), one whose system prompt is the
compaction instruction is a summary ("summary"), any other is the conversation ("chat").

For tests it can also play a different server: `rewrite` changes each chat request before it goes on
(one that silently drops turns), and `hide_cache` removes the `prompt_tokens_details` llama-server
reports (a server that says nothing of its prompt cache); what it records is the server's own timings.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx

from aforo.context.summary_request import SUMMARY_ASK, SUMMARY_SYSTEM

# Hop-by-hop headers, and the framing this proxy redoes itself (it streams and closes).
_DROP = {"connection", "keep-alive", "transfer-encoding", "content-length", "content-encoding"}
_SUMMARY_START = SUMMARY_SYSTEM[:60]


@dataclass(frozen=True)
class Recorded:
    kind: str  # chat, verify or summary
    prompt_n: int  # prompt tokens the server evaluated
    cache_n: int  # prompt tokens it reused from its cache


def kind_of(body: dict[str, Any]) -> str:
    if body.get("max_tokens") == 1:
        return "verify"
    messages = body.get("messages") or []
    first = messages[0] if messages and isinstance(messages[0], dict) else {}
    last = messages[-1] if messages and isinstance(messages[-1], dict) else {}
    if first.get("role") == "system" and str(first.get("content", "")).startswith(_SUMMARY_START):
        return "summary"
    if SUMMARY_ASK in str(last.get("content", "")):  # asked as one more turn of the conversation
        return "summary"
    return "chat"


def _timings(payload: bytes) -> dict[str, Any]:
    """The last `timings` object in a response body (SSE lines or one JSON completion)."""
    found: dict[str, Any] = {}
    for line in payload.splitlines():
        text = line.removeprefix(b"data: ").strip()
        if not text.startswith(b"{") or b'"timings"' not in text:
            continue
        try:
            doc = json.loads(text)
        except ValueError:
            continue
        if isinstance(doc, dict) and isinstance(doc.get("timings"), dict):
            found = doc["timings"]
    return found


def _without_cache(chunks: Iterator[bytes]) -> Iterator[bytes]:
    """The response, line by line, without `usage.prompt_tokens_details` (`timings` stay, as recorded)."""
    pending = b""
    for chunk in chunks:
        *lines, pending = (pending + chunk).split(b"\n")
        for line in lines:
            yield _drop_details(line) + b"\n"
    if pending:
        yield _drop_details(pending)


def _drop_details(line: bytes) -> bytes:
    prefix = b"data: " if line.startswith(b"data: ") else b""
    if b'"prompt_tokens_details"' not in line:
        return line
    doc = json.loads(line.removeprefix(prefix))
    usage = doc.get("usage") if isinstance(doc, dict) else None
    if isinstance(usage, dict):  # streamed chunks before the last carry `"usage": null`
        usage.pop("prompt_tokens_details", None)
    return prefix + json.dumps(doc).encode()


class RecordingProxy:
    """`with RecordingProxy(upstream) as proxy:` point aforo at `proxy.url`; read `proxy.records`."""

    def __init__(
        self,
        upstream: str,
        *,
        rewrite: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
        hide_cache: bool = False,
    ) -> None:
        self.upstream = upstream.rstrip("/")
        self.rewrite = rewrite
        self.hide_cache = hide_cache
        self.records: list[Recorded] = []
        self._lock = threading.Lock()
        self._client = httpx.Client(timeout=httpx.Timeout(900.0, connect=10.0))
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"  # one exchange per connection: the body ends when it closes

            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                proxy.forward(self, b"")

            def do_POST(self) -> None:
                size = int(self.headers.get("content-length") or 0)
                proxy.forward(self, self.rfile.read(size))

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> RecordingProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._client.close()

    def take(self) -> list[Recorded]:
        """The records so far, and a fresh start."""
        with self._lock:
            taken, self.records = self.records, []
        return taken

    def forward(self, handler: BaseHTTPRequestHandler, body: bytes) -> None:
        headers = {k: v for k, v in handler.headers.items() if k.lower() not in _DROP | {"host"}}
        chat = handler.command == "POST" and handler.path.startswith("/v1/chat/completions")
        if chat and self.rewrite is not None:
            body = json.dumps(self.rewrite(json.loads(body))).encode()
        seen: list[bytes] = []
        request = self._client.build_request(
            handler.command, self.upstream + handler.path, content=body, headers=headers
        )
        response = self._client.send(request, stream=True)
        try:
            handler.send_response(response.status_code)
            for key, value in response.headers.items():
                if key.lower() not in _DROP:
                    handler.send_header(key, value)
            handler.end_headers()
            chunks = response.iter_bytes()  # decoded: the content-encoding header is not passed on
            for chunk in _without_cache(chunks) if chat and self.hide_cache else chunks:
                handler.wfile.write(chunk)
                handler.wfile.flush()
                if chat:
                    seen.append(chunk)
        finally:
            response.close()
        if chat and response.status_code == 200:
            timings = _timings(b"".join(seen))
            record = Recorded(
                kind_of(json.loads(body)), int(timings.get("prompt_n", 0)), int(timings.get("cache_n", 0))
            )
            with self._lock:
                self.records.append(record)
