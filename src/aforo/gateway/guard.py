"""The gateway's door: what a web page in the user's browser must not get through, checked before any route.

A model server on 127.0.0.1 is reachable by every page the user's browser opens. Three ways in are
closed here, as Ollama closes them:
- a page of another site posting to 127.0.0.1: its `Origin` names that site, refused (403) unless allowed
  (`origins`), preflight or not;
- a site whose name the attacker points at 127.0.0.1 once the page is loaded (DNS rebinding): the page is
  then of the same origin as what it calls, but the request's `Host` is the attacker's name. While the
  gateway listens on a loopback address only local names are answered (`localhost`, `*.localhost`, the
  loopback addresses); on another address it asks for its key, which no page has;
- a body that is not JSON read as JSON: the types a page may post without asking first (`text/plain`,
  forms) are refused (415); JSON comes as `application/json` (the OpenAI SDK, `llm`, Ollama's clients) or
  with no type at all.
Starlette's TrustedHostMiddleware would answer a bare "Invalid host header" and cuts `[::1]:PORT` at its
first colon; its CORSMiddleware only adds headers, and still runs the request of a page it does not allow
(the browser hides the answer, after the upstream spent the work and the key). So the refusals are written
here, and CORSMiddleware, behind them, answers the preflights and marks the answers of the pages allowed.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from starlette.datastructures import Headers
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import ClientDisconnect
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from aforo.gateway.origins import ENV, Origins
from aforo.limits import clipped

# What a refusal quotes of a header the client chose: enough to recognise it.
_QUOTED_CHARS = 200
_BODILESS = frozenset({"GET", "HEAD", "OPTIONS"})


class Guard:
    """Refuses a foreign page, a rebound host name and a body that is not JSON; then the app, behind
    Starlette's CORSMiddleware for the pages allowed. `loopback`: the gateway listens on a loopback
    address, so a request names it by a local name."""

    def __init__(self, app: ASGIApp, origins: Origins, *, loopback: bool, exposed: tuple[str, ...]) -> None:
        self.origins, self.loopback = origins, loopback
        self.app = _Cors(
            app, origins, allow_methods=("GET", "POST"), allow_headers=("*",), expose_headers=exposed
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refused = self.refusal(scope["method"], Headers(scope=scope))
        if refused is not None:
            status, message = refused
            await JSONResponse(_shaped(scope["path"], message), status)(scope, receive, send)
            return
        try:
            await self.app(scope, receive, send)
        except ClientDisconnect:
            # The client hung up before its body was whole (or `serve_request_seconds` ran out and the
            # connection was closed): nobody is left to answer, and nothing went wrong here to print.
            return

    def refusal(self, method: str, headers: Headers) -> tuple[int, str] | None:
        """The status and the reason a request is refused, or None."""
        host = headers.get("host")
        if self.loopback and host is not None and not _local_name(host):
            return 403, (
                f"Host {_quoted(host)} is not a name of this gateway: it listens on a loopback address and "
                "answers requests for localhost or 127.0.0.1 only (a page that pointed its own site's name "
                "at 127.0.0.1, DNS rebinding, sends that name)"
            )
        origin = headers.get("origin")
        if origin is not None and not self.origins.allows(origin):
            return 403, (
                f"requests from the web page of {_quoted(origin)} are refused: a page may use aforo serve "
                f"only if it is served from this machine or allowed: --allow-origin ORIGIN (or {ENV})"
            )
        kind = headers.get("content-type")
        if method not in _BODILESS and kind is not None and _media_type(kind) != "application/json":
            return 415, (
                f"the body must be JSON, sent as Content-Type: application/json, not {_quoted(kind)} "
                "(with curl: --json, or -H 'Content-Type: application/json')"
            )
        return None


class _Cors(CORSMiddleware):
    """Starlette's CORS, asking `origins` which pages are allowed (the same patterns the guard checks)."""

    def __init__(self, app: ASGIApp, origins: Origins, **settings: Any) -> None:
        super().__init__(app, **settings)
        self.origins = origins

    def is_allowed_origin(self, origin: str) -> bool:
        return self.origins.allows(origin)


def _local_name(host: str) -> bool:
    """A `Host` header (name or address, with or without its port) that names this machine for sure:
    `localhost` and its subdomains (RFC 6761: never resolved elsewhere) or a loopback address."""
    name = host.strip().lower()
    if name.startswith("["):
        name = name[1:].partition("]")[0]
    elif name.count(":") == 1:
        name = name.partition(":")[0]
    name = name.rstrip(".")
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def _media_type(header: str) -> str:
    return header.partition(";")[0].strip().lower()


def _quoted(value: str) -> str:
    return repr(clipped(value, _QUOTED_CHARS))


def _shaped(path: str, message: str) -> dict[str, Any]:
    """The error as the client's own code reads it: OpenAI's object under /v1, Ollama's string elsewhere."""
    if path.startswith("/v1/"):
        return {"error": {"message": message, "type": "invalid_request_error", "param": None, "code": None}}
    return {"error": message}
