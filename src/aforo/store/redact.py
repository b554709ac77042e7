"""Redaction of secrets before anything reaches disk: `[REDACTED:<kind>]` replaces each one.

Three layers of detectors run over the *original* text, each yielding spans; overlapping spans are
merged and the most specific kind names the result, so the order of detectors never matters and a
marker is never re-scanned:

1. detect-secrets' regex plugins (AWS, GitHub, GitLab, Slack, Stripe, Twilio, SendGrid, …), used
   in-process through their compiled `denylist` regexes: no files, no baseline, no verification calls.
2. Our token shapes for what it misses or matches loosely: OpenAI/Anthropic/Google/HuggingFace keys,
   fine-grained GitHub tokens, bearer tokens, whole JWTs, passwords in URLs, private key blocks.
3. Assignments (`password = "…"`, `API_KEY=…`, `secret: …`, `"token": "…"`, `--password x`), judged by
   the *name* of the key (see `secret_key_kind`) and the *shape* of the value, so code such as
   `password_field = form.get("password")` or `max_tokens: 1024` survives.

Not covered (documented): high-entropy strings without a recognizable name or prefix, since hashes and
ids look the same and redacting them would mangle ordinary tool output.
"""

from __future__ import annotations

import bisect
import re
import string
import threading
from collections import OrderedDict
from collections.abc import Iterator
from typing import Any

from detect_secrets.plugins.artifactory import ArtifactoryDetector
from detect_secrets.plugins.aws import AWSKeyDetector
from detect_secrets.plugins.azure_storage_key import AzureStorageKeyDetector
from detect_secrets.plugins.discord import DiscordBotTokenDetector
from detect_secrets.plugins.github_token import GitHubTokenDetector
from detect_secrets.plugins.gitlab_token import GitLabTokenDetector
from detect_secrets.plugins.jwt import JwtTokenDetector
from detect_secrets.plugins.mailchimp import MailchimpDetector
from detect_secrets.plugins.npm import NpmDetector
from detect_secrets.plugins.openai import OpenAIDetector
from detect_secrets.plugins.pypi_token import PypiTokenDetector
from detect_secrets.plugins.sendgrid import SendGridDetector
from detect_secrets.plugins.slack import SlackDetector
from detect_secrets.plugins.square_oauth import SquareOAuthDetector
from detect_secrets.plugins.stripe import StripeDetector
from detect_secrets.plugins.telegram_token import TelegramBotTokenDetector
from detect_secrets.plugins.twilio import TwilioKeyDetector

from aforo.store.secret_keys import secret_key_kind

MARKER_PREFIX = "[REDACTED:"

# Left out on purpose: IPPublic (an address is not a secret); BasicAuth and PrivateKey (ours below keep
# the user and host, and cover the whole key block); Keyword, Cloudant, IbmCloudIam, IbmCosHmac and
# Softlayer (`<keyword> = <value>` forms our assignment layer covers as a superset, and they cost a
# regex search at every position of the text); HighEntropy (flags hashes and ids).
_DETECT_SECRETS = (
    ArtifactoryDetector,
    AWSKeyDetector,
    AzureStorageKeyDetector,
    DiscordBotTokenDetector,
    GitHubTokenDetector,
    GitLabTokenDetector,
    JwtTokenDetector,
    MailchimpDetector,
    NpmDetector,
    OpenAIDetector,
    PypiTokenDetector,
    SendGridDetector,
    SlackDetector,
    SquareOAuthDetector,
    StripeDetector,
    TelegramBotTokenDetector,
    TwilioKeyDetector,
)

# Priorities decide the kind of merged spans: the most specific detector names the secret.
_P_BLOCK, _P_TOKEN, _P_PLUGIN, _P_CONTEXT, _P_ASSIGN = 50, 40, 30, 20, 10

# Each starts with a literal, so the regex engine can skip ahead to it; that a token starts at a word
# boundary (not inside a longer word) is checked on the match, as a lookbehind would defeat the skip.
_TOKEN_CHARS = frozenset(string.ascii_letters + string.digits + "_-")
_OWN_TOKENS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("anthropic-key", re.compile(r"sk-ant-[A-Za-z0-9_-]{20,}")),
    ("openai-key", re.compile(r"sk-(?:proj-|svcacct-|admin-)?(?=[A-Za-z0-9_-]*\d)[A-Za-z0-9_-]{20,}")),
    ("github-token", re.compile(r"(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})")),
    ("gitlab-token", re.compile(r"glpat-[A-Za-z0-9_-]{20,}")),
    ("slack-token", re.compile(r"xox[abposr]-[A-Za-z0-9-]{10,}")),
    ("stripe-key", re.compile(r"(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}")),
    ("google-api-key", re.compile(r"AIza[0-9A-Za-z_-]{35}")),
    ("huggingface-token", re.compile(r"hf_(?=[A-Za-z0-9]*\d)[A-Za-z0-9]{30,}")),
    ("npm-token", re.compile(r"npm_[A-Za-z0-9]{36}")),
    ("aws-access-key", re.compile(r"(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}(?![0-9A-Z])")),
    ("jwt", re.compile(r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*")),
)

_PRIVATE_KEY = re.compile(
    r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"
    # Up to the matching END, never across another BEGIN (a block cut short would otherwise swallow
    # everything up to the next key's END); a block cut short is redacted to its last base64 run.
    r"(?:(?:(?!-----BEGIN).)*?-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|[A-Za-z0-9+/=\s\\:,-]*)"
    r"|PuTTY-User-Key-File-\d+:.*?Private-MAC:[ \t]*[0-9a-fA-F]+",
    re.DOTALL,
)
_AUTH_HEADER = re.compile(
    r"(?i)\b(?:proxy-)?authorization[\"']?\s*[:=]\s*[\"']?(?:(?:bearer|basic|token|digest)\s+)?"
    r"(?P<secret>[A-Za-z0-9._~+/=-]{8,})"
)
_BEARER = re.compile(r"(?i)\bbearer\s+(?P<secret>(?=[A-Za-z0-9._~+/-]*\d)[A-Za-z0-9._~+/-]{16,}=*)")
_URL_PASSWORD = re.compile(r"://[^\s:/?#@\"'<>]*:(?P<secret>[^\s/?#\"'<>]+)@")

_ASSIGNMENT = re.compile(
    # A line start, also behind what tools put there: grep's `path:12:`, a numbered listing's `  12\t`.
    r"(?P<lead>^[ \t]*(?:[\w./-]+[:-](?=\d))?(?:\d+[\t:│|→-][ \t]*)?(?:export[ \t]+|-[ \t]+)?)?"
    r"(?<![\w.])(?P<q>[\"']?)(?P<key>[A-Za-z_][A-Za-z0-9_.-]{0,100})(?P=q)"
    r"(?P<sep>[ \t]*(?::=|=>|=(?!=)|:(?![:/]))[ \t]*)"
    r"(?P<value>\"(?:[^\"\\\n]|\\.)*\"|'(?:[^'\\\n]|\\.)*'|`[^`\n]*`|[^\s,;'\"`()\[\]{}<>&]+)",
    re.MULTILINE,
)
_FLAG = re.compile(r"(?<!\S)--(?P<key>[A-Za-z][A-Za-z0-9-]{2,60})(?:=|[ \t]+)(?P<value>[^\s\"'-][^\s\"']*)")
# A cheap gate: the lines worth the keyword-driven detectors, and the keys worth classifying.
_SECRETISH = re.compile(r"(?i)pass|pwd|secret|token|key|auth|cred|pat\b")

_NOT_LITERAL_WORDS = "none null nil true false yes no on off undefined str string bytes int bool any optional"
_NOT_LITERALS = frozenset([*_NOT_LITERAL_WORDS.split(), "secretstr", "required", "|", ">", ">-", "|-", "~"])
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")


def _slug(secret_type: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", secret_type.lower()).strip("-")


def _plugin_rules(plugins: tuple[type[Any], ...]) -> tuple[tuple[str, re.Pattern[str]], ...]:
    return tuple((_slug(p.secret_type), rx) for p in plugins for rx in p.denylist)


_PLUGIN_RULES = _plugin_rules(_DETECT_SECRETS)
_TRIM = " \t\r\n\"'=:,"

Span = tuple[int, int, int, str]  # start, end, priority, kind


def _plugin_spans(text: str, rules: tuple[tuple[str, re.Pattern[str]], ...]) -> Iterator[Span]:
    for kind, rx in rules:
        for m in rx.finditer(text):
            start, end = m.span()
            # Plugins capture the secret itself in a group when they match its surroundings too
            # (`aws … = "<secret>"`); a short group is a prefix (`ghp`), not the secret.
            groups = [m.span(i) for i in range(1, rx.groups + 1) if m.start(i) >= 0]
            longest = max(groups, key=lambda s: s[1] - s[0], default=None)
            if longest and longest[1] - longest[0] >= 8:
                start, end = longest
            while start < end and text[start] in _TRIM:
                start += 1
            while end > start and text[end - 1] in _TRIM:
                end -= 1
            if end > start:
                yield start, end, _P_PLUGIN, kind


def _value_is_secret(value: str, *, bare: bool, config_line: bool, key: str, next_char: str) -> bool:
    if not value or value.startswith(MARKER_PREFIX):
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


def _assignment_spans(text: str) -> Iterator[Span]:
    for m in _ASSIGNMENT.finditer(text):
        key = m.group("key")
        if not _SECRETISH.search(key):
            continue
        sep = m.group("sep")
        # `KEY=value` at the start of a line: a .env / shell / INI line, where every value is data.
        env_style = m.group("lead") is not None and sep == "=" and key.isupper()
        kind = secret_key_kind(key, env_style=env_style)
        if kind is None:
            continue
        value = m.group("value")
        start, end = m.span("value")
        bare = value[0] not in "\"'`"
        if not bare:
            value, start, end = value[1:-1], start + 1, end - 1
        if not _value_is_secret(
            value, bare=bare, config_line=env_style, key=key, next_char=text[end : end + 1]
        ):
            continue
        if env_style and bare:
            # .env values run to the end of the line (`SECRET=two words`).
            line_end = text.find("\n", end)
            end = len(text) if line_end < 0 else line_end
            while end > start and text[end - 1] in " \t\r":
                end -= 1
        yield start, end, _P_ASSIGN, kind
    for m in _FLAG.finditer(text):
        kind = secret_key_kind(m.group("key"), env_style=False) if _SECRETISH.search(m.group("key")) else None
        if kind is not None and not m.group("value").startswith(MARKER_PREFIX):
            yield m.start("value"), m.end("value"), _P_ASSIGN, kind


def _keyword_lines(text: str) -> tuple[str, list[int], list[int]]:
    """The lines that mention a secret-ish word, joined, with where each starts here and in `text`.

    In code or prose ~10% of lines qualify, so the keyword-driven detectors scan a tenth of the text.
    """
    sub_starts: list[int] = []
    orig_starts: list[int] = []
    parts: list[str] = []
    pos = 0
    next_line = 0  # hits before this offset belong to a line already taken
    for m in _SECRETISH.finditer(text):
        if m.start() < next_line:
            continue
        line_start = text.rfind("\n", 0, m.start()) + 1
        line_end = text.find("\n", m.end())
        line_end = len(text) if line_end < 0 else line_end
        sub_starts.append(pos)
        orig_starts.append(line_start)
        parts.append(text[line_start:line_end])
        pos += line_end - line_start + 1
        next_line = line_end + 1
    return "\n".join(parts), sub_starts, orig_starts


def _keyword_spans(text: str) -> Iterator[Span]:
    sub, sub_starts, orig_starts = _keyword_lines(text)
    if not sub:
        return
    for start, end, prio, kind in _chain_keyword_detectors(sub):
        i = bisect.bisect_right(sub_starts, start) - 1
        delta = orig_starts[i] - sub_starts[i]
        yield start + delta, end + delta, prio, kind


def _chain_keyword_detectors(text: str) -> Iterator[Span]:
    for m in _AUTH_HEADER.finditer(text):
        if not m.group("secret").startswith(MARKER_PREFIX):
            yield m.start("secret"), m.end("secret"), _P_CONTEXT, "authorization"
    yield from _assignment_spans(text)


def _spans(text: str) -> Iterator[Span]:
    for m in _PRIVATE_KEY.finditer(text):
        yield m.start(), m.end(), _P_BLOCK, "private-key"
    for kind, rx in _OWN_TOKENS:
        for m in rx.finditer(text):
            if m.start() == 0 or text[m.start() - 1] not in _TOKEN_CHARS:
                yield m.start(), m.end(), _P_TOKEN, kind
    yield from _plugin_spans(text, _PLUGIN_RULES)
    for rx, kind in ((_BEARER, "bearer-token"), (_URL_PASSWORD, "url-password")):
        for m in rx.finditer(text):
            if not m.group("secret").startswith(MARKER_PREFIX):
                yield m.start("secret"), m.end("secret"), _P_CONTEXT, kind
    yield from _keyword_spans(text)


def _markers(text: str) -> list[tuple[int, int]]:
    """Existing markers are never cut: redacting twice gives the same text."""
    out = []
    start = text.find(MARKER_PREFIX)
    while start >= 0:
        end = text.find("]", start)
        if end < 0:
            break
        out.append((start, end + 1))
        start = text.find(MARKER_PREFIX, end)
    return out


class _Memo:
    """Recently redacted strings, bounded by their total size rather than their number.

    Sessions are saved after every turn with the whole history: the memo makes each save pay only for
    the strings that are new since the last one (a str caches its own hash, and an unchanged text is
    stored as the same object, so the memo holds references, not copies).
    """

    def __init__(self, max_chars: int) -> None:
        self.max_chars = max_chars
        self.chars = 0
        self.items: OrderedDict[str, str] = OrderedDict()
        self.lock = threading.Lock()

    def get(self, text: str) -> str:
        with self.lock:
            hit = self.items.get(text)
            if hit is not None:
                self.items.move_to_end(text)
                return hit
        out = _redact(text)
        with self.lock:
            if text not in self.items:
                self.items[text] = out
                self.chars += len(text)
            while self.chars > self.max_chars and self.items:
                old, _ = self.items.popitem(last=False)
                self.chars -= len(old)
        return out


_MEMO = _Memo(max_chars=16 * 1024 * 1024)


def redact(text: str) -> str:
    """`text` with every detected secret replaced by `[REDACTED:<kind>]`."""
    return _MEMO.get(text) if len(text) >= 32 else _redact(text)


def _redact(text: str) -> str:
    spans = sorted(_spans(text))
    if not spans:
        return text
    markers = _markers(text)
    merged: list[list[Any]] = []
    for start, end, prio, kind in spans:
        if any(ms <= start and end <= me for ms, me in markers):
            continue
        if merged and start < merged[-1][1]:
            last = merged[-1]
            last[1] = max(last[1], end)
            if prio > last[2]:
                last[2], last[3] = prio, kind
        else:
            merged.append([start, end, prio, kind])
    parts: list[str] = []
    pos = 0
    for start, end, _prio, kind in merged:
        parts.append(text[pos:start])
        parts.append(f"{MARKER_PREFIX}{kind}]")
        pos = end
    parts.append(text[pos:])
    return "".join(parts)


def redact_obj(obj: Any) -> Any:
    """A copy of a JSON-like value with every string redacted.

    A string stored under a secret-looking key (`{"password": "hunter"}`) is redacted whole, since a
    structured value has no surrounding text to judge its shape by.
    """
    if isinstance(obj, str):
        return redact(obj)
    if isinstance(obj, dict):
        out: dict[Any, Any] = {}
        for key, value in obj.items():
            kind = (
                secret_key_kind(key, env_style=False)
                if isinstance(key, str) and _SECRETISH.search(key)
                else None
            )
            if (
                kind
                and isinstance(value, str)
                and _value_is_secret(value, bare=False, config_line=True, key=key, next_char="")
            ):
                out[key] = f"{MARKER_PREFIX}{kind}]"
            else:
                out[key] = redact_obj(value)
        return out
    if isinstance(obj, list | tuple):
        return [redact_obj(v) for v in obj]
    return obj
