"""Redaction of hostile text: what a tool output or an answer can be made of, not what code looks like.

Properties over adversarial inputs (token prefixes repeated, long runs of separators, markers, mixed):
redacting twice changes nothing, a secret of the corpus next to the noise is still redacted, and
ordinary code next to the noise survives. Speed by input size lives in bench/redaction.py; here one
test only guards against a hang on the 80 KB inputs that took 34-97 s before the regexes were made
linear.
"""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aforo.store.redact import redact
from test_store_redact import NON_SECRETS, SECRET_CASES

# Pieces the detectors key on, and the separators their gaps run over.
PIECES = (
    "/",
    "//",
    "sk-",
    "sk-ant-",
    "sk-proj-",
    "ghp_",
    "github_pat_",
    "glpat-",
    "glagent-",
    "xoxb-",
    "xoxb-1-",
    "sk_live_",
    "AIza",
    "hf_",
    "npm_",
    "AKIA",
    "eyJ",
    "eyJhbGciOiJIUzI1NiJ9.",
    "pypi-AgEIcHlwaS5vcmc",
    "-----BEGIN RSA PRIVATE KEY-----",
    "-----END RSA PRIVATE KEY-----",
    "PuTTY-User-Key-File-2:",
    "Private-MAC: ",
    "Bearer ",
    "Authorization: ",
    "://",
    "://u:",
    "@",
    "/:_authToken=",
    "password=",
    'token: "',
    "secret: ",
    "API_KEY=",
    "--password ",
    "aws pw'",
    "=AKC",
    "[REDACTED:",
    "[REDACTED:x]",
    "]",
    "     12\t",
    ".env:3:",
    "a/.env-3-",
    "export ",
    "a",
    "A",
    "1",
    "-",
    "_",
    ".",
    ":",
    "=",
    '"',
    "'",
    "`",
    " ",
    "\t",
    "\n",
)

noise = st.lists(st.tuples(st.sampled_from(PIECES), st.integers(1, 40)), max_size=12).map(
    lambda runs: "".join(piece * count for piece, count in runs)
)
SETTINGS = settings(deadline=None, max_examples=150, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(noise)
def test_redacting_twice_changes_nothing(text: str) -> None:
    once = redact(text)
    assert redact(once) == once


@SETTINGS
@given(noise, st.sampled_from(SECRET_CASES), noise)
def test_a_secret_beside_noise_is_still_redacted(before: str, case: tuple[str, str], after: str) -> None:
    template, secret = case
    out = redact(f"{before}\n{template.format(s=secret)}\n{after}")
    assert secret not in out


# Noise that holds no secret of its own: separators and prefixes with nothing after them.
separators = st.lists(
    st.tuples(
        st.sampled_from(("/", "-", "_", ".", ":", "=", " ", "\t", "\n", "*", "#", "'", '"')),
        st.integers(1, 60),
    ),
    max_size=8,
).map(lambda runs: "".join(piece * count for piece, count in runs))


@SETTINGS
@given(separators, st.sampled_from(NON_SECRETS), separators)
def test_ordinary_code_beside_noise_survives(before: str, code: str, after: str) -> None:
    out = redact(f"{before}\n{code}\n{after}")
    assert f"\n{code}\n" in out


def test_a_planted_marker_does_not_shield_what_follows() -> None:
    # A bare "[REDACTED:" (no kind, no closing bracket right after) is text, not a marker.
    secret = "ghp_" + "a1B2c3D4e5" * 4
    out = redact(f"[REDACTED: notes\ntoken {secret} ]")
    assert secret not in out
    assert redact(f"[REDACTED:x] {secret}").startswith("[REDACTED:x] [REDACTED:")


@pytest.mark.timeout(60)  # a hang guard, not a measurement: these take ~0.05 s each, 34-97 s before
@pytest.mark.parametrize(
    "unit",
    ["/", "sk-", "eyJ", "PuTTY-User-Key-File-2:", "pypi-AgEIcHlwaS5vcmc", "://a:", "token a-", "aws pw'"],
)
def test_80kb_of_one_prefix_repeated(unit: str) -> None:
    text = (unit * (80_000 // len(unit) + 1))[:80_000]
    out = redact(text)
    # Whatever is redacted, the rest is the input's own text, in order.
    pos = 0
    for piece in re.split(r"\[REDACTED:[a-z0-9-]+\]", out):
        pos = text.index(piece, pos) + len(piece)
