"""The two ways aforo talks to a server outside the chat stream: quiet discovery and strict calls.

Discovery (`get_json_quiet`) asks cheap questions whose failure only means "not this kind of server", so
every failure becomes None. Calls whose answer we need (`post_json`: counting, probing) translate every
third-party failure once, here, into aforo's exception tree, so callers can fall back on ProviderError.
"""

from __future__ import annotations

from typing import Any

import httpx

from aforo.errors import ProtocolError
from aforo.providers.http import status_error, translate_transport

# Discovery must never make start-up slow: a server that takes longer than this to say what it is
# is treated as not saying it.
DISCOVERY_TIMEOUT = 2.0


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
