"""The list of what is redacted (docs/governor.md), held to a corpus: one case per kind it promises (each
API key provider it names included), every case redacted, and the list and the corpus name the same kinds.

The secrets are generated from a seeded RNG in the shapes the real ones take: never real, and never in
the repository as literals for secret scanners to flag.
"""

from __future__ import annotations

import random
import re
import string
from collections.abc import Callable
from pathlib import Path

import pytest

from aforo.messages import Message, ToolResult, ToolUse
from aforo.store.redact import redact, redact_obj

REDACTION_PAGE = Path(__file__).parent.parent / "docs" / "governor.md"
_rng = random.Random(3303)
ALNUM = string.ascii_letters + string.digits
LOWER_ALNUM = string.ascii_lowercase + string.digits


def rand(alphabet: str, n: int) -> str:
    return "".join(_rng.choice(alphabet) for _ in range(n - 1)) + _rng.choice(string.digits)


def letters(n: int) -> str:
    return "".join(_rng.choice(string.ascii_letters) for _ in range(n))


def pem() -> str:
    return "\n".join(rand(ALNUM + "+/", 64) for _ in range(4))


def env_read(line: str) -> str:
    """`line` as Read shows it from `.env`, inside the conversation that asked for it; what is stored."""
    messages = [
        Message("assistant", (ToolUse("c1", "Read", {"file_path": "app/.env"}),)),
        Message("user", (ToolResult("c1", f"     1\t{line}\n     2\tDEBUG=true"),)),
    ]
    return str(redact_obj([m.to_dict() for m in messages]))


def quoted(line: str) -> str:
    """`line` piped in before a question (`cat .env | aforo …`), and an answer quoting its value in a
    sentence; the session as stored."""
    value = line.partition("=")[2]
    messages = [
        Message.user(f"{line}\n\nIs this setting right?"),
        Message.assistant(f"Yes: the app reads {value} from it."),
    ]
    return str(redact_obj([m.to_dict() for m in messages]))


# kind -> cases of (text with {s} where the secret goes, the secret, how it is stored). A kind with
# one case per provider is a dict.
Case = tuple[str, str, Callable[[str], str]]
PROVIDERS: dict[str, Case] = {
    "OpenAI": ("client = OpenAI(key={s})", "sk-proj-" + rand(ALNUM, 48), redact),
    "Anthropic": ("x = {s}", "sk-ant-api03-" + rand(ALNUM + "-_", 93) + "AA", redact),
    "Google": ("maps({s})", "AIza" + rand(ALNUM + "-_", 35), redact),
    # Letters only, as they are issued (issue 29 D5: the shape public scanners match).
    "Hugging Face": ("login {s}", "hf_" + letters(34), redact),
    "GitHub": ("remote https://{s}@github.com/a/b", "ghp_" + rand(ALNUM, 36), redact),
    "GitLab": ("use {s} here", "glpat-" + rand(ALNUM, 20), redact),
    "Slack": ("bot {s}", "xoxb-" + rand(string.digits, 12) + "-" + rand(ALNUM, 24), redact),
    "Stripe": ("charge with {s}", "sk_live_" + rand(ALNUM, 24), redact),
    "AWS": ("id {s} in the logs", "AKIA" + rand(string.ascii_uppercase + string.digits, 16), redact),
    "npm": ("publish with {s}", "npm_" + rand(ALNUM, 36), redact),
    "PyPI": ("upload {s}", "pypi-AgEIcHlwaS5vcmc" + rand(ALNUM + "-_", 80), redact),
    "SendGrid": ("mail {s}", "SG." + rand(ALNUM, 22) + "." + rand(ALNUM, 43), redact),
    "Twilio": ("sid {s}", "SK" + rand(LOWER_ALNUM, 32), redact),
    "Azure Storage": (
        "DefaultEndpointsProtocol=https;{s};EndpointSuffix=x",
        "AccountKey=" + rand(ALNUM, 88),
        redact,
    ),
    "Microsoft Entra": ("client_id=app {s}", "aB3" + "4Q~" + letters(34), redact),
    "Discord": ("bot {s}", "M" + rand(ALNUM, 23) + "." + rand(ALNUM, 6) + "." + rand(ALNUM, 27), redact),
    "Telegram": ("bot {s}", "123456789:" + rand(ALNUM, 35), redact),
    "Mailchimp": ("list {s}", rand("0123456789abcdef", 32) + "-us12", redact),
    "Square": ("pay {s}", "sq0csp-" + rand(ALNUM, 43), redact),
    "Artifactory": ("repo {s} ok", "AKC" + rand(ALNUM, 20), redact),
}
JWT = "eyJhbGciOiJIUzI1NiJ9." + "eyJzdWIiOiIxMjM0NTY3ODkwIn0." + rand(ALNUM + "-_", 43)
KINDS: dict[str, list[Case]] = {
    "bearer tokens": [
        ("curl -H 'Authorization: Bearer {s}' https://x", rand(ALNUM, 40), redact),
        ("headers = {{'authorization': '{s}'}}", rand(ALNUM, 32), redact),
    ],
    "JSON Web Tokens": [("Set-Cookie: session={s}; HttpOnly", JWT, redact)],
    "passwords in URLs": [("DATABASE_URL=postgres://app:{s}@db:5432/app", rand(ALNUM, 18), redact)],
    "secrets in assignments": [
        ('password = "{s}"', "correct-horse-" + rand(ALNUM, 6), redact),
        ("API_KEY={s}", rand(ALNUM, 30), redact),
        ('{{"client_secret": "{s}"}}', rand(ALNUM, 40), redact),
        ("mysql --password={s} -u root", rand(ALNUM, 12), redact),
        ("  auth_token: {s}", rand(ALNUM, 24), redact),
    ],
    "private keys": [
        ("-----BEGIN RSA PRIVATE KEY-----\n{s}\n-----END RSA PRIVATE KEY-----", pem(), redact),
        ("-----BEGIN OPENSSH PRIVATE KEY-----\n{s}\n-----END OPENSSH PRIVATE KEY-----", pem(), redact),
        ("-----BEGIN EC PRIVATE KEY-----\n{s}\n[output truncated]", pem(), redact),
        (
            "PuTTY-User-Key-File-3: ssh-rsa\nPrivate-Lines: 1\n{s}\nPrivate-MAC: 0a1b2c",
            rand(ALNUM, 64),
            redact,
        ),
    ],
    "`.env` values": [
        ("MY_PLAIN_VALUE={s}", letters(18), env_read),
        ('export GREETING="{s}"', letters(12) + " " + letters(9), env_read),
        ("config/.env.local:4:SOMETHING={s}", letters(16), redact),
    ],
    "`.env`-shaped text anywhere": [
        ("MY_PLAIN_VALUE={s}\n\nwhat is wrong with this?", letters(16), redact),
        ("Here it is:\n\n```\n# app\nexport GREETING={s}\nDEBUG=true\n```\n", letters(12), redact),
        ("     1\tAPP_NAME=demo\n     2\tPLAIN_SETTING={s}", letters(14), redact),
        ("MY_PLAIN_VALUE={s}", rand(ALNUM, 14), quoted),
    ],
    "API keys and tokens": list(PROVIDERS.values()),
}


def documented_kinds() -> dict[str, str]:
    """The bullet list of docs/governor.md after **What is redacted.**: head -> the rest of the bullet."""
    text = REDACTION_PAGE.read_text(encoding="utf-8")
    section = text[text.index("**What is redacted.**") :]
    bullets = re.findall(
        r"^- (.+?)(?=\n- |\n\n)", section[: section.index("\nNot redacted")] + "\n", re.M | re.S
    )
    return dict(tuple(b.split(": ", 1)) for b in bullets)  # type: ignore[misc]


def test_the_docs_list_exactly_the_kinds_of_the_corpus() -> None:
    assert set(documented_kinds()) == set(KINDS)


def test_the_docs_name_exactly_the_providers_of_the_corpus() -> None:
    named = {name.strip() for name in documented_kinds()["API keys and tokens"].replace("\n", " ").split(",")}
    assert named == set(PROVIDERS)


CASES = [(kind, case) for kind, cases in KINDS.items() for case in cases]


@pytest.mark.parametrize(("kind", "case"), CASES, ids=[f"{k}-{i}" for i, (k, _) in enumerate(CASES)])
def test_every_promised_kind_is_redacted(kind: str, case: Case) -> None:
    template, secret, store = case
    out = store(template.format(s=secret))
    assert "[REDACTED:" in out
    assert secret not in out
    for chunk in (secret[i : i + 10] for i in range(len(secret) - 9)):
        if chunk.strip() == chunk and chunk.isalnum():
            assert chunk not in out, f"{kind}: part of the secret survived in {out!r}"


ORDINARY = [
    "max_tokens: 1024",
    "token = self.token",
    'password_field = form.get("password")',
    'api_key = os.environ["OPENAI_API_KEY"]',
    "for key, value in mapping.items():",
    "commit 3f786850e387550fdab836ed7e6dc881de23001b",
    "def login(username: str, password: str) -> Token:",
    # Not of a `.env` file's shape, or among lines that are not: code and prose keep their assignments.
    "Set MY_PLAIN_VALUE=hunter2hunter2 in your shell, then run it.",
    "import os\nMY_PLAIN_VALUE=hunter2hunter2\nprint(MY_PLAIN_VALUE)",
    "MAX_RETRIES = 5\nBASE_NAME = 'hunter2hunter2'",
    "x=1\ny=hunter2hunter2",
    "if A==B:",
]


@pytest.mark.parametrize("code", ORDINARY)
def test_ordinary_code_is_intact(code: str) -> None:
    assert redact(code) == code
