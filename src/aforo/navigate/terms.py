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
from collections.abc import Iterator
from dataclasses import dataclass

MAX_TERMS = 6
MAX_COMPOUNDS = 3
COMPOUND_WORDS = 3  # the longest run of words joined into one name
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_QUOTED = re.compile(r"`([^`]+)`")
MAX_RANGE = 20
# A word with a slash in it, or ending in a file's extension: a path, not a name. A path starts where a
# run does (after `@`, or where no path character comes before): tried from every place inside a long
# run, the pattern took 2 s for `a1.x` x 4 000 and 16.5 s for x 16 000 (issue 39 D1); a start inside a
# run finds nothing the run's own start does not, so the matches are the same, in linear time.
_PATH = re.compile(
    r"(?:@|(?<![\w./-]))[\w./-]*(/[\w.-]+|\.(py|pyi|js|jsx|ts|tsx|go|rs|java|c|h|cc|cpp|hpp|rb|md|rst|txt|toml|json|ya?ml|cfg|ini|sh))\b"
)
# "mod00.py … mod09.py", "test1.py to test5.py", "t1.py-t3.py": the first and the last of numbered files,
# the same stem and extension, a separator between them. Written without spaces (`-`, `...`), the
# separator follows the first's extension (`\d\.\w+`) inside one run.
_GLUED = re.compile(r"\d\.\w+(?=-|\.\.\.)")
# A run with a numbered name in it (`mod07.py`): where a range may begin.
_NUMBERED_RUN = re.compile(r"(?:@|(?<![\w./-]))[\w./-]*?\d\.\w[\w./-]*")
# From the end of a range's first name to the run of its last: `…`, or a separator word between spaces.
_AFTER = re.compile(r"(?:\s*…\s*|\s+(?:-|\.\.\.|to|through)\s+)(@?[\w./-]+)")
_MENTION = re.compile(r"(@[\w./-]+)")  # right after a separator that ends a run (`t1.py-@t3.py`)
_NUMBER = re.compile(r"(?<!\d)\d+\Z")  # a run's last digits, found from where they start
_EXTENSION = re.compile(r"\.\w+")
MAX_NUMBER_DIGITS = 9  # a longer number names no range of files (int() of thousands of digits fails)

_COMMON = """a about above after all also an and any are as at be been before being below between both but by
    can could did do does doing done each else every few find for from get gets given give go got had has
    have having he her here hers him his how i if in into is it its itself just know let like list make
    many me more most much must my need no not now of off on once one only or other our out over own
    please same say see she should show so some such tell than that the their them then there these they
    this those through to too two under until up use used uses using very was way we were what when where
    which while who whom why will with would yes you your
    want wants wanted understand understanding learn learning wonder wondering curious interested trying
    try think thought happen happens going
    three four five six seven eight nine ten eleven twelve twenty first second third last next previous
    answer argument arguments call called calls calling class classes code codebase count decorator
    decorators default define defined defines definition declared describe does explain file files
    folder function functions implement implemented implementation import imported imports line lines
    long longer longest larger largest bigger biggest shorter smaller method methods module modules name named
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
    question = _without_paths(question, " ")
    quoted = [w for q in _QUOTED.findall(question) for w in _WORD.findall(q)]
    words = _WORD.findall(question)
    code = [w for w in words if looks_like_code(w)]
    plain = [w for w in words if len(w) >= 3 and w.lower() not in COMMON]
    seen: dict[str, None] = {}
    for word in (*quoted, *code, *plain):
        if word.lower() not in COMMON or word in quoted:
            seen.setdefault(word, None)
    return tuple(seen)[:MAX_TERMS]


# The name a definition question asks about, whatever word it is: "where is the define decorator
# defined?" asks about `define`, a word question_terms leaves out (it is in every such question). The
# pre-search keeps it only when the symbol index defines it.
_KIND = r"(?:decorator|function|class|method|constant|variable|attribute|type|enum|property)"
_SUBJECT = r"`?(?P<name>[A-Za-z_]\w*)`?(?:\(\))?"
_DEFINED_SUBJECT = (
    re.compile(
        rf"\bwhere\s+(?:is|are|was)\s+(?:the\s+)?(?:{_KIND}\s+)?{_SUBJECT}(?:\s+{_KIND})?"
        r"\s+(?:defined|declared|implemented)\b",
        re.IGNORECASE,
    ),
    re.compile(rf"\b(?:which|what)\s+(?:file|module)\s+defines\s+(?:the\s+)?(?:{_KIND}\s+)?{_SUBJECT}", re.I),
    re.compile(rf"\bdefinition\s+of\s+(?:the\s+)?(?:{_KIND}\s+)?{_SUBJECT}", re.IGNORECASE),
)


def defined_subjects(question: str) -> tuple[str, ...]:
    """The names a "where is X defined" question asks about, as written, each once."""
    question = _without_paths(question, " ")
    found = (m["name"] for form in _DEFINED_SUBJECT for m in form.finditer(question))
    return tuple(dict.fromkeys(name for name in found if name.lower() not in _ARTICLES))


_ARTICLES = frozenset({"the", "a", "an", "it", "this", "that", "they", "these", "those"})


def question_paths(question: str) -> tuple[str, ...]:
    """The paths the question names (`@` and trailing dots dropped), each once, in order; a numbered
    range (`mod00.py … mod09.py`) stands for every file in it, up to MAX_RANGE."""
    found: list[str] = []
    end = 0
    for r in _ranges(question):
        found += _paths(question[end : r.start])
        if r.first < r.last and r.last - r.first < MAX_RANGE:
            found += [f"{r.stem}{n:0{r.width}d}{r.ext}" for n in range(r.first, r.last + 1)]
        else:  # no range of files: its two ends, as written
            found += [p for name in r.names for p in _paths(name)]
        end = r.end
    return tuple(dict.fromkeys([*found, *_paths(question[end:])]))


def _paths(text: str) -> list[str]:
    found = (m.group(0).lstrip("@").rstrip(".") for m in _PATH.finditer(text))
    return [p for p in found if p]


def _without_paths(text: str, put: str) -> str:
    """`text` with `put` in place of each path."""
    kept: list[str] = []
    end = 0
    for m in _PATH.finditer(text):
        kept += [text[end : m.start()], put]
        end = m.end()
    return "".join([*kept, text[end:]])


@dataclass(frozen=True)
class _Range:
    start: int
    end: int
    stem: str
    first: int
    last: int
    width: int  # the digits of the first, zeros included
    ext: str
    names: tuple[str, str]  # the first and the last, as written


def _ranges(text: str) -> Iterator[_Range]:
    """The numbered ranges of `text`, left to right: the first and the last name of each. Only the runs
    with a numbered name in them are looked at, each piece of them once."""
    end = 0
    for run in _NUMBERED_RUN.finditer(text):
        pieces = _pieces(text, run.start(), run.end())
        for i, first in enumerate(pieces):
            last = pieces[i + 1] if i + 1 < len(pieces) else _next_run(text, first[1])
            if last is not None and last[0] == last[1]:  # the separator ends the run: `t1.py-@t3.py`
                last = _next_run(text, last[0], _MENTION)
            found = None if first[0] < end or last is None else _range(text, first, last)
            if found is not None:
                yield found
                end = found.end


def _pieces(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """The run text[start:end] cut where a separator follows a numbered name inside it (`t1.py-t3.py`)."""
    pieces = []
    for glue in _GLUED.finditer(text, start, end):
        pieces.append((start, glue.end()))
        start = glue.end() + (1 if text.startswith("-", glue.end()) else 3)
    return [*pieces, (start, end)]


def _next_run(text: str, at: int, after_run: re.Pattern[str] = _AFTER) -> tuple[int, int] | None:
    """The first piece of the run a separator leads to from `at`, if one does."""
    after = after_run.match(text, at)
    if after is None:
        return None
    return _pieces(text, after.start(1), after.end(1))[0]


def _range(text: str, a: tuple[int, int], b: tuple[int, int]) -> _Range | None:
    names = text[a[0] : a[1]], text[b[0] : b[1]]
    first, last = _numbered(names[0]), _numbered(names[1].rstrip("."))
    if first is None or last is None or (first[0], first[2]) != (last[0], last[2]):
        return None
    stem, number, ext = first
    return _Range(a[0], b[1], stem, int(number), int(last[1]), len(number), ext, names)


def _numbered(name: str) -> tuple[str, str, str] | None:
    """(stem, number, extension) of a numbered file's name (`@mod07.py`: mod, 07, .py), else None."""
    name = name.removeprefix("@")
    dot = name.rfind(".")
    number = _NUMBER.search(name, 0, max(dot, 0))
    if number is None or not _EXTENSION.fullmatch(name, dot) or len(number[0]) > MAX_NUMBER_DIGITS:
        return None
    return name[: number.start()], number[0], name[dot:]


def compound_terms(question: str) -> tuple[str, ...]:
    """Identifiers that runs of plain words may spell (`default key derivation` ->
    `default_key_derivation`, `key_derivation`, `default_key`), the longest first, at most
    MAX_COMPOUNDS."""
    runs: list[list[str]] = [[]]
    for word in _WORD.findall(_without_paths(question, " . ")):
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
