"""Every kind of token the redactor knows, checked against public secret scanners' rules (issue 29, D5).

One case per rule of gitleaks (`config/gitleaks.toml`, the rule ids below) or detect-secrets (its
plugins' `denylist`) for a provider the README names: a sample in the shape that rule matches, saved
in a session file by the session store and read back as bytes. The file must hold the kind's marker
and no 8 characters of the secret. Samples come from a seeded RNG: never real, and never a literal
here for a scanner to flag. Each kind the detectors can name has a case (the last test checks it).

Checked and left to the assignment layer (the key's name, not the token's shape): gitleaks' rules that
need a keyword before the value (discord-client-secret, mailchimp-api-key, telegram-bot-api-token…).
"""

from __future__ import annotations

import random
import re
import string
from pathlib import Path

import pytest

from aforo.messages import Message, ToolResult, ToolUse
from aforo.store.detectors import TOKEN_RULES
from aforo.store.sessions import SessionRecord, SessionStore

_rng = random.Random(2929)
ALNUM = string.ascii_letters + string.digits
LOWER_ALNUM = string.ascii_lowercase + string.digits
UPPER_ALNUM = string.ascii_uppercase + string.digits
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"


def rand(alphabet: str, n: int) -> str:
    return "".join(_rng.choice(alphabet) for _ in range(n))


def with_digit(alphabet: str, n: int) -> str:
    return rand(alphabet, n - 1) + _rng.choice(string.digits)


# (scanner rule, kind of the marker, the secret, the text around it: `{s}` where it goes)
CASES: list[tuple[str, str, str] | tuple[str, str, str, str]] = [
    # Hugging Face: the shape (letters only), and the older tokens with digits.
    ("gitleaks huggingface-access-token", "huggingface-token", "hf_" + rand(string.ascii_letters, 34)),
    (
        "gitleaks huggingface-access-token (lower)",
        "huggingface-token",
        "hf_" + rand(string.ascii_lowercase, 34),
    ),
    ("huggingface with digits", "huggingface-token", "hf_" + with_digit(ALNUM, 34)),
    (
        "gitleaks huggingface-organization-api-token",
        "huggingface-token",
        "api_org_" + rand(string.ascii_letters, 34),
    ),
    (
        "gitleaks openai-api-key",
        "openai-key",
        "sk-proj-" + with_digit(ALNUM + "_-", 74) + "T3BlbkFJ" + rand(ALNUM, 74),
    ),
    (
        "gitleaks openai-api-key (legacy)",
        "openai-key",
        "sk-" + with_digit(ALNUM, 20) + "T3BlbkFJ" + rand(ALNUM, 20),
    ),
    ("gitleaks anthropic-api-key", "anthropic-key", "sk-ant-api03-" + rand(ALNUM + "_-", 93) + "AA"),
    ("gitleaks anthropic-admin-api-key", "anthropic-key", "sk-ant-admin01-" + rand(ALNUM + "_-", 93) + "AA"),
    ("gitleaks gcp-api-key", "google-api-key", "AIza" + rand(ALNUM + "_-", 35)),
    ("gitleaks github-pat", "github-token", "ghp_" + rand(ALNUM, 36)),
    ("gitleaks github-oauth", "github-token", "gho_" + rand(ALNUM, 36)),
    ("gitleaks github-app-token", "github-token", "ghs_" + rand(ALNUM, 36)),
    ("gitleaks github-refresh-token", "github-token", "ghr_" + rand(ALNUM, 36)),
    ("gitleaks github-fine-grained-pat", "github-token", "github_pat_" + rand(ALNUM + "_", 82)),
    ("gitleaks gitlab-pat", "gitlab-token", "glpat-" + rand(ALNUM + "_-", 20)),
    (
        "gitleaks gitlab-pat-routable",
        "gitlab-token",
        "glpat-" + rand(ALNUM + "_-", 40) + "." + rand(LOWER_ALNUM, 9),
    ),
    (
        "gitleaks gitlab-runner-authentication-token-routable",
        "gitlab-token",
        "glrt-t1_" + rand(ALNUM + "_-", 60) + "." + rand(LOWER_ALNUM, 9),
    ),
    ("gitleaks gitlab-deploy-token", "gitlab-token", "gldt-" + rand(ALNUM + "_-", 20)),
    ("gitleaks gitlab-feed-token", "gitlab-token", "glft-" + rand(ALNUM + "_-", 20)),
    ("gitleaks gitlab-feature-flag-client-token", "gitlab-token", "glffct-" + rand(ALNUM + "_-", 20)),
    ("gitleaks gitlab-cicd-job-token", "gitlab-token", "glcbt-" + rand(HEX, 2) + "_" + rand(ALNUM, 20)),
    ("gitleaks gitlab-incoming-mail-token", "gitlab-token", "glimt-" + rand(ALNUM, 25)),
    ("gitleaks gitlab-kubernetes-agent-token", "gitlab-token", "glagent-" + rand(ALNUM, 50)),
    ("gitleaks gitlab-oauth-app-secret", "gitlab-token", "gloas-" + rand(ALNUM, 64)),
    ("gitleaks gitlab-ptt", "gitlab-token", "glptt-" + rand(HEX, 40)),
    ("gitleaks gitlab-rrt", "gitlab-token", "GR1348941" + rand(ALNUM, 20)),
    ("gitleaks gitlab-scim-token", "gitlab-token", "glsoat-" + rand(ALNUM, 20)),
    ("gitleaks gitlab-session-cookie", "gitlab-token", rand(LOWER_ALNUM, 32), "Cookie: _gitlab_session={s}"),
    (
        "gitleaks slack-bot-token",
        "slack-token",
        "xoxb-" + rand(string.digits, 12) + "-" + rand(string.digits, 13) + "-" + rand(ALNUM, 24),
    ),
    (
        "gitleaks slack-user-token",
        "slack-token",
        "xoxp-" + "-".join(rand(string.digits, 12) for _ in range(3)) + "-" + rand(HEX, 32),
    ),
    (
        "gitleaks slack-app-token",
        "slack-token",
        "xapp-1-A" + rand(UPPER_ALNUM, 10) + "-" + rand(string.digits, 13) + "-" + rand(HEX, 64),
    ),
    ("gitleaks slack-config-refresh-token", "slack-token", "xoxe-1-" + rand(UPPER_ALNUM, 146)),
    ("gitleaks slack-config-access-token", "slack-token", "xoxe.xoxp-1-" + rand(UPPER_ALNUM, 164)),
    ("gitleaks slack-legacy-workspace-token", "slack-token", "xoxa-2-" + rand(ALNUM, 40)),
    (
        "detect-secrets slack webhook",
        "slack-token",
        "https://hooks.slack.com/services/T"
        + rand(UPPER_ALNUM, 10)
        + "/B"
        + rand(UPPER_ALNUM, 10)
        + "/"
        + rand(ALNUM, 24),
    ),
    ("gitleaks stripe-access-token (live)", "stripe-key", "sk_live_" + rand(ALNUM, 99)),
    ("gitleaks stripe-access-token (restricted)", "stripe-key", "rk_test_" + rand(ALNUM, 24)),
    ("gitleaks stripe-access-token (prod)", "stripe-key", "sk_prod_" + rand(ALNUM, 32)),
    ("gitleaks aws-access-token", "aws-access-key", "AKIA" + rand("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16)),
    (
        "gitleaks aws-access-token (session)",
        "aws-access-key",
        "ASIA" + rand("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 16),
    ),
    (
        "detect-secrets aws secret key",
        "aws-access-key",
        rand(ALNUM + "/+", 40),
        "aws_secret_access_key = '{s}'",
    ),
    ("gitleaks aws-amazon-bedrock-api-key-long-lived", "aws-bedrock-key", "ABSK" + rand(B64, 128) + "="),
    (
        "gitleaks aws-amazon-bedrock-api-key-short-lived",
        "aws-bedrock-key",
        "bedrock-api-key-YmVkcm9jay5hbWF6b25hd3MuY29t" + rand(B64, 400) + "==",
    ),
    ("gitleaks npm-access-token", "npm-token", "npm_" + rand(ALNUM, 36)),
    ("gitleaks pypi-upload-token", "pypi-token", "pypi-AgEIcHlwaS5vcmc" + rand(ALNUM + "_-", 60)),
    ("gitleaks pypi-upload-token (long)", "pypi-token", "pypi-AgEIcHlwaS5vcmc" + rand(ALNUM + "_-", 160)),
    (
        "detect-secrets sendgrid",
        "sendgrid-api-key",
        "SG." + rand(ALNUM + "_-", 22) + "." + rand(ALNUM + "_-", 43),
    ),
    ("gitleaks twilio-api-key", "twilio-api-key", "SK" + rand(HEX, 32)),
    ("detect-secrets twilio account sid", "twilio-api-key", "AC" + rand(HEX, 32)),
    (
        "detect-secrets azure storage key",
        "azure-storage-account-access-key",
        rand(B64, 86) + "==",
        "DefaultEndpointsProtocol=https;AccountName=app;AccountKey={s};EndpointSuffix=core.windows.net",
    ),
    (
        "gitleaks azure-ad-client-secret",
        "azure-client-secret",
        rand(ALNUM, 3) + rand(string.digits, 1) + "Q~" + rand(ALNUM + "_~.-", 34),
    ),
    (
        "detect-secrets discord bot token",
        "discord-bot-token",
        "M" + rand(ALNUM, 23) + "." + rand(ALNUM, 6) + "." + rand(ALNUM + "_-", 27),
    ),
    (
        "detect-secrets telegram bot token",
        "telegram-bot-token",
        rand(string.digits, 10) + ":A" + rand(ALNUM + "_-", 34),
    ),
    ("detect-secrets mailchimp", "mailchimp-access-key", rand(HEX, 32) + "-us" + rand(string.digits, 2)),
    ("detect-secrets square oauth secret", "square-oauth-secret", "sq0csp-" + rand(ALNUM + "_-", 43)),
    ("gitleaks square-access-token", "square-access-token", "EAAA" + rand(ALNUM + "_-", 60)),
    ("gitleaks square-access-token (legacy)", "square-access-token", "sq0atp-" + rand(ALNUM + "_-", 22)),
    ("gitleaks artifactory-api-key", "artifactory-token", "AKCp" + rand(ALNUM, 69)),
    ("detect-secrets artifactory", "artifactory-credentials", "AKC" + rand(ALNUM, 20), "password {s} here"),
    (
        "detect-secrets artifactory password",
        "artifactory-credentials",
        "AP6" + rand(ALNUM, 20),
        "password {s} here",
    ),
    ("gitleaks artifactory-reference-token", "artifactory-token", "cmVmd" + rand(ALNUM, 59)),
    (
        "gitleaks jwt",
        "jwt",
        "eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCJ9."
        + "eyJzdWIiOiI"
        + rand(ALNUM, 40)
        + "."
        + rand(ALNUM + "_-", 43),
    ),
]


def saved(tmp_path: Path, text: str) -> str:
    """A session in which the user pastes `text`, a Grep finds it in a file and the answer quotes it;
    the file the session store wrote, as text."""
    store = SessionStore(tmp_path / "sessions")
    messages = [
        Message.user(f"the deploy fails with this: {text}\nwhy?"),
        Message("assistant", (ToolUse("c1", "Grep", {"pattern": "deploy"}),)),
        Message("user", (ToolResult("c1", f"config/deploy.yml:12:  {text}"),)),
        Message.assistant(f"The one in config/deploy.yml ({text}) has expired."),
    ]
    path = store.save(SessionRecord(id=store.new_id(), workspace=str(tmp_path), messages=messages))
    return path.read_text(encoding="utf-8")


def survives(secret: str, text: str) -> list[str]:
    """The pieces of 8 characters of `secret` in `text` (markers aside): a secret cut short leaks its
    prefix."""
    text = re.sub(r"\[REDACTED:[a-z0-9-]+\]", "", text)
    return [secret[i : i + 8] for i in range(len(secret) - 7) if secret[i : i + 8] in text]


PARAMS = [(c[0], c[1], c[2], c[3] if len(c) == 4 else "{s}") for c in CASES]


@pytest.mark.parametrize(("rule", "kind", "secret", "around"), PARAMS, ids=[p[0] for p in PARAMS])
def test_each_kind_is_redacted_in_the_session_file(
    tmp_path: Path, rule: str, kind: str, secret: str, around: str
) -> None:
    text = saved(tmp_path, around.format(s=secret))
    assert f"[REDACTED:{kind}]" in text, text
    assert survives(secret, text) == [], f"{rule}: part of the secret is in the session file"


def test_every_rule_of_the_detectors_has_a_case() -> None:
    texts = [around.format(s=secret) for _, _, secret, around in PARAMS]
    missing = [(kind, rx.pattern) for kind, rx in TOKEN_RULES if not any(rx.search(t) for t in texts)]
    assert missing == []
