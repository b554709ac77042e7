"""Redaction speed: secrets are scrubbed from every checkpoint and session before it reaches disk, and
sessions are saved after every turn, so this cost is paid per turn.

Two targets. A realistic 100 KB conversation takes under 1 s. And on adversarial text (one token
prefix or separator repeated: the shapes that made the old regexes quadratic, 34-97 s for 80 KB of
`/` or `sk-`) the time grows linearly: for sizes x1, x2, x4, x8 it prints the time per size, and the
x8 / x1 ratio must stay under 16 (linear is ~8, quadratic ~64), with the 80 KB case under 1 s.
"""

from __future__ import annotations

import random
import string
import sys
import time

from aforo.store.redact import redact

BASE = 10_000  # characters; the largest size is 8 x BASE = 80 KB
MAX_RATIO = 16.0
MIN_MS = 20.0
MAX_LARGEST_MS = 1000.0

# Each unit is repeated to the size measured: token prefixes whose tails would run over the repeats,
# separators that regexes with unbounded gaps backtrack over, and the context words of the keyword
# detectors.
ADVERSARIAL = (
    "/",
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
    "eyJaaaaaaaaa.",
    "pypi-AgEIcHlwaS5vcmc",
    "-----BEGIN RSA PRIVATE KEY-----",
    "-----END PRIVATE KEY-----",
    "PuTTY-User-Key-File-2:",
    "Bearer ",
    "Authorization: ",
    "://",
    "://a:",
    "//a/:_authToken=",
    "a-",
    "a",
    " ",
    "\n",
    '"',
    'token="',
    "token a-",
    "password=",
    "aws pw'",
    "awspw'awspw'aws",
    "=AKC",
    "1",
    "[REDACTED:",
    "     12\t",
    ".env:3:",
    "a/b/.env-3-",
    "x-api-key: ",
    "--password ",
)


def conversation_text(size: int, seed: int = 7) -> str:
    rnd = random.Random(seed)
    lines: list[str] = []
    while sum(len(x) + 1 for x in lines) < size:
        n = len(lines)
        lines.append(f"    result_{n} = self._client.request(method, url, timeout={n % 30})")
        if n % 50 == 0:
            key = "".join(rnd.choices(string.ascii_letters + string.digits, k=40))
            lines.append(f'OPENAI_API_KEY="sk-proj-{key}"')
    return "\n".join(lines)


def timed(text: str) -> float:
    """Milliseconds for one redaction, best of 3; a fresh variant each run so the memo cannot answer."""
    runs = []
    for i in range(3):
        variant = f"{text}\n# run {i} {time.perf_counter_ns()}"
        started = time.perf_counter()
        redact(variant)
        runs.append(time.perf_counter() - started)
    return min(runs) * 1000


def main() -> int:
    failed = []
    text = conversation_text(100_000)
    best = timed(text)
    print(f"conversation of {len(text)} characters: {best:.0f} ms (target < 1000 ms)")
    if best >= 1000:
        failed.append("conversation")

    sizes = [BASE * k for k in (1, 2, 4, 8)]
    print(f"\nadversarial input, ms per size ({', '.join(f'{s // 1000} KB' for s in sizes)}) and x8/x1:")
    for unit in ADVERSARIAL:
        times = [timed((unit * (size // len(unit) + 1))[:size]) for size in sizes]
        # Below MIN_MS the growth is timer noise, not the algorithm's: only the size target applies.
        ratio = times[-1] / times[0] if times[-1] >= MIN_MS else 0.0
        bad = ratio >= MAX_RATIO or times[-1] >= MAX_LARGEST_MS
        cells = " ".join(f"{t:8.1f}" for t in times)
        growth = f"x{ratio:4.1f}" if ratio else "  fast"
        print(f"  {unit!r:36} {cells}   {growth}{'  <- MISSED' if bad else ''}")
        if bad:
            failed.append(repr(unit))
    if failed:
        print(f"targets missed: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
