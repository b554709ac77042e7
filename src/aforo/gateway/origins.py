"""Which web pages may use the gateway: the `Origin` a browser sends, matched against the allowed ones.

A page in the user's browser can post to `http://127.0.0.1:PORT` whatever site it came from; the browser
says which site in `Origin`. Like Ollama (`OLLAMA_ORIGINS`), pages this machine serves (`localhost`,
`127.0.0.1`, `[::1]`, any port, http or https) are allowed by default, and the user allows more with
`--allow-origin` or `AFORO_ALLOW_ORIGINS` (comma-separated). A `*` in a pattern stands for a run of the
characters of a host name, or digits after a `:` (`https://*.example.com`, `http://192.168.1.5:*`,
`chrome-extension://*`), never for `:` or `/`, so `http://localhost:*` cannot match another host; `*`
alone allows every origin, and `null` the pages that have none to name (files, sandboxed frames).
Unlike Ollama, `file://`, `app://` and extension pages are not allowed by default: each is an origin any
local program or installed extension can take.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from aforo.errors import ConfigError

ENV = "AFORO_ALLOW_ORIGINS"
LOCAL_ORIGINS = tuple(
    f"{scheme}://{host}{port}"
    for scheme in ("http", "https")
    for host in ("localhost", "127.0.0.1", "[::1]")
    for port in ("", ":*")
)
# What `*` stands for: a host name's characters (IDNs arrive as punycode) or a port's digits.
_HOST_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789.-")
_PORT_CHARS = frozenset("0123456789")
# A serialized origin is a scheme, a host of at most 253 characters and a port; anything longer is not one.
_ORIGIN_CHARS = 300


@dataclass(frozen=True)
class Origins:
    patterns: tuple[str, ...]

    def allows(self, origin: str) -> bool:
        origin = origin.strip().lower()
        if len(origin) > _ORIGIN_CHARS:
            return False
        return any(_matches(pattern, origin) for pattern in self.patterns)


def allowed_origins(given: Iterable[str], env: dict[str, str]) -> Origins:
    """The local pages, those of `AFORO_ALLOW_ORIGINS` and those given (`--allow-origin`, each may list
    several, comma-separated). Raises ConfigError naming a pattern that can never match an origin."""
    sources = [(env.get(ENV, ""), ENV), *((text, "--allow-origin") for text in given)]
    extra: list[str] = []
    for text, where in sources:
        for piece in text.split(","):
            pattern = piece.strip().rstrip("/").lower()
            if pattern:
                _check(pattern, where)
                extra.append(pattern)
    return Origins((*LOCAL_ORIGINS, *extra))


def _check(pattern: str, where: str) -> None:
    if pattern in ("*", "null"):
        return
    scheme, sep, rest = pattern.partition("://")
    if not sep or not scheme or not rest or "/" in rest:
        raise ConfigError(
            f"{where}: {pattern!r} is not an origin: give it as scheme://host[:port], with no path "
            "(e.g. https://chat.example.com, http://localhost:*)"
        )


def _matches(pattern: str, origin: str) -> bool:
    """`origin` fits `pattern`, each `*` standing for a run of a host's characters, or of digits after a
    `:`. Greedy and linear: the first place each piece fits is the only one to try, since a longer run
    before it only adds characters to a run that must hold none but those."""
    if pattern == "*":
        return True
    pieces = pattern.split("*")
    if len(pieces) == 1:
        return origin == pattern
    end = len(origin) - len(pieces[-1])
    if end < len(pieces[0]) or not origin.startswith(pieces[0]) or not origin.endswith(pieces[-1]):
        return False
    at = len(pieces[0])
    for k in range(1, len(pieces)):
        found = end if k == len(pieces) - 1 else origin.find(pieces[k], at, end)
        run = _PORT_CHARS if pieces[k - 1].endswith(":") else _HOST_CHARS
        if found < 0 or not run.issuperset(origin[at:found]):
            return False
        at = found + len(pieces[k])
    return True
