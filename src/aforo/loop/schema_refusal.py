"""A server that will not take the JSON schema of a constrained step: the session goes on with tool
definitions, said once."""

from __future__ import annotations

from aforo.errors import HTTPStatusError, ProviderError
from aforo.events import Warning

NATIVE = "tools are sent as definitions instead (--tool-mode native)."


def refused_schema(exc: ProviderError) -> Warning | None:
    """The warning to give when `exc`, the answer to a constrained request, is a client error (the
    server would not take the schema); None for any other failure."""
    if isinstance(exc, HTTPStatusError) and exc.status in (400, 422):
        return Warning(message=f"The server refused the JSON-schema constraint ({exc}); {NATIVE}")
    return None
