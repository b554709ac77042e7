"""Does a key *name* hold a secret? `DB_PASSWORD`, `apiKey`, `x-auth-token` do; `password_field`,
`token_count`, `max_tokens` do not. And is the *value* under it a literal secret, or code and
placeholders (`${DB_PASSWORD}`, `None`, `self.token`)?

The name is split into words (snake, kebab, dotted and camel case). It names a secret when one of its
words is a secret word and the last word does not turn it into metadata about the secret (its field,
length, URL, type, …). A bare `key` counts only with a qualifier (`api_key`, `SECRET_KEY`), since
`key` alone is the most common name in any dictionary — except in `.env` lines, where every
`*_KEY=` is a credential.
"""

from __future__ import annotations

import re
from functools import lru_cache

MARKER_PREFIX = "[REDACTED:"
# What replaces a secret. Only this exact shape counts as a marker: a bare "[REDACTED:" planted in a
# file must not shield the text after it from redaction.
MARKER = re.compile(r"\[REDACTED:[a-z0-9-]{1,64}\]")

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
        "aws",
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


_NOT_LITERAL_WORDS = "none null nil true false yes no on off undefined str string bytes int bool any optional"
_NOT_LITERALS = frozenset([*_NOT_LITERAL_WORDS.split(), "secretstr", "required", "|", ">", ">-", "|-", "~"])
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")


def value_is_secret(value: str, *, bare: bool, config_line: bool, key: str, next_char: str) -> bool:
    """Is `value`, assigned to the secret-looking `key`, a literal secret worth redacting?

    `bare`: written without quotes; `config_line`: a `.env`/shell/INI line, where every value is data;
    `next_char`: what follows the value (a `(` makes it a call, i.e. code).
    """
    if not value or MARKER.fullmatch(value):
        return False
    if value[0] in "$<*%" or value.startswith("{{") or value.lower() in _NOT_LITERALS:
        return False  # a template, a placeholder, a type annotation or a literal of the language
    if not any(c.isalnum() for c in value):
        return False  # an elision (`...`) or a mask (`****`)
    if not bare:
        return True
    if next_char and next_char in "([":
        return False  # a call or an index: code that fetches the secret, not the secret
    if value.isdigit() and len(value) < 4:
        return False
    if _IDENTIFIER.fullmatch(value):
        # A bare name is code (`auth: AuthTypes`, `f(api_key=api_key)`, `token = self.token`) unless it
        # sits in a config line (`API_KEY=abc`) or looks made up (`password: hunter2`).
        if config_line:
            return True
        return "." not in value and any(c.isdigit() for c in value) and value.lower() != key.lower()
    return True
