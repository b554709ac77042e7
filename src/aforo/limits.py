"""Every input aforo takes from outside has a limit, and each limit is named here, once (SPEC §8).

Servers, models, workspaces and the state directory are not trusted to be small or well-behaved: a
stream line with no newline, a 2 GiB AGENTS.md or a JSON document nested ten thousand deep must end in
a clear error, never in exhausted memory, a hang or a traceback. Code that enforces a limit imports it
from here and raises `LimitExceeded(limit, what)`, whose message names the limit, its value and how to
raise it where a user could legitimately need more. The README's table of limits lists every entry of
`LIMITS` (a test checks it).
"""

from __future__ import annotations

from dataclasses import dataclass

KiB = 1024
MiB = 1024 * KiB


@dataclass(frozen=True)
class Limit:
    name: str
    value: int | float
    unit: str  # "bytes", "seconds", "levels", "characters"...
    what: str  # what it bounds, in a few words
    # How a user raises it (a config key or flag), or None when it is fixed: raising it would only
    # let a hostile input do more harm, never let a legitimate one through.
    setting: str | None = None

    def describe(self) -> str:
        value = f"{self.value:,}" if isinstance(self.value, int) else f"{self.value:g}"
        return f"{self.name} ({value} {self.unit}: {self.what})"


LIMITS: dict[str, Limit] = {}


def limit(name: str, value: int | float, unit: str, what: str, setting: str | None = None) -> Limit:
    """Register a limit; a name is registered once."""
    if name in LIMITS:
        raise ValueError(f"limit {name!r} is defined twice")
    LIMITS[name] = entry = Limit(name, value, unit, what, setting)
    return entry


JSON_DEPTH = limit("json_depth", 64, "levels", "nesting of JSON from servers, text calls or state files")
TOOL_SECONDS = limit("tool_seconds", 30, "seconds", "wall time of one tool call")
READ_BYTES = limit("read_bytes", 256 * MiB, "bytes", "file bytes one Read call scans")
AGENTS_MD_BYTES = limit("agents_md_bytes", 16_000, "bytes", "AGENTS.md bytes put in the system prompt")
TEXT_CALL_LITERAL_CHARS = limit(
    "text_call_literal_chars",
    16 * KiB,
    "characters",
    "a tool call an answer writes as a Python literal (single quotes); a longer one stays text",
)
CONFIG_BYTES = limit("config_bytes", 1 * MiB, "bytes", "size of a config file (config.toml, .aforo.toml)")
STDIN_BYTES = limit(
    "stdin_bytes", 1 * MiB, "bytes", "piped standard input, added to the prompt (`cat f | aforo question`)"
)
