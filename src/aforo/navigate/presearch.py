"""The pre-search: before the first model call, aforo itself looks for what the question names.

A 0.5B model cannot plan a search through a real repository (it copies the file list into one read, or
asks Read for `hashlib.py`), but it can read a few right lines and answer from them: the harness finds,
the model reads. For each name of the question (navigate.terms), its definitions come from the symbol
index and its mentions from ripgrep (whole words, fixed strings); definitions rank first, then mentions
of the rarer names. The best few regions, a few numbered lines each, fit in `max_chars` and are handed
to the model as the result of a Grep call, saying how they were found: the governor clears it like any
other tool result, `/undo` brings it back, and the model can still call tools for more.

What the harness knows exactly is said, not left to the model to work out: each mention is labelled with
what the line does, from the file's syntax tree (tools/roles: `calls`, `assigns`, `imports`, or
`mentions … in a docstring` and `declares … (type declaration)`, never a caller), and the definition it
is in (`in Signer.get_signature`), which answers "what calls derive_key?" (both models named the lines,
182, 218 and 237, and not the functions); the files the question names come with their line counts. The
answer to a where/what-calls/which-imports/which-is-longer/how-many-lines question comes first, as a
sentence (navigate/facts); an overview question gets what the project says about itself instead
(navigate/about), to be answered from in one pass.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from aforo.errors import ToolError
from aforo.headings import LEFT_OUT
from aforo.limits import MAP_FILE_BYTES
from aforo.navigate.about import about
from aforo.navigate.facts import (
    CALLERS,
    COMPARE,
    IMPORTERS,
    LENGTH,
    OVERVIEW,
    WHERE,
    Place,
    asks,
    facts,
    named_files,
)
from aforo.navigate.index import SymbolIndex
from aforo.navigate.terms import (
    compound_terms,
    defined_subjects,
    looks_like_code,
    parts,
    question_paths,
    question_terms,
    stem,
)
from aforo.protocols import ToolContext
from aforo.tools.deadline import Interrupted
from aforo.tools.names import show
from aforo.tools.roles import (
    ASSIGNS,
    CALLS,
    DECLARES,
    DEFINES,
    IMPORTS,
    TEXT,
    TYPED,
    FileRoles,
    file_roles,
    is_declaration_file,
)
from aforo.tools.symbols import mentions

DEFINITION_LINES = 8  # the signature and what follows (a docstring, the first statements)
MENTION_AROUND = 1  # lines shown before and after a mention
MENTIONS_PER_TERM = 60  # rg records read per name: enough to rank, never a whole repository's worth
MENTIONS_PER_FILE = 12
MENTION_LINE_CHARS = 200
STEM_NAMES = 3  # names found by a word's stem, for one word of the question
DEFINED_NAMES = 3  # names of a question about the session said where defined
NAMED_FILES = 12  # files of the question counted: "the ten files mod00.py … mod09.py" and a margin
# The first words of the pre-search's headings, which a model that copies one is known by (loop/copied).
OPENING = "Before asking you, aforo"
# How a mention ranks by what its line does: a value assigned, then a declaration or an import, then
# code that uses it; text (a docstring, a comment, a string, a file with no syntax tree) and type
# declarations last. What the question asks for (calls, imports) ranks first.
_WEIGHTS = {ASSIGNS: 2, DECLARES: 1, IMPORTS: 1, DEFINES: 1}
_ASKED = {CALLERS: CALLS, IMPORTERS: IMPORTS}
_ASKS_WHERE = re.compile(r"\b(where|which (file|module)|find|found|defined?)\b", re.IGNORECASE)
PROSE = ""  # the role of a line in a file with no syntax tree here (a README, a changelog)


@dataclass(frozen=True)
class Region:
    path: str
    line: int  # the line that matched, 1-based
    start: int
    end: int
    term: str  # the name found (a definition's qualified: `Signer.derive_key`)
    role: str  # what the line does with it (tools/roles), PROSE in a file with no syntax tree
    mention: bool = False  # labelled with the definition it is in

    @property
    def why(self) -> str:
        """`calls derive_key`, `mentions derive_key in a docstring`, `declares Command (type declaration)`."""
        if self.role in TEXT:
            return f"mentions {self.term} in a {self.role}"
        if self.role == TYPED:
            return f"declares {self.term} (type declaration)"
        return f"{self.role or 'mentions'} {self.term}"


@dataclass(frozen=True)
class Presearch:
    text: str  # the block the model gets
    tool: str  # the call that stands for the search: Grep of the names found, else Glob of the files
    input: dict[str, str]
    answer_only: bool = False  # the block is what the answer is made of: no tool offered


def search(
    workspace: Path, index: SymbolIndex, question: str, max_chars: int, ctx: ToolContext
) -> Presearch | None:
    """The best regions for `question` within `max_chars`, or None when it names nothing found."""
    kind = asks(question)
    if kind == OVERVIEW:
        return _overview(workspace, index, max_chars)
    terms = (*compound_terms(question), *question_terms(question))
    if kind == WHERE:  # the name asked about, though a common word (`define`), when the index defines it
        asked = [name for name in defined_subjects(question) if name in index.definitions]
        terms = tuple(dict.fromkeys([*asked, *terms]))
    files = _Files(workspace)
    named = _named_files(files, index, question_paths(question))
    near = _Near(frozenset(stem(p) for t in terms for p in parts(t)), frozenset(path for path, _ in named))
    regions: list[Region] = []
    found: list[str] = []
    mentioned: list[tuple[int, int, int, Region]] = []
    for rank, term in enumerate(terms):
        defined = _definitions(index, term, near)
        regions += defined
        hits = _mentions(workspace, term, ctx)
        if defined or hits:
            found.append(term)
        spread = len({path for path, _ in hits})  # files that mention it
        # Every line that defines it (an overload the regions skip too) is no use of it.
        defining = {(site.path, site.line) for site in index.definitions.get(term, ())}
        for path, line in hits:
            if (path, line) in defining or any(r.path == path and r.line == line for r in regions):
                continue
            role = files.role(path, term, line)
            weight = (
                3
                if role == _ASKED.get(kind or "")
                else _WEIGHTS.get(role, -1 if role in (*TEXT, TYPED, PROSE) else 0)
            )
            start, end = max(1, line - MENTION_AROUND), line + MENTION_AROUND
            mentioned.append((-weight, spread, rank, Region(path, line, start, end, term, role, True)))
    # Assignments and imports first (a default value, who imports it), prose last; then a name mentioned
    # in few files, which says more about where to look than one mentioned everywhere.
    regions += [m[-1] for m in sorted(mentioned, key=lambda m: (*m[:3], m[3].path, m[3].line))]
    # With nothing found, the named files' lengths are all the search has: the answer to a question of
    # length, and no help for any other ("Read alpha.py, beta.py and gamma.py and tell me which defines
    # the most functions": the 0.5B called the same Glob again, then answered from the line counts).
    # One file's length is a fact too ("How many lines does _funcs.py have?").
    if not regions and not (named and kind == LENGTH) and (len(named) < 2 or kind != COMPARE):
        return None
    said = facts(kind, [_place(index, r) for r in regions], named)
    if not found:
        text = "\n".join(said) if said else named_files(named)
        return Presearch(text, "Glob", {"pattern": "{" + ",".join(path for path, _ in named) + "}"})
    heading = (
        f"{OPENING} looked in the workspace for {', '.join(f'`{t}`' for t in found)} "
        "(definitions from its symbol index, uses from ripgrep); the best matches, `path:line` then the "
        "numbered lines:"
    )
    if named and kind not in (COMPARE, LENGTH):
        heading = f"{named_files(named)}\n{heading}"
    shown = _render(files, index, "\n".join([*said, heading]), regions, max_chars)
    if shown is None:
        return None
    pattern = r"\b(" + "|".join(re.escape(t) for t in found) + r")\b"
    return Presearch(shown, "Grep", {"pattern": pattern})


def defined_where(index: SymbolIndex, question: str) -> list[str]:
    """Where the symbol index says the names of `question` are defined, as the pre-search says it: for
    a question about the session, which is not searched ("In which file did you find find_dotenv?").
    A name that reads as code (`find_dotenv`, `SpecifierSet`, in backticks) is looked up always; a
    plain word only when the question asks where (`methodkey`, but not the `rule` of "what rule did I
    give you?", which a package may define too)."""
    where = bool(_ASKS_WHERE.search(question))
    names = [
        term
        for term in question_terms(question)
        if term in index.definitions and (where or looks_like_code(term) or f"`{term}`" in question)
    ]
    exact = _Near(frozenset(), frozenset())  # each name is defined as written: no stem to choose among
    places = [_place(index, r) for name in names[:DEFINED_NAMES] for r in _definitions(index, name, exact)]
    return facts(WHERE, places, [])


def _overview(workspace: Path, index: SymbolIndex, max_chars: int) -> Presearch | None:
    """What the project says about itself, for the model to answer from in one pass."""
    heading = (
        f"{OPENING} read what the project says about itself (answer from it, in a few "
        "sentences; the files are named before each part):"
    )
    read = about(workspace, index, max_chars - len(heading) - 1)
    if read is None:
        return None
    paths, text = read
    return Presearch(f"{heading}\n{text}", "Glob", {"pattern": "{" + ",".join(paths) + "}"}, answer_only=True)


def _place(index: SymbolIndex, region: Region) -> Place:
    inside = index.holding(region.path, region.line) if region.mention else None
    return Place(region.path, region.line, region.term, region.role, inside.name if inside else "")


def _named_files(files: _Files, index: SymbolIndex, names: Sequence[str]) -> list[tuple[str, int]]:
    """(path, lines) of each indexed file the question names (by its path, or its name when that is
    unique), longest first."""
    counted: dict[str, int] = {}
    for name in names[:NAMED_FILES]:
        matches = [p for p in index.files if p == name or p.endswith("/" + name)]
        if len(matches) == 1 and index.files[matches[0]].size <= MAP_FILE_BYTES.value:
            counted[matches[0]] = len(files.lines(matches[0]))
    return sorted(counted.items(), key=lambda item: -item[1])


@dataclass(frozen=True)
class _Near:
    """What else the question says, to choose among the names a word's stem finds."""

    stems: frozenset[str]  # of the words of all its names (`adds __repr__`: add, repr)
    paths: frozenset[str]  # the files it names


def _definitions(index: SymbolIndex, term: str, near: _Near) -> list[Region]:
    """Where `term` is defined, top-level definitions before methods; of several in a row in one place
    (typing overloads before the implementation), the first and the last. The name as written first,
    else in any case ("the governor" asks about `Governor`), else the few names made of a word of the
    same stem ("how many times does the client retry?" asks about `MAX_RETRIES = 4`), those made of
    more of the question's words first, then those in the files it names. A type-only file's (`.d.ts`)
    is a declaration, said as one."""
    groups: dict[tuple[str, str], list[int]] = {}
    places = index.definitions.get(term) or index.folded.get(term.lower(), [])
    chosen: dict[str, int] = {}  # the names a stem found, in the order chosen
    if not places and not looks_like_code(term):
        names = sorted(index.stems.get(stem(term), []), key=lambda name: _apart(index, name, near))
        chosen = {name: n for n, name in enumerate(names[:STEM_NAMES])}
        places = [place for name in chosen for place in index.definitions[name]]
    for site in places:
        if site.path in index.files:
            groups.setdefault((site.path, site.name), []).append(site.line)
    regions = []
    for (path, name), lines in sorted(
        groups.items(), key=lambda g: ("." in g[0][1], chosen.get(g[0][1].rsplit(".", 1)[-1], 0), g[0][0])
    ):
        role = TYPED if is_declaration_file(path) else DEFINES
        for line in sorted({min(lines), max(lines)}):
            regions.append(Region(path, line, line, line + DEFINITION_LINES - 1, name, role))
    return regions


def _apart(index: SymbolIndex, name: str, near: _Near) -> tuple[int, bool]:
    """How far `name` is from what the question says: "Which function in _make.py adds __repr__?" found
    by `adds` the first three names alphabetically (tests' `TestAddHash`, `TestAddInit`, `TestAddRepr`),
    not `_add_repr` in _make.py, and the 1.5B answered `_Nothing.__repr__`."""
    shared = len({stem(p) for p in parts(name)} & near.stems)
    return -shared, not any(site.path in near.paths for site in index.definitions[name])


def _mentions(workspace: Path, term: str, ctx: ToolContext) -> list[tuple[str, int]]:
    """(path, line) of whole-word mentions of `term`, at most MENTIONS_PER_TERM (the one mention
    search, tools/symbols)."""
    try:
        found = mentions(
            workspace.resolve(), term, ctx, MENTIONS_PER_TERM, per_file=MENTIONS_PER_FILE, counted=1
        )
    except (ToolError, Interrupted):
        return []  # nothing found before the deadline is no pre-search
    return [(m.file, m.line) for m in found.items]


def _render(
    files: _Files, index: SymbolIndex, heading: str, regions: Sequence[Region], max_chars: int
) -> str | None:
    parts = [heading]
    used = len(heading)
    shown: set[tuple[str, int]] = set()
    left = 0
    for region in regions:
        lines = files.lines(region.path)
        if (region.path, region.line) in shown:  # a mention inside a region already shown
            continue
        last = min(region.end, len(lines))
        span = [n for n in range(region.start, last + 1) if (region.path, n) not in shown]
        if not span:
            continue
        body = "\n".join(f"{n}\t{lines[n - 1][:MENTION_LINE_CHARS]}" for n in span)
        inside = index.holding(region.path, region.line) if region.mention else None
        where = f" in {show(inside.name)}" if inside else ""
        block = f"{show(region.path)}:{region.line}{where} {show(region.why)}\n{body}"
        if used + len(block) + 2 > max_chars - _TAIL_ROOM:
            left += 1
            continue
        parts.append(block)
        used += len(block) + 2
        shown.update((region.path, n) for n in span)
    if len(parts) == 1:
        return None
    if left:
        parts.append(f"{LEFT_OUT(count=left, what='matches')}: Grep or Read finds them)")
    return "\n\n".join(parts)


_TAIL_ROOM = 64  # the line that counts what was left out


class _Files:
    """The workspace's files as lines, and what each line does with a name, each read once in a search
    (the facts, the named files' counts and the regions all look at the same few files)."""

    def __init__(self, workspace: Path) -> None:
        self.workspace = workspace
        self._read: dict[str, bytes] = {}
        self._lines: dict[str, list[str]] = {}
        self._roles: dict[str, FileRoles | None] = {}

    def data(self, path: str) -> bytes:
        if path not in self._read:
            self._read[path] = _read(self.workspace / path)
        return self._read[path]

    def lines(self, path: str) -> list[str]:
        if path not in self._lines:
            self._lines[path] = self.data(path).decode("utf-8", "replace").splitlines()
        return self._lines[path]

    def role(self, path: str, term: str, line: int) -> str:
        """What line `line` of `path` does with `term`, from its syntax tree; PROSE when it has none."""
        if path not in self._roles:
            self._roles[path] = file_roles(self.data(path), path)
        found = self._roles[path]
        return PROSE if found is None else found.of(term).get(line, PROSE)


def _read(real: Path) -> bytes:
    try:
        if not os.path.isfile(real) or os.path.islink(real):
            return b""
        with open(real, "rb") as f:
            return f.read(int(MAP_FILE_BYTES.value))
    except OSError:
        return b""
