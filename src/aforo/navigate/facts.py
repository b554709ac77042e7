"""What a question asks, and the one fact that answers it, said first and in words.

A small model copies what it is shown: given search hits to choose from, the 1.5B named the module that
*defines* `HTTPAdapter` when asked which module imports it, although the importing line was among the
hits. So for the questions the syntax tree answers exactly (where is X defined, what calls X, which
module imports X, which file is longer, how many lines a file has) the pre-search starts with the answer
as a sentence: "`group` is defined in decorators.py at line 263." Each sentence is made from what the
pre-search found (definitions from the symbol index, calls and imports from the syntax tree of each
line, lengths from the files), never from a docstring, a comment or a type declaration.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from aforo.headings import line_count
from aforo.tools.names import show
from aforo.tools.roles import CALLS, DEFINES, IMPORTS, TYPED

WHERE, CALLERS, IMPORTERS, COMPARE, OVERVIEW = "where", "calls", "imports", "compare", "overview"
LENGTH = "length"
MOST_NAMED = 12  # places one sentence names; the rest are counted
NAMED_OPENING = "The files the question names:"  # the start of the sentence that counts their lines
_ASKS = (
    (OVERVIEW, re.compile(
        r"^\W*(what\s+(does|is)\s+(this|the)\s+(package|project|library|repo(sitory)?|code(base)?|tool|app"
        r"(lication)?|program|workspace)(\s+(do|for|about))?|what\s+is\s+this|describe\s+(this|the)\s+\w+"
        r"|(give\s+me\s+)?an\s+overview(\s+of\s+(this|the)\s+\w+)?)\W*$",
        re.IGNORECASE,
    )),
    # "How many lines does _funcs.py have?": the 1.5B, given no count, answered 73 for 522.
    (LENGTH, re.compile(r"\bhow\s+(many\s+lines|long)\b|\bnumber\s+of\s+lines\b|\bline\s+count\b", re.I)),
    (CALLERS, re.compile(r"\b(calls?|called|callers?|invoke[sd]?|uses?)\b", re.IGNORECASE)),
    (IMPORTERS, re.compile(r"\bimport(s|ed|ing)?\b", re.IGNORECASE)),
    (COMPARE, re.compile(r"\b(longer|shorter|longest|shortest|larger|smaller|bigger|more lines)\b", re.I)),
    (WHERE, re.compile(r"\bwhere\b|\bdefined\b|\bdeclared\b|\bdefinition\b", re.IGNORECASE)),
)  # fmt: skip


def asks(question: str) -> str | None:
    """The kind of question (the first of `_ASKS` that matches), or None."""
    return next((kind for kind, pattern in _ASKS if pattern.search(question)), None)


@dataclass(frozen=True)
class Place:
    """A line the pre-search found for a term, and what the code does there (tools/roles)."""

    path: str
    line: int
    term: str
    role: str
    inside: str = ""  # the definition it is in (`Signer.get_signature`); "" at the top level


def facts(kind: str | None, places: Sequence[Place], lengths: Sequence[tuple[str, int]]) -> list[str]:
    """The sentences that answer a question of `kind` from what was found, one per name asked about."""
    if kind == COMPARE and len(lengths) >= 2:
        return [compared(lengths)]
    if kind == LENGTH and lengths:
        return [_lengths(lengths)]
    role = {WHERE: DEFINES, CALLERS: CALLS, IMPORTERS: IMPORTS}.get(kind or "")
    if role is None:
        return []
    said = []
    for term in dict.fromkeys(p.term for p in places):
        mine = [p for p in places if p.term == term]
        sentence = _SENTENCES[role](term, [p for p in mine if p.role == role])
        declared = [p for p in mine if p.role == TYPED] if role == DEFINES else []
        if sentence or declared:
            said.append(_with_declarations(sentence, term, declared))
    return said


def _defined(term: str, places: Sequence[Place]) -> str:
    if not places:
        return ""
    where = _by_file(places, lambda p: f"line {p.line}" + (f" (in {show(p.inside)})" if p.inside else ""))
    return f"`{show(term)}` is defined in {where}."


def _called(term: str, places: Sequence[Place]) -> str:
    if not places:
        return ""
    callers = [f"{show(p.inside) if p.inside else 'the top level'} ({show(p.path)}:{p.line})" for p in places]
    return f"`{show(term)}` is called by {_listed(callers)}."


def _imported(term: str, places: Sequence[Place]) -> str:
    if not places:
        return ""
    modules = _by_file(places, lambda p: str(p.line), at=" (line {})", plural=" (lines {})")
    return f"`{show(term)}` is imported by {modules}."


_SENTENCES = {DEFINES: _defined, CALLS: _called, IMPORTS: _imported}


def _with_declarations(sentence: str, term: str, declared: Sequence[Place]) -> str:
    """Type declarations (`.pyi`, `.d.ts`) said as what they are, after the definitions."""
    if not declared:
        return sentence
    where = ", ".join(f"{show(p.path)}:{p.line}" for p in declared[:MOST_NAMED])
    said = f"declared in {where} (type declaration{'s' if len(declared) > 1 else ''})"
    if not sentence:
        return f"`{show(term)}` is {said}; no definition of it in code was found."
    return f"{sentence[:-1]}, and {said}."


def _by_file(
    places: Sequence[Place], what: Callable[[Place], str], at: str = " at {}", plural: str = " at {}"
) -> str:
    """`a.py at line 4 and b.py at line 9`, one file once: `p.py at line 4 and line 17`."""
    files: dict[str, list[str]] = {}
    for p in places:
        files.setdefault(p.path, []).append(what(p))
    named = [
        show(path) + (plural if len(said) > 1 else at).format(_listed(said))
        for path, said in list(files.items())[:MOST_NAMED]
    ]
    more = len(files) - MOST_NAMED
    return _listed(named + ([f"{more} more files"] if more > 0 else []))


def _listed(items: Sequence[str]) -> str:
    shown = list(items[:MOST_NAMED]) + (
        [f"{len(items) - MOST_NAMED} more"] if len(items) > MOST_NAMED else []
    )
    return shown[0] if len(shown) == 1 else f"{', '.join(shown[:-1])} and {shown[-1]}"


def compared(lengths: Sequence[tuple[str, int]]) -> str:
    """Files' lengths (longest first) in a sentence: `main.py (392 lines) is longer than parser.py (175
    lines).`; of more than two, the longest named."""
    if len(lengths) == 2 and lengths[0][1] != lengths[1][1]:
        (longer, more), (shorter, fewer) = lengths
        return f"{show(longer)} ({line_count(more)}) is longer than {show(shorter)} ({line_count(fewer)})."
    return named_files(lengths)


def _lengths(lengths: Sequence[tuple[str, int]]) -> str:
    """`src/attr/_funcs.py` has 522 lines.`; of several files, each with its count."""
    if len(lengths) == 1:
        path, lines = lengths[0]
        return f"`{show(path)}` has {line_count(lines)}."
    return named_files(lengths)


def named_files(lengths: Sequence[tuple[str, int]]) -> str:
    """`The files the question names: a.py is the longest (266 lines); then b.py (228 lines).`"""
    return f"{NAMED_OPENING} {counted(lengths)}."


def counted(lengths: Sequence[tuple[str, int]]) -> str:
    """The files' lengths, saying which is the longest when one is: "a.py is the longest (266 lines);
    then b.py (228 lines)"."""
    said = [f"{show(path)} ({line_count(lines)})" for path, lines in lengths]
    if len(lengths) == 1:
        return said[0]
    if lengths[0][1] == lengths[1][1]:
        return f"longest first, {', '.join(said)}"
    return f"{said[0].replace(' (', ' is the longest (', 1)}; then {', '.join(said[1:])}"
