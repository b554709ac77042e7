"""Which failures of a chat request are worth a retry, as data (aider's `ExInfo` idea), not an `if`
chain: nothing listening yet, a timeout, 429 and 5xx. An overflow is never retried: the same prompt
will not fit the second time either. A server that says when to come back (`Retry-After`) is waited
for, up to the `retry_after` limit; asking for longer ends the retries, and the error says when to retry.
"""

from __future__ import annotations

from collections.abc import Callable, Container
from dataclasses import dataclass

import tenacity

from aforo.errors import ConnectError, HTTPStatusError, ProviderError, ProviderTimeout
from aforo.limits import RETRY_AFTER


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


def retry_after(exc: BaseException | None) -> float | None:
    """The wait the server asked for with this error, if it did."""
    return getattr(exc, "retry_after", None)


def is_retryable(exc: BaseException, policy: tuple[RetryRule, ...] = RETRY_POLICY) -> bool:
    """A failure of a kind that may pass, unless the server asked for a longer wait than we give."""
    wait = retry_after(exc)
    if wait is not None and wait > RETRY_AFTER.value:
        return False
    return any(rule.matches(exc) for rule in policy)


def wait_before_retry(state: tenacity.RetryCallState) -> float:
    """The server's Retry-After when it gave one (already within the limit), else an exponential wait."""
    wait = retry_after(state.outcome.exception() if state.outcome is not None else None)
    if wait is not None:
        return wait
    return float(tenacity.wait_exponential(multiplier=RETRY_WAIT, max=4)(state))


def retrying(retries: int, should_retry: Callable[[BaseException], bool] = is_retryable) -> tenacity.Retrying:
    """`retries` extra attempts after the first; the last error is raised as itself, not wrapped."""
    return tenacity.Retrying(
        stop=tenacity.stop_after_attempt(max(0, retries) + 1),
        wait=wait_before_retry,
        retry=tenacity.retry_if_exception(should_retry),
        reraise=True,
    )
