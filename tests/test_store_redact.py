"""Redaction corpus: realistic FAKE secrets must vanish, look-alike code and prose must survive intact.

The secrets are generated from a seeded RNG at import time (never real, never stored in the repository
as literals, so secret scanners have nothing to flag), in the shapes the real ones take.
"""

from __future__ import annotations

import base64
import json
import random
import string

import pytest

from aforo.store import redact as redact_module
from aforo.store.redact import redact, redact_obj

_rng = random.Random(20240601)
ALNUM = string.ascii_letters + string.digits
UPPER_DIGITS = string.ascii_uppercase + string.digits
B64 = ALNUM + "+/"


def rand(alphabet: str, n: int) -> str:
    # At least one digit: real keys of these shapes always carry one, and some detectors rely on it.
    body = "".join(_rng.choice(alphabet) for _ in range(n - 1))
    return body + _rng.choice(string.digits)


def b64url(obj: dict[str, object]) -> str:
    return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")


JWT = ".".join(
    [
        b64url({"alg": "HS256", "typ": "JWT"}),
        b64url({"sub": "1234567890", "name": "Jane Doe", "iat": 1716200000}),
        rand(ALNUM + "-_", 43),
    ]
)
PEM_BODY = "\n".join(rand(B64, 64) for _ in range(6))

# (text with {s} where the secret goes, the secret). Every one must be gone after redaction.
SECRET_CASES: list[tuple[str, str]] = [
    ("OPENAI_API_KEY={s}", "sk-" + rand(ALNUM, 48)),
    ('client = OpenAI(api_key="{s}")', "sk-proj-" + rand(ALNUM + "-_", 120)),
    ("export ANTHROPIC_API_KEY={s}", "sk-ant-api03-" + rand(ALNUM + "-_", 93) + "AA"),
    ("aws_access_key_id = {s}", "AKIA" + rand(UPPER_DIGITS, 16)),
    ("aws_secret_access_key = {s}", rand(B64, 40)),
    ('{{"AccessKeyId": "ASIA{s}"}}', rand(UPPER_DIGITS, 16)),
    ("git remote set-url origin https://{s}@github.com/acme/app.git", "ghp_" + rand(ALNUM, 36)),
    ("GITHUB_TOKEN: {s}", "github_pat_" + rand(ALNUM, 22) + "_" + rand(ALNUM, 59)),
    ("token = '{s}'", "glpat-" + rand(ALNUM + "-_", 20)),
    (
        "SLACK_BOT_TOKEN={s}",
        "xoxb-" + rand(string.digits, 12) + "-" + rand(string.digits, 13) + "-" + rand(ALNUM, 24),
    ),
    ("stripe.api_key = {s}", "sk_live_" + rand(ALNUM, 24)),
    ('const key = "{s}";', "AIza" + rand(ALNUM + "-_", 35)),
    ("HF_TOKEN={s}", "hf_" + rand(ALNUM, 34)),
    ("curl -H 'Authorization: Bearer {s}' https://api.example.com/v1/models", rand(ALNUM + "-._~", 40)),
    ("Authorization: Basic {s}", base64.b64encode(b"admin:" + rand(ALNUM, 12).encode()).decode()),
    ("id_token: {s}", JWT),
    ("Set-Cookie: session={s}; HttpOnly", JWT),
    ("DATABASE_URL=postgres://app_user:{s}@db.internal:5432/app", rand(ALNUM, 18)),
    ("redis://:{s}@cache.example.com:6379/0", rand(ALNUM, 24)),
    ('password = "{s}"', "correct-horse-" + rand(ALNUM, 6)),
    ("DB_PASSWORD={s}", rand(ALNUM + "!#%^", 16)),
    ("  secret: {s}", rand(ALNUM, 32)),
    ('{{"client_secret": "{s}", "grant_type": "client_credentials"}}', rand(ALNUM, 40)),
    ("PGPASSWORD={s} psql -h db -U app", "hunter2" + rand(ALNUM, 4)),
    ("MYSQL_PWD={s}", rand(ALNUM, 14)),
    ("mysql --password={s} -u root", rand(ALNUM, 12)),
    ("Server=db;User Id=sa;Password={s};", rand(ALNUM, 14)),
    ("X-API-Key: {s}", rand(ALNUM, 32)),
    ("https://api.example.com/data?access_token={s}&page=2", rand(ALNUM, 30)),
    ("SECRET_KEY_BASE={s}", rand("0123456789abcdef", 128)),
    ("JWT_SECRET=two words {s}", rand(ALNUM, 10)),
    ("-----BEGIN RSA PRIVATE KEY-----\n{s}\n-----END RSA PRIVATE KEY-----", PEM_BODY),
    ("-----BEGIN OPENSSH PRIVATE KEY-----\n{s}\n-----END OPENSSH PRIVATE KEY-----", PEM_BODY),
    ('"private_key": "-----BEGIN PRIVATE KEY-----\\n{s}\\n-----END PRIVATE KEY-----\\n"', rand(B64, 200)),
    ("-----BEGIN EC PRIVATE KEY-----\n{s}\n[output truncated]", PEM_BODY),
    ("SENDGRID_API_KEY={s}", "SG." + rand(ALNUM + "-_", 22) + "." + rand(ALNUM + "-_", 43)),
    ("//registry.npmjs.org/:_authToken={s}", "npm_" + rand(ALNUM, 36)),
    # .env files as the tools show them: a numbered listing (Read) and grep's path:line: prefix.
    (
        "     3\tSESSION_SECRET={s}\n     4\tDEBUG=true",
        "".join(_rng.choice(string.ascii_letters) for _ in range(24)),
    ),
    (".env:7:WEBHOOK_AUTH={s}", "".join(_rng.choice(string.ascii_letters) for _ in range(20))),
]


@pytest.mark.parametrize(("template", "secret"), SECRET_CASES, ids=[t[:32] for t, _ in SECRET_CASES])
def test_secret_is_redacted(template: str, secret: str) -> None:
    text = template.format(s=secret)
    out = redact(text)
    assert secret not in out
    assert "[REDACTED:" in out
    # Nothing long of the secret survives either (a partial redaction would leak most of it).
    for i in range(0, max(1, len(secret) - 12)):
        chunk = secret[i : i + 12]
        if len(chunk) == 12 and chunk.isalnum():
            assert chunk not in out


def test_corpus_is_big_enough() -> None:
    assert len(SECRET_CASES) >= 25


def test_context_around_a_secret_survives() -> None:
    pw = rand(ALNUM, 16)
    assert redact(f"postgres://admin:{pw}@db.example.com:5432/app") == (
        "postgres://admin:[REDACTED:url-password]@db.example.com:5432/app"
    )
    key = "sk-proj-" + rand(ALNUM, 60)
    # (Beside code: `MODEL=gpt-4o` after it would make the two lines a `.env`-shaped block, all redacted.)
    assert (
        redact(f"OPENAI_API_KEY={key}\nmodel = 'gpt-4o'")
        == "OPENAI_API_KEY=[REDACTED:openai-key]\nmodel = 'gpt-4o'"
    )
    assert redact('password = "hunter2xyz"  # set in CI') == 'password = "[REDACTED:password]"  # set in CI'


NON_SECRETS = [
    'password_field = form.get("password")',
    "token_count = 5",
    "max_tokens: 1024",
    '"max_tokens": 1024,',
    "num_tokens = len(tokens)",
    "tokens_before=4312 tokens_after=849",
    'api_key = os.environ["OPENAI_API_KEY"]',
    "api_key = os.getenv('OPENAI_API_KEY')",
    "client = OpenAI(api_key=api_key, base_url=base_url)",
    "token = self.token",
    "password: str",
    "    password: str = Field(..., min_length=8)",
    "def login(username: str, password: str) -> Token:",
    "    auth: AuthTypes | None = None,",
    "        auth=auth,",
    "secret = None",
    "if password == confirm_password:",
    "PASSWORD_MIN_LENGTH = 12",
    'TOKEN_URL = "https://oauth2.googleapis.com/token"',
    '"token_type": "bearer",',
    "password: ${DB_PASSWORD}",
    "api_key: {{ secrets.OPENAI_API_KEY }}",
    'API_KEY_ENV = "OPENAI_API_KEY"',
    "GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }}",
    "The tokenizer splits text into tokens; see docs/tokens.md.",
    "Use a bearer token in the Authorization header.",
    "commit 3f786850e387550fdab836ed7e6dc881de23001b",
    "sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "https://example.com:8080/path?page=2&sort=desc",
    "git clone git@github.com:acme/app.git",
    "import secrets\nnonce = secrets.token_hex(16)",
    "key = cache_key(request)",
    "sort_key = lambda item: item[0]",
    "primary_key=True, index=True",
    "for key, value in mapping.items():",
    "uuid: 123e4567-e89b-12d3-a456-426614174000",
    "ctx 882/4.1k (22%)",
    "[end_turn] 3 turns, 8 tool calls, 3512 input tokens, 529 output tokens",
    "the task-management-and-scheduling-tool-2024 module",
    "scikit-learn==1.5.0",
    "password_hash = bcrypt.hashpw(password.encode(), bcrypt.gensalt())",
    "is_secret: true",
    "auth_type: oauth2",
    "Password: ********",
    "token_limit = 25_000",
    "const apiKey = process.env.API_KEY;",
    "    expires_at: datetime",
    "src/client.py:120:        auth=auth,",
    "    12\t    token = self._token",
    "     3\tDEBUG=true",
]


@pytest.mark.parametrize("text", NON_SECRETS)
def test_look_alike_is_left_alone(text: str) -> None:
    assert redact(text) == text


def test_redaction_is_idempotent() -> None:
    text = "\n".join(t.format(s=s) for t, s in SECRET_CASES)
    once = redact(text)
    assert redact(once) == once


def test_redact_obj_walks_structures_and_judges_keys() -> None:
    key = "ghp_" + rand(ALNUM, 36)
    obj = {
        "messages": [{"role": "user", "content": [{"type": "text", "text": f"my token is {key}"}]}],
        "extra": {"password": "plainword", "password_field": "pw", "max_tokens": 1024, "nested": ("a", key)},
    }
    out = redact_obj(obj)
    assert key not in json.dumps(out)
    assert out["extra"]["password"] == "[REDACTED:password]"
    assert out["extra"]["password_field"] == "pw"
    assert out["extra"]["max_tokens"] == 1024
    assert obj["extra"]["password"] == "plainword"  # the input is not mutated


def test_memo_is_bounded_by_size() -> None:
    memo = redact_module._Memo(max_chars=1000)
    texts = [f"{i:04d} " + "plain text " * 20 for i in range(50)]
    for text in texts:
        assert memo.get(text) == text
    assert memo.chars <= 1000
    assert texts[-1] in memo.items and texts[0] not in memo.items


def test_a_100kb_conversation_is_redacted_whole() -> None:
    lines = []
    code = [t for t in NON_SECRETS] + ["    return self._client.request(method, url, **kwargs)"] * 5
    while sum(len(x) + 1 for x in lines) < 100_000:
        lines.extend(code)
        template, secret = SECRET_CASES[len(lines) % len(SECRET_CASES)]
        lines.append(template.format(s=secret))
    text = "\n".join(lines)
    out = redact(text)
    # Speed lives in bench/redaction.py; here, every secret of the large text is gone.
    for _template, secret in SECRET_CASES:
        assert secret not in out
    assert out.count("return self._client.request(method, url, **kwargs)") == text.count(
        "return self._client.request(method, url, **kwargs)"
    )
