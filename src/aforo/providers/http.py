"""The HTTP boundary shared by the adapters: httpx errors become ours, once, and retries are data.

Translation follows httpx's own `map_httpcore_exceptions`: most specific first, `raise ... from exc`
at the call site, and a message that tells the user what to do next. Which failures are worth a retry
is a table (aider's `ExInfo` idea), not an `if` chain: nothing listening yet, a timeout, 429 and 5xx.
An overflow is never retried: the same prompt will not fit the second time either.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Container
from dataclasses import dataclass

import httpx
import tenacity

from aforo.errors import ConnectError, HTTPStatusError, ProtocolError, ProviderError, ProviderTimeout
from aforo.providers.overflow_dialects import map_overflow

START_A_SERVER = (
    "start one (ollama serve / llama-server -m MODEL …), pass --base-url, "
    "or run `aforo --local` to use aforo's own engine (built on first use)"
)


@dataclass(frozen=True)
class RetryRule:
    """One kind of failure that may pass if we simply try again."""

    kind: type[ProviderError]
    why: str
    # For HTTPStatusError: the statuses that retry (None: every instance of `kind` retries).
    statuses: Container[int] | None = None

    def matches(self, exc: BaseException) -> bool:
        if not isinstance(exc, self.kind):
            return False
        return self.statuses is None or getattr(exc, "status", None) in self.statuses


RETRY_POLICY: tuple[RetryRule, ...] = (
    RetryRule(ConnectError, "the server may still be starting"),
    RetryRule(ProviderTimeout, "a busy server may answer next time"),
    RetryRule(
        HTTPStatusError, "rate limited or a passing server failure", frozenset({429, *range(500, 600)})
    ),
)

# Base of the exponential wait between attempts, in seconds (0.25, 0.5, 1 … capped at 4).
RETRY_WAIT = 0.25


def is_retryable(exc: BaseException, policy: tuple[RetryRule, ...] = RETRY_POLICY) -> bool:
    return any(rule.matches(exc) for rule in policy)


def retrying(retries: int, should_retry: Callable[[BaseException], bool] = is_retryable) -> tenacity.Retrying:
    """`retries` extra attempts after the first; the last error is raised as itself, not wrapped."""
    return tenacity.Retrying(
        stop=tenacity.stop_after_attempt(max(0, retries) + 1),
        wait=tenacity.wait_exponential(multiplier=RETRY_WAIT, max=4),
        retry=tenacity.retry_if_exception(should_retry),
        reraise=True,
    )


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
