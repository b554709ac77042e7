"""What each HTTP status from a model server means for the user, as data: one entry per status.

A status with no entry is explained by its class (4xx: about the request, 5xx: the server failed), and
every message names the status with its standard reason phrase, so no two statuses read alike.
Redirects are never followed: a server does not decide where the conversation is sent, `--base-url`
does; the message says where the server pointed, so the user can choose to go there.
"""

from __future__ import annotations

import email.utils
import http
import math
import time
from collections.abc import Mapping

STATUS_HINTS: Mapping[int, str] = {
    400: "the server rejected the request as malformed; it may not support tools or an option sent "
    "(check its log)",
    401: "the server wants an API key: set AFORO_API_KEY (or OPENAI_API_KEY)",
    402: "the service wants payment or quota on the account: this is not a local server's answer",
    403: "the server refused the API key or its access to this model: check AFORO_API_KEY",
    404: "is the model {model!r} served there? List models with `curl {models}` (or `ollama list`), or "
    "check that --base-url ends in /v1",
    405: "the server does not take POST at this path: check that --base-url ends in /v1",
    406: "the server cannot send what aforo accepts (JSON or an event stream): check --base-url",
    408: "the server gave up waiting for the request; try again",
    409: "the server reported a conflict with its current state (a model being loaded?); try again",
    410: "the server no longer offers this endpoint or model: check --base-url and --model",
    411: "the server wants a Content-Length a proxy may have removed: check proxies between you",
    413: "the request is larger than the server (or a proxy) accepts: raise its body limit, or use a "
    "smaller --context-window",
    414: "the URL is too long for the server: check --base-url",
    415: "the server does not take JSON at this path: check that --base-url is an OpenAI-compatible /v1",
    422: "the server could not use the request's content (an option, a tool schema or the model name)",
    425: "the server will not process the request yet; try again",
    428: "the server wants a conditional request, which a chat API never does: check --base-url",
    429: "the server is rate limiting: wait and try again",
    431: "the request's headers are too large for the server: check the API key and proxies",
    451: "the server refuses to answer for legal reasons",
    500: "the server failed: check its log",
    501: "the server does not implement chat completions here: check --base-url and the server's version",
    502: "a proxy in front of the model server got no valid answer from it: is the model server up?",
    503: "the server is unavailable (loading the model, or overloaded): try again shortly",
    504: "a proxy in front of the model server gave up waiting for it: the model may still be loading; try "
    "again, or raise the proxy's timeout",
    505: "the server does not speak this HTTP version: check --base-url",
    507: "the server ran out of storage: check its disk",
    511: "a network login page answered instead of the server: log in to the network, or check proxies",
}
CLASS_HINTS: Mapping[int, str] = {
    1: "the server sent an interim answer and nothing after it",
    2: "the server answered with success but no content aforo can use",
    3: "the server redirected the request",
    4: "the server rejected the request",
    5: "the server failed: check its log",
}
REDIRECT = "aforo does not follow redirects (your conversation goes only where --base-url says)"


def phrase(status: int) -> str:
    try:
        return http.HTTPStatus(status).phrase
    except ValueError:
        return "non-standard status"


def hint(status: int, *, model: str = "", models: str = "") -> str:
    """What `status` means for the user; `model` and `models` (the URL that lists them) fill in 404's."""
    text = STATUS_HINTS.get(status) or CLASS_HINTS.get(status // 100, "the server sent an unknown status")
    return text.format(model=model, models=models)


def redirect_hint(location: str | None) -> str:
    if not location:
        return f"{REDIRECT}; it gave no Location"
    return f"{REDIRECT}; it points at {location[:300]!r}: if that is the server, pass it as --base-url"


def retry_after_seconds(value: str | None, now: float | None = None) -> float | None:
    """A Retry-After header in seconds from now: delta-seconds or an HTTP date; None when absent or
    unreadable (a date in the past is 0)."""
    if value is None:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        moment = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if moment.tzinfo is None:
        return None
    seconds = moment.timestamp() - (time.time() if now is None else now)
    return max(0.0, seconds) if math.isfinite(seconds) else None


def when(seconds: float, now: float | None = None) -> str:
    """`seconds` from now as a clock time the user can act on, e.g. `14:05:10 UTC`."""
    moment = (time.time() if now is None else now) + seconds
    return time.strftime("%H:%M:%S UTC", time.gmtime(moment))
