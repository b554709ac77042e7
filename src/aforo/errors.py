"""aforo's exception tree. Third-party errors are translated once, at the boundary, into these.

AforoError
├── ConfigError            bad configuration or flags (exit 2)
├── ProviderError          the model server failed; `retryable` says whether trying again may help
│   ├── ConnectError       nothing listens at the base URL
│   ├── ProviderTimeout    the server did not answer in time
│   ├── HTTPStatusError    an HTTP error answer that is not an overflow
│   ├── ProtocolError      a malformed body or stream (non-JSON, no finish reason, empty stream)
│   └── ContextOverflowError  the server said the prompt does not fit (every dialect maps here)
├── OutOfTime              a model call stopped at the end of the run's time (what it had answered kept)
├── ToolError              a tool refused or failed; becomes an is_error tool_result, never a crash
├── StoreError             a checkpoint/session/telemetry read or write failed
│   ├── QuotaExceeded      a write would exceed the state quota
│   └── SessionBusy        another aforo process has the session open
├── RejectedError          the governor refused to send a request that cannot fit (nothing was sent)
├── TransformError         a change of the conversation was not applied; the conversation is as it was
│   └── CompactionError    compaction could not make a smaller conversation that fits
└── LimitExceeded          an input went past one of the named limits of `aforo.limits`
    ├── ServerLimitExceeded  ... sent by a server; also a ProviderError (the request failed)
    ├── ConfigLimitExceeded  ... by a file the configuration names; also a ConfigError (exit 2)
    └── StateLimitExceeded   ... by a state file; also a StoreError (the file is not used)
"""

from __future__ import annotations

from typing import Protocol


class NamedLimit(Protocol):
    """What an error needs of an `aforo.limits.Limit` (named by shape: limits.py imports this module)."""

    @property
    def name(self) -> str: ...

    @property
    def setting(self) -> str | None: ...

    def describe(self) -> str: ...


class AforoError(Exception):
    """Base of every error aforo raises on purpose; the message is meant for the user."""


class ConfigError(AforoError):
    pass


class ProviderError(AforoError):
    retryable: bool = False
    # The answer's text received before the failure (set by the stream reader): it is kept, not lost.
    partial: str = ""


class ConnectError(ProviderError):
    retryable = True


class ProviderTimeout(ProviderError):
    retryable = True


class HTTPStatusError(ProviderError):
    def __init__(
        self, message: str, status: int, body: str = "", *, retry_after: float | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.body = body
        # Seconds the server asked us to wait before trying again (its Retry-After), when it said.
        self.retry_after = retry_after
        # 429 and 5xx may pass; 4xx are about the request and will fail again.
        self.retryable = status == 429 or status >= 500


class ProtocolError(ProviderError):
    pass


class ContextOverflowError(ProviderError):
    """The server refused the prompt as too long. `n_ctx` is the real window when the server said it."""

    def __init__(self, message: str, *, n_prompt: int | None = None, n_ctx: int | None = None) -> None:
        super().__init__(message)
        self.n_prompt = n_prompt
        self.n_ctx = n_ctx


class OutOfTime(AforoError):
    """A model call was stopped at the end of the run's time; `partial` is what it had answered."""

    def __init__(self, message: str, partial: str = "") -> None:
        super().__init__(message)
        self.partial = partial


class ToolError(AforoError):
    pass


class StoreError(AforoError):
    pass


class QuotaExceeded(StoreError):
    pass


class SessionBusy(StoreError):
    """The session is open in another aforo process: two writers would each lose the other's turns."""


class RejectedError(AforoError):
    """The governor would not send a request: it does not fit even after transforming. Nothing was sent."""

    def __init__(self, message: str, *, cause: str) -> None:
        super().__init__(message)
        self.cause = cause


class TransformError(AforoError):
    """A clearing, compaction, /clear or /undo was not applied (no checkpoint, a failed summary...)."""


class CompactionError(TransformError):
    pass


class LimitExceeded(AforoError):
    """An input went past a named limit (`aforo.limits`). The message names it and how to raise it."""

    def __init__(self, limit: NamedLimit, what: str) -> None:
        how = f" Raise it with {limit.setting}." if limit.setting else ""
        super().__init__(f"{what}: over the {limit.describe()} limit.{how}")
        self.limit = limit


class ServerLimitExceeded(LimitExceeded, ProviderError):
    """A server's answer went past a named limit (a line, the answer's bytes or time, JSON depth...).

    A ProviderError too, so the run ends with `error` like any failed request; never retried: the same
    request would only make the server do it again."""

    retryable = False


class ToolLimitExceeded(LimitExceeded, ToolError):
    """A tool's child process went past a named limit (ripgrep's memory): a ToolError too, so every
    caller that lives without a tool's answer (the map, the pre-search, the citation check) lives without
    this one. Only a LimitExceeded, it ended every question in a traceback wherever a caller caught
    ToolError alone (issue 39 D2, twice; then the citation check)."""


class ConfigLimitExceeded(LimitExceeded, ConfigError):
    """A file the configuration names (a tokenizer.json) went past a named limit: a ConfigError too, so
    the run stops before it starts, as for any unusable setting (exit 2)."""


class StateLimitExceeded(LimitExceeded, StoreError):
    """A session or checkpoint file went past a named limit (its size, its JSON depth): a StoreError
    too, so it is reported by name and skipped like any unreadable state file."""
