"""The real-code suite (issues 32 and 33): `make bench-real`, beside the real-model task suite.

Questions a new user asks about real third-party code, none of it aforo's own or its dependencies:
click 8.1.7, itsdangerous 2.2.0 and python-dotenv 1.0.1, fetched by the bench itself as the sdists
pinned below (`pip download --no-deps --no-binary :all:`), refused unless their sha256 matches, unpacked
to a temporary directory. The workspace is the package's own directory (`src/click`, 17 files), as when
a user runs aforo in it. Held out for issue 41: requests 2.32.3 at its sdist's root (its README says what
it does) and the JavaScript package debug 4.3.7 (`npm pack`, hash-checked the same way).

Each question is asked the way a user does: the `aforo` command, one process per question, at its
defaults, against the engine's llama-server at the window `aforo --local` gives it, from an empty prompt
cache. The only flags are the ones --local sets for the user (the server and the model) and --json to
read the answer: no --temperature unless asked for by this bench's own flag. A piped question gets the
file on standard input, as `cat file | aforo QUESTION`.

Scored strictly on the whole answer: right when the run ended `end_turn`, the answer matches the
question's pattern, and it matches none of the patterns a wrong answer would. The answers were checked by
hand in the sources (the line is named beside each question). Reported per question and per kind, with
seconds per answer, how each run ended, and the peak memory of llama-server.

Without AFORO_REAL_BASE_URL it runs itself under `scripts/real-model run --model NAME` (one real model at
a time: take /tmp/aforo-real.lock, as `make bench-real` does).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import re
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from aforo.engine.pins import DEFAULT_CTX, MODELS, ModelPin, model_named  # noqa: E402
from aforo.loop.cited import Checker  # noqa: E402
from aforo.loop.copied import copied_format  # noqa: E402
from aforo.tools.registry import default_registry  # noqa: E402
from real_canary import machine  # noqa: E402

AFORO = str(Path(sys.executable).parent / "aforo")
REAL_MODEL = ROOT / "scripts" / "real-model"
# The budget for "what does this package do?" on ~15 files: longer runs are stopped and counted
# as the run's ending `timeout`, not waited for.
TIMEOUT_S = 180.0


@dataclass(frozen=True)
class Package:
    requirement: str
    sha256: str  # of the sdist (npm: the tarball) the package index serves
    directory: str  # the package inside the unpacked sdist: the workspace ("": all of it)
    npm: bool = False  # from the npm registry (`npm pack`), not PyPI


PACKAGES = {
    "click": Package(
        "click==8.1.7", "ca9853ad459e787e2192211578cc907e7594e294c7ccc834310722b41b9ca6de", "src/click"
    ),
    "itsdangerous": Package(
        "itsdangerous==2.2.0",
        "e0050c0b7da1eea53ffaf149c0cfbb5c6e2e2b69c4bef22c81fa6eb73e5f6173",
        "src/itsdangerous",
    ),
    "dotenv": Package(
        "python-dotenv==1.0.1",
        "e324ee90a023d808f1959c46bcbc04446a10ced277783dc6ee09987c37ec10ca",
        "src/dotenv",
    ),
    # Held out whole (issue 37): no question about it was asked before the changes of that round.
    "packaging": Package(
        "packaging==24.1",
        "026ed72c8ed3fcce5bf8950572258698927fd1dbda10a5e981cdf0ac37f4f002",
        "src/packaging",
    ),
    # Held out (issue 41): a project whose front page (README.md) says what it does, asked at its root as
    # a user who cloned it would; and a JavaScript one.
    "requests": Package(
        "requests==2.32.3", "55365417734eb18255590a9ff9eb97e9e1da868d4ccd6402399eaf68af20a760", ""
    ),
    "debug": Package(
        "debug@4.3.7", "c803a8ca9b835b7a75f7150ee52f7f640675515bafbe8f5da78fcc0ae12914ac", "", npm=True
    ),
}

KINDS = ("overview", "where", "calls", "imports", "returns", "default", "compare", "piped")


@dataclass(frozen=True)
class Question:
    id: str
    package: str
    kind: str
    prompt: str
    expect: str  # the right answer matches it (case-insensitive)
    reject: str = ""  # a wrong answer matches it
    piped: str = ""  # a file of the package given on standard input
    source: str = ""  # where the answer is, checked by hand
    # Written after the changes the first sixteen's wrong answers led to, and never used to make one: a
    # check that those changes were not fitted to the sixteen.
    held_out: bool = False


def _others(right: str, modules: str) -> str:
    """A pattern for the modules of `modules` other than `right`, named as files."""
    return r"\b(" + "|".join(m for m in modules.split() if m != right) + r")\.py\b"


CLICK_MODULES = (
    "core decorators exceptions formatting globals parser shell_completion termui testing types utils"
)
ITS_MODULES = "encoding exc serializer signer timed url_safe _json"
DOTENV_MODULES = "cli ipython main parser variables version"
PACKAGING_MODULES = (
    "_elffile _manylinux _musllinux _parser _structures _tokenizer markers metadata requirements "
    "specifiers tags utils version"
)

QUESTIONS = (
    Question(
        "click-overview",
        "click",
        "overview",
        "What does this package do?",
        r"command[- ]line|\bCLIs?\b",
        source="README: a package for creating command line interfaces",
    ),
    Question(
        "click-group",
        "click",
        "where",
        "Where is the group decorator defined?",
        r"decorators\.py",
        source="decorators.py:258-300 (def group, overloads then the body)",
    ),
    Question(
        "click-echo-nl",
        "click",
        "default",
        "What is the default value of the nl parameter of echo?",
        r"\bTrue\b",
        r"\bnl\b[^.\n]{0,30}\bFalse\b",
        source="utils.py:222 nl: bool = True",
    ),
    Question(
        "click-enum",
        "click",
        "imports",
        "Which module imports enum?",
        r"\bcore(\.py)?\b",
        _others("core", CLICK_MODULES),
        source="core.py:1 import enum (the only one)",
    ),
    Question(
        "click-globals",
        "click",
        "piped",
        "summarize",
        # The module, not the package: the current context and its stack (an answer about parameters and
        # shell completion read the package instead, and named "context" in passing).
        r"(current|push|pop|stack)\W+(\w+\W+){0,3}contexts?\b|\bcontexts?\W+(\w+\W+){0,4}(stack|push|pop)",
        piped="globals.py",
        source="globals.py: get_current_context, push_context, pop_context, resolve_color_default",
    ),
    Question(
        "its-overview",
        "itsdangerous",
        "overview",
        "What does this package do?",
        r"\bsign(s|ed|ing|ature|atures|er|ers)?\b",
        source="__init__.py: Signer, TimestampSigner, Serializer (signed data)",
    ),
    Question(
        "its-zlib",
        "itsdangerous",
        "imports",
        "Which module imports zlib?",
        r"url_safe",
        _others("url_safe", ITS_MODULES),
        source="url_safe.py:4 import zlib (the only one)",
    ),
    Question(
        "its-derivation",
        "itsdangerous",
        "default",
        "What is the default key derivation of Signer?",
        r"django-concat",
        source='signer.py:127 default_key_derivation: str = "django-concat"',
    ),
    Question(
        "its-derive-key",
        "itsdangerous",
        "calls",
        "What calls derive_key?",
        r"(?s)(?=.*\bget_signature\b)(?=.*\bverify_signature\b)",
        source="signer.py:218 (Signer.get_signature) and 237 (Signer.verify_signature), nothing else",
    ),
    Question(
        "its-timestamp",
        "itsdangerous",
        "returns",
        "What does get_timestamp return?",
        r"\bint(eger)?s?\b",
        r"\bfloat\b",
        source="timed.py:29-33 def get_timestamp(self) -> int: return int(time.time())",
    ),
    Question(
        "its-longer",
        "itsdangerous",
        "compare",
        "Which file is longer, signer.py or timed.py?",
        r"signer\.py",
        r"timed\.py\W+(is|has)\W+(the\W+)?(longer|more)",
        source="signer.py 266 lines, timed.py 228",
    ),
    Question(
        "dotenv-overview",
        "dotenv",
        "overview",
        "What does this package do?",
        r"\.env\b|environment variables?",
        source="main.py: load_dotenv reads key-value pairs from a .env file into the environment",
    ),
    Question(
        "dotenv-find",
        "dotenv",
        "where",
        "Where is find_dotenv defined?",
        r"\bmain\.py\b",
        source="main.py:275 def find_dotenv(",
    ),
    Question(
        "dotenv-load-returns",
        "dotenv",
        "returns",
        "What does load_dotenv return?",
        r"\bbool(ean)?\b|\bTrue\b",
        r"\breturns?\W+(None|a dict)",
        source="main.py:328 -> bool; True if at least one environment variable is set",
    ),
    Question(
        "dotenv-shlex",
        "dotenv",
        "imports",
        "Which module imports shlex?",
        r"\bcli(\.py)?\b",
        _others("cli", DOTENV_MODULES),
        source="cli.py:3 import shlex (the only one)",
    ),
    Question(
        "dotenv-encoding",
        "dotenv",
        "piped",
        "What is the default encoding of load_dotenv?",
        r"utf-?8",
        piped="main.py",
        source='main.py:327 encoding: Optional[str] = "utf-8"',
    ),
    Question(
        "click-push",
        "click",
        "calls",
        "What calls push_context?",
        r"__enter__",
        source="core.py:455 Context.__enter__ (the only call)",
        held_out=True,
    ),
    Question(
        "click-secho-err",
        "click",
        "default",
        "What is the default value of err in secho?",
        r"\bFalse\b",
        r"\bTrue\b",
        source="termui.py:607 err: bool = False",
        held_out=True,
    ),
    Question(
        "its-hmac",
        "itsdangerous",
        "imports",
        "Which module imports hmac?",
        r"\bsigner(\.py)?\b",
        _others("signer", ITS_MODULES),
        source="signer.py:5 import hmac (the only one)",
        held_out=True,
    ),
    Question(
        "its-urlsafe",
        "itsdangerous",
        "where",
        "Where is URLSafeSerializer defined?",
        r"\burl_safe\.py\b",
        _others("url_safe", ITS_MODULES),
        source="url_safe.py:72 class URLSafeSerializer(",
        held_out=True,
    ),
    Question(
        "its-urlsafe-piped",
        "itsdangerous",
        "piped",
        "What does this module add to a serializer?",
        r"compress|zlib|url.?safe|base64",
        piped="url_safe.py",
        source="url_safe.py:16 zlib compression and URL-safe base64",
        held_out=True,
    ),
    Question(
        "dotenv-parse-stream",
        "dotenv",
        "where",
        "Where is parse_stream defined?",
        r"\bparser\.py\b",
        _others("parser", DOTENV_MODULES),
        source="parser.py:172 def parse_stream(",
        held_out=True,
    ),
    Question(
        "dotenv-get-key",
        "dotenv",
        "returns",
        "What does get_key return?",
        r"(?s)(?=.*\bNone\b)(?=.*\b(value|str|string)\b)",
        source="main.py:121 -> Optional[str]: the key's value, None if it is not found or has none",
        held_out=True,
    ),
    Question(
        "dotenv-longer",
        "dotenv",
        "compare",
        "Which file is longer, parser.py or main.py?",
        r"\bmain\.py",
        r"parser\.py\W+(is|has)\W+(the\W+)?(longer|more)",
        source="main.py 392 lines, parser.py 175",
        held_out=True,
    ),
    # Issue 37's held-out eight, on packaging 24.1 (src/packaging, 15 files, 4 615 lines), written after
    # that round's changes (the citation check, copied formats, the DRY sampler) and never used to make one.
    Question(
        "pkg-canonicalize",
        "packaging",
        "where",
        "Where is canonicalize_name defined?",
        r"\butils\.py\b",
        _others("utils", PACKAGING_MODULES),
        source="utils.py:45 def canonicalize_name(",
        held_out=True,
    ),
    Question(
        "pkg-invalid-version",
        "packaging",
        "where",
        "Where is InvalidVersion defined?",
        r"\bversion\.py\b",
        _others("version", PACKAGING_MODULES),
        source="version.py:59 class InvalidVersion(ValueError)",
        held_out=True,
    ),
    Question(
        "pkg-letter-version",
        "packaging",
        "calls",
        "What calls _parse_letter_version?",
        r"__init__",
        source="version.py:208, 209, 212, all in Version.__init__ (nothing else)",
        held_out=True,
    ),
    Question(
        "pkg-ast",
        "packaging",
        "imports",
        "Which module imports ast?",
        r"\b_parser(\.py)?\b",
        _others("_parser", PACKAGING_MODULES),
        source="_parser.py:9 import ast (the only one)",
        held_out=True,
    ),
    Question(
        "pkg-parse-tag",
        "packaging",
        "returns",
        "What does parse_tag return?",
        r"frozenset",
        source="tags.py:96 def parse_tag(tag: str) -> frozenset[Tag]",
        held_out=True,
    ),
    Question(
        "pkg-prereleases",
        "packaging",
        "default",
        "What is the default value of prereleases in SpecifierSet?",
        r"\bNone\b",
        r"\bdefaults?\W+(\w+\W+){0,4}(True|False)\b",
        source='specifiers.py:697 def __init__(self, specifiers: str = "", prereleases: bool | None = None)',
        held_out=True,
    ),
    Question(
        "pkg-longer",
        "packaging",
        "compare",
        "Which file is longer, tags.py or markers.py?",
        r"\btags\.py",
        r"markers\.py\W+(is|has)\W+(the\W+)?(longer|more)",
        source="tags.py 568 lines, markers.py 325",
        held_out=True,
    ),
    Question(
        "pkg-canonicalize-piped",
        "packaging",
        "piped",
        "What does canonicalize_name do?",
        r"lower|normali[sz]",
        piped="utils.py",
        source='utils.py:45-50: runs of "-", "_", "." become "-", then lower case (PEP 503)',
        held_out=True,
    ),
    # Issue 41's held-out questions: written after its changes, never used to make one.
    Question(
        "requests-overview",
        "requests",
        "overview",
        "What does this package do?",
        r"\bHTTP\b",
        source="README.md: Requests is a simple, yet elegant, HTTP library",
        held_out=True,
    ),
    Question(
        "debug-overview",
        "debug",
        "overview",
        "What does this package do?",
        r"debugging|\bdebug (messages|output|statements|logs?)\b|\blogging\b",
        source="package.json: Lightweight debugging utility for Node.js and the browser",
        held_out=True,
    ),
    Question(
        "debug-tty",
        "debug",
        "imports",
        "Which module imports tty?",
        r"\bnode(\.js)?\b",
        r"\b(browser|common|index)\.js\b",
        source="src/node.js:5 const tty = require('tty') (the only one)",
        held_out=True,
    ),
    Question(
        "debug-select-color",
        "debug",
        "calls",
        "What calls selectColor?",
        r"\bcreateDebug\b",
        source="src/common.js:118 debug.color = createDebug.selectColor(namespace), in createDebug",
        held_out=True,
    ),
    Question(
        "debug-setup",
        "debug",
        "where",
        "Where is setup defined?",
        r"\bcommon\.js\b",
        r"\b(browser|node|index)\.js\b",
        source="src/common.js:7 function setup(env)",
        held_out=True,
    ),
    Question(
        "debug-longer",
        "debug",
        "compare",
        "Which file is longer, browser.js or node.js?",
        r"\bbrowser\.js",
        r"node\.js\W+(is|has)\W+(the\W+)?(longer|more)",
        source="src/browser.js 271 lines, src/node.js 263",
        held_out=True,
    ),
)

BY_ID = {q.id: q for q in QUESTIONS}


@dataclass
class Outcome:
    id: str
    kind: str
    right: bool
    seconds: float
    ending: str
    turns: int
    tool_calls: int
    answer: str
    # Counted by this bench on the final answer, with aforo's own check (aforo.citations) against the
    # workspace, whatever aforo ran: `path:line` citations, how many of them false, and how many of the
    # false ones the run's result did not mark (an older aforo marks none).
    lines_cited: int = 0
    lines_false: int = 0
    unmarked: int = 0
    copied: bool = False  # the final answer is one of aforo's own formats
    asked_in_words: int = 0  # answers that were a copied format, asked again in words by the run
    corrections: int = 0  # answers whose citations did not hold, sent back once by the run
    loop_stops: int = 0  # answers aforo stopped as they looped


def fetch(names: set[str], dest: Path) -> dict[str, Path]:
    """Each package's directory, from its pinned sdist: downloaded, hash-checked, unpacked under `dest`."""
    found = {}
    for name in sorted(names):
        package = PACKAGES[name]
        into = dest / name
        into.mkdir(parents=True)
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", "-d", str(into)]
        if package.npm:
            cmd = ["npm", "pack", "--silent", "--pack-destination", str(into)]
        done = subprocess.run([*cmd, package.requirement], capture_output=True, text=True, check=False)
        sdists = sorted([*into.glob("*.tar.gz"), *into.glob("*.tgz")])
        if done.returncode or len(sdists) != 1:
            raise SystemExit(f"real-code: could not download {package.requirement}:\n{done.stderr[-1500:]}")
        digest = hashlib.sha256(sdists[0].read_bytes()).hexdigest()
        if digest != package.sha256:
            raise SystemExit(
                f"real-code: {sdists[0].name} has sha256 {digest}, pinned {package.sha256}: refused"
            )
        with tarfile.open(sdists[0]) as tar:
            tar.extractall(into, filter="data")
        [top] = [p for p in into.iterdir() if p.is_dir()]
        found[name] = top / package.directory
    return found


def ask(question: Question, workspace: Path, flags: list[str], timeout: float, aforo: str = AFORO) -> Outcome:
    """One question in a fresh aforo process and state directory, as a user's first run."""
    piped = (workspace / question.piped).read_text() if question.piped else ""
    with tempfile.TemporaryDirectory(prefix="aforo-real-code-") as tmp:
        env = {k: v for k, v in os.environ.items() if not k.startswith("AFORO_")}
        env |= {"AFORO_HOME": f"{tmp}/state", "XDG_CONFIG_HOME": f"{tmp}/config", "NO_COLOR": "1"}
        started = time.monotonic()
        try:
            done = subprocess.run(
                [aforo, "-w", str(workspace), *flags, "--json", question.prompt],
                input=piped,
                capture_output=True,
                text=True,
                env=env,
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            # What it did until then: its tool calls and the text it had streamed.
            out = exc.stdout.decode(errors="replace") if isinstance(exc.stdout, bytes) else exc.stdout or ""
            events = _events(out)
            calls = sum(e.get("type") == "tool_start" for e in events)
            text = "".join(str(e.get("text", "")) for e in events if e.get("type") == "text_delta")
            seconds = round(time.monotonic() - started, 1)
            timed_out = Outcome(question.id, question.kind, False, seconds, "timeout", 0, calls, text)
            return counted(timed_out, workspace, events, {})
        seconds = round(time.monotonic() - started, 1)
    events = _events(done.stdout)
    result = events[-1] if events and events[-1].get("type") == "result" else {}
    ending = str(result.get("ending") or f"no result (exit {done.returncode}): {done.stderr.strip()[-200:]}")
    answer = str(result.get("answer") or "")
    outcome = Outcome(
        question.id,
        question.kind,
        is_right(question, answer, ending),
        seconds,
        ending,
        int(result.get("turns") or 0),
        int(result.get("tool_calls") or 0),
        answer,
    )
    return counted(outcome, workspace, events, result)


def counted(
    outcome: Outcome, workspace: Path, events: list[dict[str, Any]], result: dict[str, Any]
) -> Outcome:
    """The outcome with its citations, copied formats and loop stops counted."""
    lines = [v for v in Checker(workspace)(outcome.answer) if v.citation.start is not None]
    false = [v for v in lines if not v.held]
    marked = {c.get("text") for c in result.get("citations") or () if not c.get("held")}
    steps = [str(e.get("step", "")) for e in events if e.get("type") == "info"]
    warnings = [str(e.get("message", "")) for e in events if e.get("type") == "warning"]
    outcome.lines_cited, outcome.lines_false = len(lines), len(false)
    outcome.unmarked = sum(v.citation.text not in marked for v in false)
    outcome.copied = bool(copied_format(outcome.answer, default_registry(workspace).specs))
    outcome.asked_in_words = sum("aforo's own format" in s for s in steps)
    outcome.corrections = sum("cites what does not hold" in s for s in steps)
    outcome.loop_stops = sum("repeating itself" in w for w in warnings)
    return outcome


def _events(out: str) -> list[dict[str, Any]]:
    events = []
    for line in out.splitlines():
        with contextlib.suppress(ValueError):  # a line cut by the timeout
            events.append(json.loads(line))
    return [e for e in events if isinstance(e, dict)]


def is_right(question: Question, answer: str, ending: str) -> bool:
    if ending != "end_turn" or not re.search(question.expect, answer, re.I):
        return False
    return not (question.reject and re.search(question.reject, answer, re.I))


def erase_cache(base_url: str) -> None:
    """An empty prompt cache before each question, as the engine `aforo --local` starts for one run."""
    with contextlib.suppress(httpx.HTTPError):
        httpx.post(f"{base_url.removesuffix('/v1')}/slots/0?action=erase", timeout=30)


def peak_mb(pid: str | None) -> str:
    """llama-server's peak resident memory (VmHWM), the weights it mapped included."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except (OSError, TypeError):
        return "unknown"
    found = re.search(r"^VmHWM:\s+(\d+) kB", status, re.M)
    return f"{int(found.group(1)) / 1024:.0f} MB" if found else "unknown"


def endings(outcomes: list[Outcome]) -> str:
    names = [o.ending for o in outcomes]
    return ", ".join(f"{e} ×{names.count(e)}" for e in dict.fromkeys(names))


def by_kind(outcomes: list[Outcome]) -> str:
    lines = ["| kind | right | seconds per answer (median, max) | endings |", "|---|---|---|---|"]
    for kind in KINDS:
        group = [o for o in outcomes if o.kind == kind]
        if group:
            seconds = [o.seconds for o in group]
            lines.append(
                f"| {kind} | {sum(o.right for o in group)} of {len(group)} "
                f"| {statistics.median(seconds):.0f} s, {max(seconds):.0f} s | {endings(group)} |"
            )
    return "\n".join(lines)


def checked(outcomes: list[Outcome]) -> str:
    """What the answers cite and copy, counted over the run (issue 37)."""
    chars = [len(o.answer) for o in outcomes]
    return (
        f"citations: {sum(o.lines_cited for o in outcomes)} path:line in the answers, "
        f"{sum(o.lines_false for o in outcomes)} false ({sum(o.unmarked for o in outcomes)} shown unmarked); "
        f"formats copied: {sum(o.copied for o in outcomes)} answers (asked again in words: "
        f"{sum(o.asked_in_words for o in outcomes)}); corrections asked: "
        f"{sum(o.corrections for o in outcomes)}; "
        f"loop stops: {sum(o.loop_stops for o in outcomes)}; answer length: median "
        f"{statistics.median(chars):.0f} characters, at most {max(chars)}"
    )


def by_question(outcomes: list[Outcome]) -> str:
    lines = [
        "| question | kind | right | seconds | ending | turns | tool calls | answer |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for o in outcomes:
        said = " ".join(o.answer.split())[:90].replace("|", "\\|")
        lines.append(
            f"| {o.id} | {o.kind} | {'yes' if o.right else 'no'} | {o.seconds:.0f} | {o.ending} | {o.turns} "
            f"| {o.tool_calls} | {said!r} |"
        )
    return "\n".join(lines)


def pick_model(value: str | None) -> ModelPin:
    """An engine model by the name it is served as, or by its size (`0.5b`, `1.5b`)."""
    sized = [pin for pin in MODELS if value and f"-{value.lower()}-" in pin.alias]
    return sized[0] if len(sized) == 1 else model_named(value)


def run_under_engine(pin: ModelPin, argv: list[str]) -> int:
    """This bench again, under a private llama-server of `pin` at the window --local gives it."""
    cmd = [sys.executable, str(REAL_MODEL), "run", "--reproducible", "--ctx", str(DEFAULT_CTX)]
    cmd += ["--model", pin.alias, "--", sys.executable, __file__, *argv]
    return subprocess.call(cmd)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--model", help="0.5b, 1.5b or an engine model's name (default: the engine's default)"
    )
    parser.add_argument("--only", action="append", metavar="ID", help="ask this question (default: all)")
    parser.add_argument("--kind", action="append", choices=KINDS, help="ask the questions of this kind")
    parser.add_argument("--held-out", action="store_true", help="ask only the held-out questions")
    parser.add_argument(
        "--package", action="append", choices=sorted(PACKAGES), help="ask the questions about this package"
    )
    parser.add_argument(
        "--temperature", help="pass --temperature to aforo (default: none, as a user runs it)"
    )
    parser.add_argument(
        "--timeout", type=float, default=TIMEOUT_S, help=f"seconds per question ({TIMEOUT_S:.0f})"
    )
    parser.add_argument(
        "--no-search",
        action="store_true",
        help="pass --no-search to aforo, to measure what the pre-search adds (default: on, as users run it)",
    )
    parser.add_argument("--json", type=Path, help="also write the outcomes here as JSON")
    parser.add_argument(
        "--aforo",
        default=AFORO,
        help="the aforo command to ask (default: this checkout's), e.g. another checkout's, for 'before'",
    )
    args = parser.parse_args(argv)
    pin = pick_model(args.model)
    chosen = [
        q
        for q in QUESTIONS
        if (not args.only or q.id in args.only)
        and (not args.kind or q.kind in args.kind)
        and (q.held_out or not args.held_out)
        and (not args.package or q.package in args.package)
    ]
    if not chosen:
        parser.error(f"no question chosen; the ids: {', '.join(q.id for q in QUESTIONS)}")
    base_url = os.environ.get("AFORO_REAL_BASE_URL")
    if not base_url:
        return run_under_engine(pin, argv)
    served = os.environ.get("AFORO_REAL_MODEL", "")
    if served != pin.alias:
        parser.error(f"the server at {base_url} serves {served!r}, not {pin.alias}")
    flags = ["--base-url", base_url, "-m", served]
    if args.temperature is not None:
        flags += ["--temperature", args.temperature]
    if args.no_search:
        flags.append("--no-search")
    outcomes = []
    with tempfile.TemporaryDirectory(prefix="aforo-real-code-src-") as tmp:
        workspaces = fetch({q.package for q in chosen}, Path(tmp))
        for question in chosen:
            erase_cache(base_url)
            outcomes.append(ask(question, workspaces[question.package], flags, args.timeout, args.aforo))
            o = outcomes[-1]
            print(
                f"{o.id}: {'right' if o.right else 'wrong'}, {o.seconds:.0f} s, {o.ending}; cites "
                f"{o.lines_cited} path:line ({o.lines_false} false, {o.unmarked} unmarked), copied "
                f"{'yes' if o.copied else 'no'}, loop stops {o.loop_stops}",
                file=sys.stderr,
                flush=True,
            )
            if args.json:  # as it goes: a run stopped part-way keeps what it asked
                args.json.write_text(json.dumps([asdict(o) for o in outcomes], indent=2) + "\n")
    temperature = f"--temperature {args.temperature}" if args.temperature else "aforo's default temperature"
    temperature += ", --no-search" if args.no_search else ""
    print(
        f"\nreal-code suite — {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {machine()}, {pin.alias} on "
        f"llama-server (window {DEFAULT_CTX}), {temperature}, {args.timeout:.0f} s per question at most"
    )
    print(by_kind(outcomes))
    print()
    print(by_question(outcomes))
    seconds = [o.seconds for o in outcomes]
    held = [o for o in outcomes if BY_ID[o.id].held_out]
    print(
        f"\nright answers: {sum(o.right for o in outcomes)} of {len(outcomes)} (held out: "
        f"{sum(o.right for o in held)} of {len(held)}); seconds per answer: median "
        f"{statistics.median(seconds):.0f}, total {sum(seconds):.0f}; llama-server peak memory: "
        f"{peak_mb(os.environ.get('AFORO_REAL_SERVER_PID'))}",
        flush=True,
    )
    print(checked(outcomes), flush=True)
    if args.json:
        args.json.write_text(json.dumps([asdict(o) for o in outcomes], indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
