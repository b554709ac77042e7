"""`make demo`'s answer, measured (issue 37): the README's first command asked as the real-code suite asks
its questions (a fresh aforo process and state directory, at its defaults, an empty prompt cache, the
window `aforo --local` gives the engine), beside that suite's development questions.

It prints the answer whole, for its invented sentences to be counted by hand (no pattern can tell a
sentence the code shows from one it does not), with its length, how the run ended, the loop stops and
the citations. Without AFORO_REAL_BASE_URL it runs itself under `scripts/real-model run --model NAME`
(take /tmp/aforo-real.lock first, as for the suite).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from datetime import UTC, datetime

from aforo.engine.pins import DEFAULT_CTX
from real_canary import machine
from real_code import AFORO, REAL_MODEL, ROOT, Question, ask, erase_cache, pick_model

WORKSPACE = ROOT / "examples" / "demo"
# The Makefile's `demo` target, word for word; right when the answer names the file's three functions.
DEMO = Question(
    "demo",
    "demo",
    "explain",
    "Read wordfreq/counter.py and explain it.",
    r"(?s)(?=.*\bwords\b)(?=.*\bcount_words\b)(?=.*\btop_words\b)",
    source="examples/demo/wordfreq/counter.py: words, count_words, top_words",
)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--model", help="0.5b, 1.5b or an engine model's name (default: the engine's)")
    parser.add_argument("--aforo", default=AFORO, help="the aforo command to ask (default: this checkout's)")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds for the answer (300)")
    args = parser.parse_args(argv)
    pin = pick_model(args.model)
    base_url = os.environ.get("AFORO_REAL_BASE_URL")
    if not base_url:
        cmd = [sys.executable, str(REAL_MODEL), "run", "--reproducible", "--ctx", str(DEFAULT_CTX)]
        return subprocess.call([*cmd, "--model", pin.alias, "--", sys.executable, __file__, *argv])
    erase_cache(base_url)
    flags = ["--base-url", base_url, "-m", os.environ.get("AFORO_REAL_MODEL", pin.alias)]
    o = ask(DEMO, WORKSPACE, flags, args.timeout, args.aforo)
    print(f"make demo's question — {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {machine()}, {pin.alias}")
    print(
        f"{'right' if o.right else 'wrong'}, {o.seconds:.0f} s, {o.ending}, {len(o.answer)} characters, "
        f"loop stops {o.loop_stops}; cites {o.lines_cited} path:line ({o.lines_false} false)"
    )
    print(o.answer)
    return 0


if __name__ == "__main__":
    sys.exit(main())
