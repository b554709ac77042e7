"""Calls to the upstream API, retried when the network fails."""

import time
import urllib.request

from app.config import TIMEOUT_S

MAX_RETRIES = 4
BACKOFF_S = 0.5


def fetch(url: str) -> bytes:
    """The body at `url`; a failed request is tried again up to MAX_RETRIES times."""
    for attempt in range(MAX_RETRIES + 1):
        try:
            with urllib.request.urlopen(url, timeout=TIMEOUT_S) as response:
                return response.read()
        except OSError:
            if attempt == MAX_RETRIES:
                raise
            time.sleep(BACKOFF_S * 2**attempt)
    raise AssertionError("unreachable")
