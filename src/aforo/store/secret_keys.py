"""Does a key *name* hold a secret? `DB_PASSWORD`, `apiKey`, `x-auth-token` do; `password_field`,
`token_count`, `max_tokens` do not.

The name is split into words (snake, kebab, dotted and camel case). It names a secret when one of its
words is a secret word and the last word does not turn it into metadata about the secret (its field,
length, URL, type, …). A bare `key` counts only with a qualifier (`api_key`, `SECRET_KEY`), since
`key` alone is the most common name in any dictionary — except in `.env` lines, where every
`*_KEY=` is a credential.
"""

from __future__ import annotations

import re
from functools import lru_cache

_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")

_PASSWORD_WORDS = frozenset({"password", "passwd", "passphrase", "pwd", "pass", "passwort", "contrasena"})
_KEY_QUALIFIERS = frozenset(
    {
        "api",
        "secret",
        "private",
        "access",
        "master",
        "encryption",
        "signing",
        "auth",
        "client",
        "service",
        "account",
        "db",
        "database",
        "session",
        "license",
        "app",
        "webhook",
        "ssh",
        "gpg",
        "hmac",
        "subscription",
        "consumer",
        "write",
        "admin",
    }
)
# A first word that makes the name a count or a flag: `max_token`, `is_secret`, `use_auth`.
_NOT_FIRST = frozenset(
    {"max", "min", "num", "n", "total", "count", "is", "has", "use", "enable", "show", "no"}
)
# A last word that makes the name metadata about a secret, not the secret.
_NOT_LAST_WORDS = """
    count counts len length size limit limits max min timeout ttl expiry expires expiration at
    url uri urls endpoint host hostname port path paths file filename files dir directory
    type types kind name names id ids index idx header headers field fields column env var variable
    format version prefix suffix mode provider store manager class cls usage budget estimate estimated
    bytes chars encoding algorithm alg scheme source label prompt message msg error errors hint
    placeholder description desc title enabled required policy regex pattern input widget form
    validator reset rotation location cache counter fn func function method handler callback event
    events changed updated created used left remaining window rate strength confirm match matches
"""
_NOT_LAST = frozenset(_NOT_LAST_WORDS.split())


def _words(key: str) -> list[str]:
    return [w.lower() for w in _WORDS.findall(key)]


@lru_cache(maxsize=4096)
def secret_key_kind(key: str, *, env_style: bool) -> str | None:
    """The kind of secret a value under `key` holds (`password`, `token`, …), or None."""
    words = _words(key)
    if not words or words[0] in _NOT_FIRST or words[-1] in _NOT_LAST:
        return None
    for i, word in enumerate(words):
        last = i == len(words) - 1
        if word in _PASSWORD_WORDS or word.endswith(("password", "passwd")):
            return "password"
        if word in ("secret", "secrets") or word.endswith("secret"):
            return "secret"
        if word.endswith("token") or (word == "pat" and (last or env_style)):
            return "token"
        if word == "apikey" or (word in ("key", "keys") and i > 0 and words[i - 1] == "api"):
            return "api-key"
        if word in ("key", "keys") and (env_style or (i > 0 and words[i - 1] in _KEY_QUALIFIERS)):
            return "key"
        if word in ("credential", "credentials", "creds"):
            return "credential"
        if word == "auth" and (last or env_style):
            return "auth"
    return None
