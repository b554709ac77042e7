"""The citations of an answer, and whether each holds: a pure decision over plain facts.

A small model with the right lines in front of it still writes places that do not exist: a function
"defined in `__init__.py` at line 2596" where that file has about a hundred lines, a decorator in one
module while the symbol index has its one definition in another. `find` reads an answer's citations
(`path`, `path:line`, `path:start-end`, "`path` at line N", "X is defined in Y (at line N)", each file
of "X is defined in Y and Z", "in Y, X is defined", "Y has N lines"); `wanted` says which files and
names the facts must cover; `check` decides each citation against `Facts` (the workspace's files with
their lengths, the index's definitions), and says the exact fact when it does not hold, in words the
model can correct from and a user can read. No I/O here: the caller gathers the facts
(aforo.loop.cited).

A path is matched as the workspace names it or as its tail (`core.py` for `src/click/core.py`): a model
cites files by name. A name the index does not define is not judged (it may be a method of a library,
or a variable): only its path is.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

# The files a path may name: the extensions of code and of the text files a project keeps beside it.
# A bare word with a dot (`os.path`, `Signer.sign`) is no path; `x.py` is.
_EXT = (
    r"py|pyi|pyx|ipynb|js|jsx|mjs|cjs|ts|tsx|go|rs|c|h|cc|cpp|hpp|cs|java|kt|rb|php|swift|scala|lua|sh|"
    r"md|rst|txt|toml|cfg|ini|json|yaml|yml|lock|html|css|sql"
)
# Every repeat is bounded and every form starts where no word runs into it: an answer of 80 000
# slashes or of `sk-` repeated is read in linear time, not tried from each of its characters.
PATH = rf"(?:[\w.-]{{1,80}}/){{0,16}}[\w.-]{{0,80}}\w\.(?:{_EXT})(?![\w/])"
_NAME = r"(?<![\w.])[A-Za-z_]\w{0,80}(?:\.[A-Za-z_]\w{0,80}){0,4}"
_START = r"(?<![\w/.-])"
_LINES = r"(?P<start>\d{1,9})(?:\s{0,3}[-–]\s{0,3}(?P<end>\d{1,9}))?"
_KINDS = r"(?:function|class|method|decorator|constant|variable|attribute|module)"

# `path:12`, `path:12-20`, `path` alone; the path may sit in backticks.
_PLACE = re.compile(rf"{_START}`?(?P<path>{PATH})`?(?::{_LINES})?")
# "`path` at line 12", "in path, line 12", "path (line 12)", "the `path` file at lines 258 and 292".
_AT_LINE = re.compile(
    rf"{_START}(?P<path>{PATH})`?(?:\s{{1,3}}(?:file|module))?,?\s{{0,3}}\(?\s{{0,3}}(?:at|on)?\s{{0,3}}lines?\s{{1,3}}"
    r"(?P<list>\d{1,9}(?:\s{0,3}(?:[-–]|,|and|,\s{0,3}and)\s{0,3}\d{1,9}){0,16})"
)
# "line 12 of path".
_LINE_OF = re.compile(
    rf"\blines?\s{{1,3}}(?P<start>\d{{1,9}})(?:\s{{0,3}}[-–]\s{{0,3}}(?P<end>\d{{1,9}}))?\s{{1,3}}(?:of|in)\s{{1,3}}`?"
    rf"(?P<path>{PATH})"
)
# "`X` is defined in `path` (at line N)", "the X function is defined in the path file at line N".
_DEFINED = re.compile(
    rf"`?(?P<name>{_NAME})(?:\(\))?`?(?:\s?\(\))?\s{{1,3}}(?:{_KINDS}\s{{1,3}})?(?:is|are|was)\s{{1,3}}"
    rf"(?:also\s{{1,3}})?defined\s{{1,3}}in\s{{1,3}}(?:the\s{{1,3}})?(?:file\s{{1,3}})?`?(?P<path>{PATH})`?"
    rf"(?:\s{{1,3}}(?:file|module))?"
    rf"(?:(?::|,?\s{{0,3}}(?:at|on)\s{{1,3}}line\s{{1,3}}|\s{{0,3}}\(\s{{0,3}}line\s{{1,3}})(?P<start>\d{{1,9}}))?"
)
# "In `path`, the function `X` is defined", "in path (line N) X is defined": the same claim, the file
# first (the 1.5B, after two compactions: "In `cli.py`, the function `find_dotenv` is defined.", where
# the index has it in main.py; only the file was checked, and it exists).
_IN_DEFINED = re.compile(
    rf"\b[Ii]n\s{{1,3}}(?:the\s{{1,3}})?(?:file\s{{1,3}})?`?(?P<path>{PATH})`?(?:\s{{1,3}}(?:file|module))?"
    rf"(?:,?\s{{0,3}}\(?(?:at|on)?\s{{0,3}}line\s{{1,3}}(?P<start>\d{{1,9}})\)?)?,?\s{{1,3}}(?:the\s{{1,3}})?"
    rf"(?:{_KINDS}\s{{1,3}})?`?(?P<name>{_NAME})(?:\(\))?`?(?:\s{{1,3}}{_KINDS})?\s{{1,3}}(?:is|are|was)\s{{1,3}}"
    r"(?:also\s{1,3})?defined\b"
)
# "The file `recipes.py` defines the `split_after` function": the file as the subject (a new user on
# more-itertools, corrected once, wrote it of a function more.py defines; only the file was checked).
_DEFINES = re.compile(
    rf"{_START}`?(?P<path>{PATH})`?(?:\s{{1,3}}(?:file|module))?\s{{1,3}}defines\s{{1,3}}(?:the\s{{1,3}}|an?\s{{1,3}})?"
    rf"(?:{_KINDS}\s{{1,3}})?`?(?P<name>{_NAME})(?:\(\))?`?(?:\s{{1,3}}{_KINDS})?"
    rf"(?:,?\s{{1,3}}(?:at|on)\s{{1,3}}line\s{{1,3}}(?P<start>\d{{1,9}}))?"
)
# "and `b.py`", ", `c.py` at line 9": each further file of "X is defined in a.py and b.py", which the
# check read only the first of (the 1.5B on attrs: "Factory is defined in _make.py and __init__.py",
# where __init__.py only imports it). A file a clause of its own follows ("and b.py imports it") is
# not one of them.
_ALSO_IN = re.compile(
    rf"(?:\s{{0,3}},\s{{0,3}}(?:and\s{{1,3}})?|\s{{1,3}}and\s{{1,3}})(?:(?:also\s{{1,3}})?in\s{{1,3}})?(?:the\s{{1,3}})?"
    rf"`?(?P<path>{PATH})`?(?:\s{{1,3}}(?:file|module))?"
    rf"(?:(?::|,?\s{{0,3}}(?:at|on)\s{{1,3}}line\s{{1,3}}|\s{{0,3}}\(\s{{0,3}}line\s{{1,3}})(?P<start>\d{{1,9}}))?"
    r"(?!\s{1,3}(?!and\b|or\b|respectively\b)[A-Za-z])"
)
MORE_FILES = 16  # further files of one definition claim read
# "`_funcs.py` has 522 lines", "the file x.py contains 73 lines", "x.py is 40 lines long", "x.py (40
# lines)": a count of the whole file, judged against it (the 1.5B said 73 lines for a file of 522).
# "about"/"over" N lines says no exact count: not read.
_COUNT = re.compile(
    rf"{_START}`?(?P<path>{PATH})`?(?:\s{{1,3}}(?:file|module))?(?:\s{{1,3}}(?:has|contains|is)\s{{1,3}}"
    rf"(?:exactly\s{{1,3}}|a\s{{1,3}}total\s{{1,3}}of\s{{1,3}})?|\s{{0,3}}\(\s{{0,3}})(?P<count>\d{{1,9}})\s{{1,3}}lines?\b"
    r"(?!\s{1,3}(?:that|which|where|with|matching|containing|mentioning)\b)(?:\s{1,3}long\b|\))?"
)
_WORDS = {"the", "a", "an", "it", "this", "that", "which", "and", "also", "function", "class", "method"}


@dataclass(frozen=True)
class Citation:
    """One place an answer names: a file, lines of it, or the definition of `name` in it."""

    text: str  # as the answer wrote it
    path: str
    start: int | None = None
    end: int | None = None  # the last line of a range (None: one line)
    name: str | None = None  # the answer says `name` is defined here
    lines: int | None = None  # the answer says the file has this many lines

    @property
    def key(self) -> tuple[str, int | None, int | None, str | None, int | None]:
        return (self.path, self.start, self.end, self.name, self.lines)


@dataclass(frozen=True)
class Definition:
    """Where the symbol index has a name defined: `start` its first line (decorators), `line` its
    `def`/`class` line."""

    path: str
    line: int
    start: int


@dataclass(frozen=True)
class Facts:
    """What the workspace says: each file's path and its number of lines; each name's definitions."""

    files: Mapping[str, int]
    definitions: Mapping[str, Sequence[Definition]]
    # The workspace's own directory names, outermost first (`src`, `click`): a path cited from the
    # project's top (`src/click/core.py`) names the workspace's `core.py`.
    root: tuple[str, ...] = ()


@dataclass(frozen=True)
class Verdict:
    citation: Citation
    held: bool
    fact: str = ""  # when it does not hold: what is true instead, in one sentence

    def to_dict(self) -> dict[str, object]:
        c = self.citation
        return {
            "text": c.text,
            "path": c.path,
            "start": c.start,
            "end": c.end,
            "name": c.name,
            "lines": c.lines,
            "held": self.held,
            "fact": self.fact,
        }


def find(text: str, limit: int) -> list[Citation]:
    """The citations of `text`, each once, in the order first written, at most `limit` (each form is
    read up to `limit` times: what lies past that is not looked at)."""
    found: dict[tuple[str, int | None, int | None, str | None, int | None], tuple[int, Citation]] = {}
    specific: set[int] = set()  # where a path a more specific form read starts

    def add(c: Citation, m: re.Match[str]) -> None:
        specific.add(m.start("path"))
        found.setdefault(c.key, (m.start(), c))

    for form in (_DEFINED, _IN_DEFINED, _DEFINES):
        for m in _first(form, text, limit):
            name = m["name"]
            quoted = text[m.start("name") - 1 : m.start("name")] == "`"
            if name.lower() in _WORDS and not quoted:  # "it is defined in": no name
                continue
            add(Citation(_said(m[0]), m["path"], _int(m["start"]), None, name), m)
            for more in _also_in(text, m.end()):
                said = _said(text[m.start() : more.end()])
                add(Citation(said, more["path"], _int(more["start"]), None, name), more)
    for m in _first(_COUNT, text, limit):
        add(Citation(_said(m[0]), m["path"], lines=int(m["count"])), m)
    for m in _first(_AT_LINE, text, limit):
        numbers = [int(n) for n in re.findall(r"\d+", m["list"])]
        if re.search(r"[-–]", m["list"]) and len(numbers) == 2:
            add(Citation(_said(m[0]), m["path"], numbers[0], numbers[1]), m)
        else:
            for n in numbers:
                add(Citation(_said(m[0]), m["path"], n), m)
    for m in _first(_LINE_OF, text, limit):
        add(Citation(_said(m[0]), m["path"], int(m["start"]), _int(m["end"])), m)
    for m in _first(_PLACE, text, limit):
        if m["start"] is None and m.start("path") in specific:
            continue
        add(Citation(_said(m[0]), m["path"], _int(m["start"]), _int(m["end"])), m)
    ordered = [c for _, c in sorted(found.values(), key=lambda pair: pair[0])]
    return _without_bare_duplicates(ordered)[:limit]


def _also_in(text: str, at: int) -> list[re.Match[str]]:
    """The further files a definition claim ending at `at` names, at most MORE_FILES."""
    found: list[re.Match[str]] = []
    while len(found) < MORE_FILES and (more := _ALSO_IN.match(text, at)):
        found.append(more)
        at = more.end()
    return found


def _first(form: re.Pattern[str], text: str, limit: int) -> list[re.Match[str]]:
    return list(itertools.islice(form.finditer(text), limit))


def _without_bare_duplicates(cited: list[Citation]) -> list[Citation]:
    """A bare `path` says no more than a `path:line` or a definition that names the same file, and a
    `path:line` no more than the definition said at that line."""
    specific = {c.path for c in cited if c.start is not None or c.name or c.lines is not None}
    defined = {(c.path, c.start) for c in cited if c.name}
    return [
        c
        for c in cited
        if c.name
        or c.lines is not None
        or (c.path not in specific if c.start is None else (c.path, c.start) not in defined)
    ]


def _said(text: str) -> str:
    return " ".join(text.replace("`", "").split())


def _int(value: str | None) -> int | None:
    return int(value) if value else None


def wanted(citations: Iterable[Citation]) -> tuple[set[str], set[str]]:
    """The paths and the names whose facts `check` needs."""
    cited = list(citations)
    return {c.path for c in cited}, {c.name for c in cited if c.name}


def matches(cited: str, files: Iterable[str], root: Sequence[str] = ()) -> list[str]:
    """The workspace's files `cited` names: itself, or each file it is the tail of (`core.py`,
    `click/core.py` for `src/click/core.py`); `./core.py` names the one at the workspace's top only.
    With the workspace's `root` directories (`src`, `click`), `click/core.py` also names its `core.py`."""
    files = list(files)
    if cited.startswith("./"):
        return [f for f in files if f == cited[2:]]
    found = [f for f in files if f == cited or f.endswith("/" + cited)]
    for k in range(1, len(root) + 1):
        prefix = "/".join(root[-k:]) + "/"
        if cited.startswith(prefix):
            found += [f for f in files if f == cited.removeprefix(prefix) and f not in found]
    return found


def check(citations: Iterable[Citation], facts: Facts) -> list[Verdict]:
    return [_check(c, facts) for c in citations]


def _check(c: Citation, facts: Facts) -> Verdict:
    files = matches(c.path, facts.files, facts.root)
    places = _definitions(c, facts)
    if not files:
        where = f"; {_where(c.name, places)}" if c.name and places else ""
        return Verdict(c, False, f"there is no file `{c.path}` in the workspace{where}")
    if c.name and places:  # the definition decides, its line with it
        here = [d for d in places if d.path in files]
        if not here:
            return Verdict(c, False, f"`{c.path}` defines no `{c.name}`; {_where(c.name, places)}")
        if c.start is not None and not any(d.start <= c.start <= d.line for d in here):
            return Verdict(c, False, f"`{c.name}` is not defined at line {c.start}; {_where(c.name, here)}")
        return Verdict(c, True)
    if c.lines is not None and all(facts.files[f] != c.lines for f in files):
        return Verdict(c, False, _length(files, facts))
    if c.start is not None:
        last = c.end if c.end is not None else c.start
        if not any(c.start >= 1 and last <= facts.files[f] for f in files):
            return Verdict(c, False, _too_short(c, files, facts, last))
    # A name the index does not define (a library's, a variable) is judged by its file and line alone.
    return Verdict(c, True)


def _definitions(c: Citation, facts: Facts) -> Sequence[Definition]:
    if not c.name:
        return ()
    return facts.definitions.get(c.name) or facts.definitions.get(c.name.rsplit(".", 1)[-1]) or ()


def _too_short(c: Citation, files: list[str], facts: Facts, last: int) -> str:
    longest = max(files, key=lambda f: facts.files[f])
    lines = facts.files[longest]
    shown = c.path if len(files) > 1 else longest
    some = "the longest `" + c.path + "` in the workspace" if len(files) > 1 else f"`{shown}`"
    return f"{some} has {lines} {'line' if lines == 1 else 'lines'}; there is no line {last}"


def _length(files: list[str], facts: Facts) -> str:
    said = [f"`{f}` has {facts.files[f]} {'line' if facts.files[f] == 1 else 'lines'}" for f in files[:3]]
    return " and ".join(said) + (f" (and {len(files) - 3} more files of that name)" if len(files) > 3 else "")


def _where(name: str, places: Sequence[Definition]) -> str:
    said = [f"`{d.path}` at line {d.line}" for d in places[:3]]
    more = f" (and {len(places) - 3} more)" if len(places) > 3 else ""
    joined = said[0] if len(said) == 1 else ", ".join(said[:-1]) + f" and {said[-1]}"
    return f"`{name}` is defined in {joined}{more}"
