"""The detectors of secrets: each finds spans of text (start, end, priority, kind) in the original text.

Three layers (see `aforo.store.redact` for how their spans are merged and replaced):

1. detect-secrets' regex plugins (AWS, GitHub, GitLab, Slack, Stripe, Twilio, SendGrid, …), used
   in-process through their compiled `denylist` regexes: no files, no baseline, no verification calls.
2. Our token shapes for what it misses or matches loosely: OpenAI/Anthropic/Google/HuggingFace/PyPI
   keys, fine-grained GitHub tokens, bearer tokens, whole JWTs, passwords in URLs, private key blocks,
   and the shapes gitleaks' rules know and its plugins do not (Slack app tokens, routable GitLab
   tokens, Square access tokens, Bedrock and Entra keys…; tests/security/test_token_kinds.py).
3. Assignments (`password = "…"`, `API_KEY=…`, `secret: …`, `"token": "…"`, `--password x`), judged by
   the *name* of the key (see `secret_key_kind`) and the *shape* of the value, so code such as
   `password_field = form.get("password")` or `max_tokens: 1024` survives; and the values of Grep
   lines from `.env`-style files and of `.env`-shaped blocks of lines, whatever their key (see
   `env_files`).

Every detector runs in time linear in the text (bench/redaction.py measures it by input size): no
regex tries an unbounded run from inside a run it could have started at the run's start, and no two
repetitions can match the same characters. Text is untrusted: a tool output or an answer of 100 KB
made of one token prefix repeated must not stall a save.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator
from typing import Any

from detect_secrets.plugins.artifactory import ArtifactoryDetector
from detect_secrets.plugins.aws import AWSKeyDetector
from detect_secrets.plugins.azure_storage_key import AzureStorageKeyDetector
from detect_secrets.plugins.discord import DiscordBotTokenDetector
from detect_secrets.plugins.github_token import GitHubTokenDetector
from detect_secrets.plugins.gitlab_token import GitLabTokenDetector
from detect_secrets.plugins.mailchimp import MailchimpDetector
from detect_secrets.plugins.sendgrid import SendGridDetector
from detect_secrets.plugins.slack import SlackDetector
from detect_secrets.plugins.square_oauth import SquareOAuthDetector
from detect_secrets.plugins.stripe import StripeDetector
from detect_secrets.plugins.telegram_token import TelegramBotTokenDetector
from detect_secrets.plugins.twilio import TwilioKeyDetector

from aforo.store import env_files
from aforo.store.env_files import ENV_KIND
from aforo.store.secret_keys import MARKER, secret_key_kind, value_is_secret

# Left out on purpose: IPPublic (an address is not a secret); BasicAuth and PrivateKey (ours below keep
# the user and host, and cover the whole key block); Keyword, Cloudant, IbmCloudIam, IbmCosHmac and
# Softlayer (`<keyword> = <value>` forms our assignment layer covers as a superset, and they cost a
# regex search at every position of the text); HighEntropy (flags hashes and ids).
# Replaced because their regexes take quadratic time on a run of their prefix (`eyJ`, `//`, `sk-`,
# `pypi-AgEI…` repeated: seconds per 10 KB, minutes per 100 KB): Jwt, Npm, OpenAI and PypiToken. Our
# token shapes below match the same secrets from a word boundary only. Kept after measuring: the AWS
# `aws.{0,20}?<keyword>.{0,20}?'<40 chars>'` regex, whose gaps are bounded (linear, at most ~150 ms per
# 80 KB of `aws pw'` repeated), and GitLab's `{20,50}`/`{50,1024}` tails, bounded the same way.
_DETECT_SECRETS = (
    ArtifactoryDetector,
    AWSKeyDetector,
    AzureStorageKeyDetector,
    DiscordBotTokenDetector,
    GitHubTokenDetector,
    GitLabTokenDetector,
    MailchimpDetector,
    SendGridDetector,
    SlackDetector,
    SquareOAuthDetector,
    StripeDetector,
    TelegramBotTokenDetector,
    TwilioKeyDetector,
)

# Priorities decide the kind of merged spans: the most specific detector names the secret.
P_BLOCK, P_TOKEN, P_PLUGIN, P_CONTEXT, P_ASSIGN = 50, 40, 30, 20, 10


def _start(prefix_chars: int) -> str:
    """Placed right after a token's literal prefix: the prefix does not continue a longer word.

    Linear time rests on it: a token's tail runs over the same characters as a word, so a tail tried
    from inside a word (`sk-` repeated) would scan to the word's end from each of its positions. After
    the literal rather than before it, so the regex engine still skips ahead to the prefix.
    """
    return f"(?<![A-Za-z0-9_-]{'.' * prefix_chars})"


_OWN_TOKENS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (kind, re.compile(pattern))
    for kind, pattern in (
        ("anthropic-key", rf"sk-ant-{_start(7)}[A-Za-z0-9_-]{{20,}}"),
        ("openai-key", rf"sk-{_start(3)}(?:proj-|svcacct-|admin-)?(?=[A-Za-z0-9_-]*\d)[A-Za-z0-9_-]{{20,}}"),
        ("github-token", rf"gh[pousr]_{_start(4)}[A-Za-z0-9]{{30,}}"),
        ("github-token", rf"github_pat_{_start(11)}[A-Za-z0-9_]{{22,}}"),
        # Routable tokens (glpat-…, glrt-t1_…) end in `.` and nine characters (where they route).
        ("gitlab-token", rf"glpat-{_start(6)}[A-Za-z0-9_-]{{20,}}(?:\.[0-9a-z]{{9}}(?![0-9a-z]))?"),
        ("gitlab-token", rf"glrt-{_start(5)}[A-Za-z0-9_-]{{20,}}(?:\.[0-9a-z]{{9}}(?![0-9a-z]))?"),
        ("gitlab-token", rf"glffct-{_start(7)}[A-Za-z0-9_-]{{20,}}"),
        # xoxe: configuration (refresh) tokens; xapp: app-level tokens (xapp-1-A…-123…-hex).
        ("slack-token", rf"xox[abeposr]-{_start(5)}[A-Za-z0-9-]{{10,}}"),
        ("slack-token", rf"xapp-{_start(5)}\d-[A-Za-z0-9]+-\d+-[A-Za-z0-9]{{16,}}"),
        ("stripe-key", rf"(?:sk|rk)_(?:live|test|prod)_{_start(8)}[A-Za-z0-9]{{16,}}"),
        ("google-api-key", rf"AIza{_start(4)}[0-9A-Za-z_-]{{35}}"),
        # Hugging Face tokens are 34 letters (what public scanners match); older ones hold digits.
        (
            "huggingface-token",
            rf"hf_{_start(3)}(?:(?=[A-Za-z0-9]*\d)[A-Za-z0-9]{{30,}}|[A-Za-z]{{34}}(?![A-Za-z0-9_]))",
        ),
        ("huggingface-token", rf"api_org_{_start(8)}[A-Za-z]{{34}}(?![A-Za-z0-9_])"),
        ("npm-token", rf"npm_{_start(4)}[A-Za-z0-9]{{36}}"),
        ("pypi-token", rf"pypi-{_start(5)}Ag(?:EIcHlwaS5vcmc|ENdGVzdC5weXBpLm9yZw)[A-Za-z0-9_-]{{50,}}"),
        ("aws-access-key", rf"(?:AKIA|ASIA|ABIA|ACCA){_start(4)}[0-9A-Z]{{16}}(?![0-9A-Z])"),
        # Amazon Bedrock API keys: long-lived (ABSK + base64), short-lived (a presigned URL, base64).
        ("aws-bedrock-key", rf"ABSK{_start(4)}[A-Za-z0-9+/]{{109,}}={{0,2}}"),
        ("aws-bedrock-key", rf"bedrock-api-key-{_start(16)}YmVkcm9jay5hbWF6b25hd3MuY29t[A-Za-z0-9+/=%&]*"),
        # Square access tokens (production EAAA…, legacy sq0atp-…); its OAuth secrets are a plugin's.
        ("square-access-token", rf"EAAA{_start(4)}[A-Za-z0-9_-]{{22,}}"),
        ("square-access-token", rf"sq0atp-{_start(7)}[A-Za-z0-9_-]{{22,}}"),
        # Artifactory API keys (the plugin's needs a space or quote around them, not a parenthesis)
        # and reference tokens (base64 of their `ref…` header).
        ("artifactory-token", rf"AKCp{_start(4)}[A-Za-z0-9]{{69}}(?![A-Za-z0-9])"),
        ("artifactory-token", rf"cmVmd{_start(5)}[A-Za-z0-9]{{59}}(?![A-Za-z0-9])"),
        # Microsoft Entra (Azure AD) client secrets: three characters, a digit, `Q~`, then 31-34 more.
        (
            "azure-client-secret",
            r"(?<![A-Za-z0-9_~.])[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.-]{31,34}(?![A-Za-z0-9_~.-])",
        ),
        ("jwt", rf"eyJ{_start(3)}[A-Za-z0-9_-]{{8,}}\.eyJ[A-Za-z0-9_-]{{8,}}\.[A-Za-z0-9_-]*"),
    )
)

_PRIVATE_KEY = re.compile(
    r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"
    # Up to the matching END, never across another BEGIN (a block cut short would otherwise swallow
    # everything up to the next key's END); a block cut short is redacted to its last base64 run.
    r"(?:(?:(?!-----BEGIN).)*?-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|[A-Za-z0-9+/=\s\\:,-]*)"
    # The same for PuTTY: never across another header, so each header's search ends at the next one.
    r"|PuTTY-User-Key-File-\d+:(?:(?!PuTTY-User-Key-File-).)*?Private-MAC:[ \t]*[0-9a-fA-F]+",
    re.DOTALL,
)
_AUTH_HEADER = re.compile(
    # One line: `\s` would let an empty header take the next line's first word as its value.
    r"(?i)\b(?:proxy-)?authorization[\"']?[ \t]*[:=][ \t]*[\"']?(?:(?:bearer|basic|token|digest)[ \t]+)?"
    r"(?P<secret>[A-Za-z0-9._~+/=-]{8,})"
)
_BEARER = re.compile(r"(?i)\bbearer[ \t]+(?P<secret>(?=[A-Za-z0-9._~+/-]*\d)[A-Za-z0-9._~+/-]{16,}=*)")
_URL_PASSWORD = re.compile(r"://[^\s:/?#@\"'<>]*:(?P<secret>[^\s/?#\"'<>]+)@")
# npm's `//registry/:_authToken=<token>`, whatever the token's shape.
_NPM_AUTH = re.compile(r"/:_authToken=[ \t]*(?P<secret>[^\s\"']+)")
# GitLab's session cookie (`_gitlab_session=<32 of [0-9a-z]>`): the cookie's name stays.
_GITLAB_SESSION = re.compile(r"\b_gitlab_session=(?P<secret>[0-9a-z]{32})(?![0-9a-z])")

_ASSIGNMENT = re.compile(
    # A line start, also behind what tools put there: grep's `path:12:`, a numbered listing's `  12\t`.
    r"(?P<lead>^[ \t]*(?:[\w./-]+[:-](?=\d))?(?:\d+[\t:│|→-][ \t]*)?(?:export[ \t]+|-[ \t]+)?)?"
    # A key starts a word: not inside `a.b` or `a-b` (from where it would re-scan the same word).
    r"(?<![\w.])(?<!\w-)(?P<q>[\"']?)(?P<key>[A-Za-z_][A-Za-z0-9_.-]{0,100})(?P=q)"
    r"(?P<sep>[ \t]*(?::=|=>|=(?!=)|:(?![:/]))[ \t]*)"
    r"(?P<value>\"(?:[^\"\\\n]|\\.)*\"|'(?:[^'\\\n]|\\.)*'|`[^`\n]*`|[^\s,;'\"`()\[\]{}<>&]+)",
    re.MULTILINE,
)
_FLAG = re.compile(r"(?<!\S)--(?P<key>[A-Za-z][A-Za-z0-9-]{2,60})(?:=|[ \t]+)(?P<value>[^\s\"'-][^\s\"']*)")
# A cheap gate: the lines worth the keyword-driven detectors, and the keys worth classifying.
SECRETISH = re.compile(r"(?i)pass|pwd|secret|token|key|auth|cred|pat\b")


def _slug(secret_type: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", secret_type.lower()).strip("-")


def _plugin_rules(plugins: tuple[type[Any], ...]) -> tuple[tuple[str, re.Pattern[str]], ...]:
    return tuple((_slug(p.secret_type), rx) for p in plugins for rx in p.denylist)


_PLUGIN_RULES = _plugin_rules(_DETECT_SECRETS)
# Every rule that knows a token by its shape alone, as (kind, regex): tests hold a sample for each.
TOKEN_RULES = (*_OWN_TOKENS, *_PLUGIN_RULES)
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
                yield start, end, P_PLUGIN, kind


def _assignment_spans(text: str) -> Iterator[Span]:
    for m in _ASSIGNMENT.finditer(text):
        key = m.group("key")
        if not SECRETISH.search(key):
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
        if not value_is_secret(
            value, bare=bare, config_line=env_style, key=key, next_char=text[end : end + 1]
        ):
            continue
        if env_style and bare:
            # .env values run to the end of the line (`SECRET=two words`).
            line_end = text.find("\n", end)
            end = len(text) if line_end < 0 else line_end
            while end > start and text[end - 1] in " \t\r":
                end -= 1
        yield start, end, P_ASSIGN, kind
    for m in _FLAG.finditer(text):
        kind = secret_key_kind(m.group("key"), env_style=False) if SECRETISH.search(m.group("key")) else None
        if kind is not None and not MARKER.match(text, m.start("value")):
            yield m.start("value"), m.end("value"), P_ASSIGN, kind


def _keyword_lines(text: str) -> tuple[str, list[int], list[int]]:
    """The lines that mention a secret-ish word, joined, with where each starts here and in `text`.

    In code or prose ~10% of lines qualify, so the keyword-driven detectors scan a tenth of the text.
    """
    sub_starts: list[int] = []
    orig_starts: list[int] = []
    parts: list[str] = []
    pos = 0
    next_line = 0  # hits before this offset belong to a line already taken
    for m in SECRETISH.finditer(text):
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
        if not MARKER.match(text, m.start("secret")):
            yield m.start("secret"), m.end("secret"), P_CONTEXT, "authorization"
    yield from _assignment_spans(text)


def _context_spans(text: str) -> Iterator[Span]:
    for rx, kind in (
        (_BEARER, "bearer-token"),
        (_URL_PASSWORD, "url-password"),
        (_NPM_AUTH, "npm-token"),
        (_GITLAB_SESSION, "gitlab-token"),
    ):
        for m in rx.finditer(text):
            if not MARKER.match(text, m.start("secret")):
                yield m.start("secret"), m.end("secret"), P_CONTEXT, kind


def spans(text: str) -> Iterator[Span]:
    """Every span a detector finds in `text`, in no particular order; they may overlap."""
    for m in _PRIVATE_KEY.finditer(text):
        yield m.start(), m.end(), P_BLOCK, "private-key"
    for kind, rx in _OWN_TOKENS:
        for m in rx.finditer(text):
            yield m.start(), m.end(), P_TOKEN, kind
    yield from _plugin_spans(text, _PLUGIN_RULES)
    yield from _context_spans(text)
    yield from _keyword_spans(text)
    if ".env" in text:
        yield from ((start, end, P_ASSIGN, ENV_KIND) for start, end in env_files.grep_line_spans(text))
    yield from ((start, end, P_ASSIGN, ENV_KIND) for start, end in env_files.block_spans(text))
