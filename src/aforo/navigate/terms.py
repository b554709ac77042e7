"""The names a question asks about: its identifiers and key words, without the words every question has.

`where is the group decorator defined?` asks about `group` (and `decorator`); `which module imports
hashlib?` about `hashlib`. Code-looking words (`raise_for_status`, `HttpClient`, `a.b`, anything in
backticks) come first: they name one thing. The rest are kept when they are not common English nor the
vocabulary of questions about code (`function`, `defined`, `file`), which would match everywhere.

A path the question names (`wordfreq/counter.py`, `mod00.py`, `@src/app.py`) is no name to search for:
the model reads that file, or the user attached it. Searching its parts instead put a Grep for
`wordfreq|counter` before "Read wordfreq/counter.py and explain it.", and the 0.5B model then asked for
that Grep again and answered without reading the file. `question_paths` gives them apart.

Words in a row may name one identifier in prose: "the default key derivation of Signer" asks about
`default_key_derivation` (itsdangerous), which no single word finds. `compound_terms` joins them with
underscores; only what the workspace holds is kept (by the pre-search).
"""

from __future__ import annotations

import re

MAX_TERMS = 6
MAX_COMPOUNDS = 3
COMPOUND_WORDS = 3  # the longest run of words joined into one name
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_QUOTED = re.compile(r"`([^`]+)`")
# "mod00.py … mod09.py", "test1.py to test5.py": the first and the last of numbered files.
_RANGE = re.compile(
    r"@?(?P<stem>[\w./-]*?)(?P<first>\d+)(?P<ext>\.\w+)\s*(…|\.\.\.|-|to|through)\s*@?(?P=stem)(?P<last>\d+)(?P=ext)\b"
)
MAX_RANGE = 20
# A word with a slash in it, or ending in a file's extension: a path, not a name.
_PATH = re.compile(
    r"@?[\w./-]*(/[\w.-]+|\.(py|pyi|js|jsx|ts|tsx|go|rs|java|c|h|cc|cpp|hpp|rb|md|rst|txt|toml|json|ya?ml|cfg|ini|sh))\b"
)

_COMMON = """a about above after all also an and any are as at be been before being below between both but by
    can could did do does doing done each else every few find for from get gets given give go got had has
    have having he her here hers him his how i if in into is it its itself just know let like list make
    many me more most much must my need no not now of off on once one only or other our out over own
    please same say see she should show so some such tell than that the their them then there these they
    this those through to too two under until up use used uses using very was way we were what when where
    which while who whom why will with would yes you your
    three four five six seven eight nine ten eleven twelve twenty first second third last next previous
    answer argument arguments call called calls calling class classes code codebase count decorator
    decorators default define defined defines definition declared describe does explain file files
    folder function functions implement implemented implementation import imported imports line lines
    longer longest larger largest bigger biggest shorter smaller method methods module modules name named
    names number package parameter parameters
    project read repository return returned returns shortest signature source take takes type value
    values variable variables work works workspace written"""
COMMON = frozenset(_COMMON.split())
# The words a run of prose words naming one identifier stops at: the grammar of the question and its
# verbs. The nouns of code (`default`, `key`, `value`, `type`) stay: identifiers are made of them.
_VERBS = """call called calls calling define defined defines declared describe explain implement implemented
    import imported imports read return returned returns take takes work works written"""
_BREAKS = frozenset(_COMMON.split("answer argument", 1)[0].split()) | frozenset(_VERBS.split())


def question_terms(question: str) -> tuple[str, ...]:
    """At most MAX_TERMS names from `question`, the most specific first, each once."""
    question = _PATH.sub(" ", question)
    quoted = [w for q in _QUOTED.findall(question) for w in _WORD.findall(q)]
    words = _WORD.findall(question)
    code = [w for w in words if looks_like_code(w)]
    plain = [w for w in words if len(w) >= 3 and w.lower() not in COMMON]
    seen: dict[str, None] = {}
    for word in (*quoted, *code, *plain):
        if word.lower() not in COMMON or word in quoted:
            seen.setdefault(word, None)
    return tuple(seen)[:MAX_TERMS]


def question_paths(question: str) -> tuple[str, ...]:
    """The paths the question names (`@` and trailing dots dropped), each once, in order; a numbered
    range (`mod00.py … mod09.py`) stands for every file in it, up to MAX_RANGE."""
    found: list[str] = []
    end = 0
    for m in _RANGE.finditer(question):
        found += _paths(question[end : m.start()])
        first, last = int(m["first"]), int(m["last"])
        if first < last and last - first < MAX_RANGE:
            width = len(m["first"])
            found += [f"{m['stem']}{n:0{width}d}{m['ext']}" for n in range(first, last + 1)]
        else:  # no range of files: its two ends, as written
            found += _paths(m.group(0))
        end = m.end()
    return tuple(dict.fromkeys([*found, *_paths(question[end:])]))


def _paths(text: str) -> list[str]:
    found = (m.group(0).lstrip("@").rstrip(".") for m in _PATH.finditer(text))
    return [p for p in found if p]


def compound_terms(question: str) -> tuple[str, ...]:
    """Identifiers that runs of plain words may spell (`default key derivation` ->
    `default_key_derivation`, `key_derivation`, `default_key`), the longest first, at most
    MAX_COMPOUNDS."""
    runs: list[list[str]] = [[]]
    for word in _WORD.findall(_PATH.sub(" . ", question)):
        if word.isalpha() and word.lower() not in _BREAKS:
            runs[-1].append(word.lower())
        elif runs[-1]:
            runs.append([])
    found: dict[str, int] = {}
    for run in runs:
        for size in range(min(len(run), COMPOUND_WORDS), 1, -1):
            for start in range(len(run) - size + 1):
                found.setdefault("_".join(run[start : start + size]), size)
    return tuple(sorted(found, key=lambda name: -found[name]))[:MAX_COMPOUNDS]


def stem(word: str) -> str:
    """The word without the endings of its inflections, so that the question's `retry` meets the code's
    `MAX_RETRIES` (retries, retried, retrying -> retry; requests -> request)."""
    w = word.lower()
    for end, put, shortest in _ENDINGS:
        if w.endswith(end) and len(w) - len(end) >= shortest:
            return w[: len(w) - len(end)] + put
    return w


# (ending, what replaces it, the fewest letters left): the first that fits is taken.
_ENDINGS: tuple[tuple[str, str, int], ...] = (
    *(("ies", "y", 2), ("ied", "y", 2), ("sses", "ss", 1), ("ing", "", 4), ("ed", "", 4)),
    *(("ss", "ss", 1), ("us", "us", 1), ("is", "is", 1), ("s", "", 3)),
)
_PARTS = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")


def parts(name: str) -> list[str]:
    """The words an identifier is made of: `MAX_RETRIES` -> max, retries; `HTTPClient` -> http, client."""
    return [p.lower() for p in _PARTS.findall(name)]


def looks_like_code(word: str) -> bool:
    inner = word.strip("_")
    return "_" in inner or (any(c.isupper() for c in inner[1:]) and any(c.islower() for c in inner))
