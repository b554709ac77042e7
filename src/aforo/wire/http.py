"""The HTTP boundary: httpx failures and error answers become aforo's errors, once.

Translation follows httpx's own `map_httpcore_exceptions`: most specific first, `raise ... from exc`
at the call site, and a message that tells the user what to do next. Besides the chat stream there are
two kinds of request: discovery (`get_json_quiet`) asks cheap questions whose failure only means "not
this kind of server", so every failure becomes None; calls whose answer we need (`post_json`: counting,
probing) raise ProviderError subclasses, so callers can fall back on them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx

from aforo import safejson
from aforo.errors import (
    ConfigError,
    ConnectError,
    HTTPStatusError,
    LimitExceeded,
    ProtocolError,
    ProviderError,
    ProviderTimeout,
)
from aforo.limits import READ_TIMEOUT, RETRY_AFTER
from aforo.wire import statuses
from aforo.wire.body import JSON_HEADERS, encode_body
from aforo.wire.bounded import AnswerBudget, read_body
from aforo.wire.overflow_wordings import map_overflow

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
        data = safejson.loads(body, "an error body")
    except (ValueError, LimitExceeded):
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
            f"loading the model; try again, or raise the {READ_TIMEOUT.name} limit "
            f"({READ_TIMEOUT.setting})"
        )
    if isinstance(exc, httpx.ConnectError):
        return ConnectError(f"no server at {url} — {START_A_SERVER}")
    if isinstance(exc, httpx.RemoteProtocolError | httpx.ReadError | httpx.WriteError):
        return ProtocolError(f"the connection to {url} broke mid-answer ({exc}) — did the server crash?")
    return ProviderError(f"could not talk to {url}: {exc}")


def answer_failure(
    exc: httpx.TransportError, url: str, budget: AnswerBudget, read_timeout: float
) -> ProviderError:
    """A transport failure while an answer streams: past the answer's deadline, that deadline is what
    ended it (a read timeout then is only its symptom); otherwise as `translate_transport`."""
    if isinstance(exc, httpx.TimeoutException) and budget.expired():
        return budget.timeout_error()
    return translate_transport(exc, url, read_timeout)


def status_error(
    status: int, body: str, *, url: str, model: str, headers: Mapping[str, str] | None = None
) -> ProviderError:
    """An HTTP answer that is not a success, as our error: an overflow in any dialect first, else the
    status explained (statuses.py), with where a redirect points and when a Retry-After says to retry."""
    overflow = map_overflow(status, body)
    if overflow is not None:
        return overflow
    headers = headers or {}
    said = server_message(body) or "(empty body)"
    if 300 <= status < 400:
        advice = statuses.redirect_hint(headers.get("location"))
    else:
        models = url.removesuffix("/chat/completions").removesuffix("/api/chat") + "/models"
        advice = statuses.hint(status, model=model, models=models)
    wait = (
        statuses.retry_after_seconds(headers.get("retry-after")) if status == 429 or status >= 500 else None
    )
    if wait is not None:
        cap = float(RETRY_AFTER.value)
        advice += f"; it asks to be retried in {wait:g} s"
        if wait > cap:
            advice += (
                f", longer than aforo waits (the {RETRY_AFTER.name} limit, {cap:g} s): "
                f"try again after {statuses.when(wait)}"
            )
    message = f"HTTP {status} ({statuses.phrase(status)}) from {url}: {said} — {advice}"
    return HTTPStatusError(message, status, body, retry_after=wait)


def reach(client: httpx.Client, url: str, timeout: float | None = None) -> None:
    """GET `url` for whether something answers there, reading none of the body (a server's whole body,
    a gzip bomb perhaps, is not needed to know that); httpx's errors are the caller's to judge."""
    with client.stream("GET", url, timeout=httpx.USE_CLIENT_DEFAULT if timeout is None else timeout):
        pass


def get_json_quiet(client: httpx.Client, url: str, timeout: float = DISCOVERY_TIMEOUT) -> Any | None:
    """GET a JSON document; any failure (refused, timeout, non-2xx, not JSON, badly encoded, too big)
    is None."""
    try:
        with client.stream("GET", url, timeout=timeout) as response:
            if response.status_code >= 300:
                return None
            return safejson.server_json(read_body(response, url), f"the answer of {url}")
    except (httpx.HTTPError, ValueError, LimitExceeded, ProtocolError):
        return None


def post_json(
    client: httpx.Client, url: str, body: dict[str, Any], timeout: float, *, model: str = ""
) -> Any:
    """POST a JSON body and return the decoded answer, raising ProviderError subclasses on failure
    (an overflow in any server's dialect as ContextOverflowError, a limit as ServerLimitExceeded)."""
    try:
        with client.stream(
            "POST", url, content=encode_body(body), headers=JSON_HEADERS, timeout=timeout
        ) as response:
            text = read_body(response, url)
            status, headers = response.status_code, response.headers
    except httpx.TransportError as exc:
        raise translate_transport(exc, url, timeout) from exc
    if status >= 300:
        raise status_error(status, text, url=url, model=model, headers=headers)
    try:
        return safejson.server_json(text, f"the answer of {url}")
    except ValueError as exc:
        raise ProtocolError(f"{url} answered with a body that is not JSON: {text[:200]!r}") from exc
