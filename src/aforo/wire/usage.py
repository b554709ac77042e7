"""A server's usage report, read once at the boundary: counts aforo can hold and add, or none at all.

A count past `usage_tokens` (or past `json_integer`, which `server_json` leaves as its digits) cannot be
true; one such number makes the rest of the report untrustworthy too, so the whole report is refused and
the reason travels with the answer (`MessageEnd.usage_refused`), for the governor to tell once. The
answer itself is kept: a wrong count is no reason to lose it.
"""

from __future__ import annotations

from typing import Any

from aforo.limits import USAGE_TOKENS


class UsageReader:
    def __init__(self) -> None:
        self.refused = ""  # why the report cannot be taken; "" while it can

    def count(self, value: Any) -> int:
        """One count: 0 when absent or not a positive integer (servers omit zeros)."""
        if isinstance(value, str) and value.lstrip("-").isdigit():  # past json_integer
            self.refused = self.refused or f"a usage count of {len(value.lstrip('-')):,} digits"
            return 0
        if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
            return 0
        if value > USAGE_TOKENS.value:
            self.refused = self.refused or (
                f"a usage count of {value:,} tokens (past the {USAGE_TOKENS.describe()} limit)"
            )
            return 0
        return value
