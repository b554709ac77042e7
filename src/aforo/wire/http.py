"""The HTTP boundary: httpx failures and error answers become aforo's errors, once.

Translation follows httpx's own `map_httpcore_exceptions`: most specific first, `raise ... from exc`
at the call site, and a message that tells the user what to do next. Besides the chat stream there are
two kinds of request: discovery (`get_json_quiet`) asks cheap questions whose failure only means "not
this kind of server", so every failure becomes None; calls whose answer we need (`post_json`: counting,
probing) raise ProviderError subclasses, so callers can fall back on them.
"""

from __future__ import annotations

import json
from typing import Any

import httpx

from aforo.errors import (
    ConfigError,
    ConnectError,
    HTTPStatusError,
    ProtocolError,
    ProviderError,
    ProviderTimeout,
)
from aforo.wire.overflow_dialects import map_overflow

START_A_SERVER = (
    "start one (ollama serve / llama-server -m MODEL …), pass --base-url, "
    "or run `aforo --local` to use aforo's own engine (built on first use)"
)

# Discovery must never make start-up slow: a server that takes longer than this to say what it is
# is treated as not saying it.
DISCOVERY_TIMEOUT = 2.0


def normalize_base_url(url: str) -> tuple[str, str]:
    """`http://h:p`, `http://h:p/`, `http://h:p/v1` and `http://h:p/v1/` -> (root, root + "/v1")."""
    url = url.strip()
    if not url:
        raise ConfigError("the base URL is empty: pass --base-url http://HOST:PORT/v1")
    if "://" not in url:
        url = f"http://{url}"
    root = url.rstrip("/").removesuffix("/v1").rstrip("/")
    return root, f"{root}/v1"


def server_message(body: str) -> str:
    """The human part of an error body in any of the usual shapes, else the body itself (cut)."""
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        return " ".join(body.split())[:300]
    if isinstance(data, dict):
        for key in ("error", "message", "detail"):
            value = data.get(key)
            if isinstance(value, dict) and isinstance(value.get("message"), str):
                return str(value["message"])
            if isinstance(value, str):
                return value
    return body[:300]


def translate_transport(exc: httpx.TransportError, url: str, read_timeout: float) -> ProviderError:
    """An httpx transport failure as our error; the caller raises it `from exc`."""
    if isinstance(exc, httpx.ConnectTimeout):
        return ProviderTimeout(f"no answer from {url} while connecting — is the server up? {START_A_SERVER}")
    if isinstance(exc, httpx.TimeoutException):
        return ProviderTimeout(
            f"the server at {url} stopped answering for {read_timeout:g}s — it may be overloaded or still "
            "loading the model; try again or raise the timeout"
        )
    if isinstance(exc, httpx.ConnectError):
        return ConnectError(f"no server at {url} — {START_A_SERVER}")
    if isinstance(exc, httpx.RemoteProtocolError | httpx.ReadError | httpx.WriteError):
        return ProtocolError(f"the connection to {url} broke mid-answer ({exc}) — did the server crash?")
    return ProviderError(f"could not talk to {url}: {exc}")


def status_error(status: int, body: str, *, url: str, model: str) -> ProviderError:
    """An HTTP error answer as our error: an overflow in any dialect first, else the status explained."""
    overflow = map_overflow(status, body)
    if overflow is not None:
        return overflow
    said = server_message(body) or "(empty body)"
    if status == 404:
        models = url.removesuffix("/chat/completions") + "/models"
        hint = (
            f"is the model {model!r} served there? List models with `curl {models}` "
            "(or `ollama list`), or check that --base-url ends in /v1"
        )
    elif status in (401, 403):
        hint = "the server wants an API key: set AFORO_API_KEY (or OPENAI_API_KEY)"
    elif status == 429:
        hint = "the server is rate limiting; wait and try again"
    elif status >= 500:
        hint = "the server failed; check its log"
    else:
        hint = "the server rejected the request"
    return HTTPStatusError(f"HTTP {status} from {url}: {said} — {hint}", status, body)


def get_json_quiet(client: httpx.Client, url: str, timeout: float = DISCOVERY_TIMEOUT) -> Any | None:
    """GET a JSON document; any failure (refused, timeout, non-2xx, not JSON) is None."""
    try:
        response = client.get(url, timeout=timeout)
    except httpx.HTTPError:
        return None
    if response.status_code >= 300:
        return None
    try:
        return response.json()
    except ValueError:
        return None


def post_json(
    client: httpx.Client, url: str, body: dict[str, Any], timeout: float, *, model: str = ""
) -> Any:
    """POST a JSON body and return the decoded answer, raising ProviderError subclasses on failure
    (an overflow in any server's dialect as ContextOverflowError)."""
    try:
        response = client.post(url, json=body, timeout=timeout)
    except httpx.TransportError as exc:
        raise translate_transport(exc, url, timeout) from exc
    if response.status_code >= 300:
        raise status_error(response.status_code, response.text, url=url, model=model)
    try:
        return response.json()
    except ValueError as exc:
        raise ProtocolError(f"{url} answered with a body that is not JSON: {response.text[:200]!r}") from exc
