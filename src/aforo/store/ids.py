"""Ids and timestamps for stored records: ids sort by creation time, timestamps are ISO 8601 UTC."""

from __future__ import annotations

import re
import secrets
from datetime import UTC, datetime

from aforo.errors import StoreError

# Ids become file names: keep them to a portable alphabet, never a path separator or a leading dot.
_SAFE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds")


def new_id() -> str:
    """`20250101-120000-3fa9c2d1`: sortable by time, unique by its random tail."""
    return f"{datetime.now(UTC):%Y%m%d-%H%M%S}-{secrets.token_hex(4)}"


def check_id(value: str, what: str) -> str:
    if not isinstance(value, str) or not _SAFE_ID.fullmatch(value) or ".." in value:
        raise StoreError(f"invalid {what} {value!r}: use letters, digits, '.', '_' and '-' only")
    return value
