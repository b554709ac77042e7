"""The session's trail as the model sees it: a few plain lines, within TRAIL_BLOCK_CHARS.

Plain words, never `Read a.py`: the call format a small model copied instead of answering. The files
read come apart from the searches made, each file by its name with the line its tool said of it: on
click the pre-search's searches, shown as `searched for \\b(want|understand|click)\\b` beside the reads,
were all the record listed, and the 1.5B named a file it had not read. The earlier questions are
numbered, each with how its answer began, so "what did you say about X?" is matched to the question
about X, not taken from the newest answer (what the 1.5B answered after two compactions).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from aforo.context.trail import Trail, clip
from aforo.limits import TRAIL_BLOCK_CHARS

BLOCK_HEADER = (
    "aforo's record of this session (kept by aforo, exact). For a question about the session itself "
    "(the goal, the rules, what was decided, read, found or answered), answer from it:"
)
READS_HEADER = "- Files you have read in this session, in order:"
NO_READS = "- Files you have read in this session: none (you answered from aforo's searches)."
DEFINED_HEADER = "- Where aforo's symbol index says the names of this question are defined:"
ANSWERS_HEADER = "- The user's questions in this session, numbered, oldest first, with how you answered:"
# How long a question and its answer may be in that list: shorter as the session grows, so every one
# fits before any is left out ("what did you say about X?" may be about the first).
_ANSWER_CHARS = (300, 160, 110, 80, 50)
_VERBS = {"Grep": "searched for", "Find": "looked up the definition of", "Glob": "listed files matching"}
_SEARCHED = {"Grep": "", "Find": "the definition of ", "Glob": "files matching "}
# The pre-search's pattern of whole words: `\b(a|b)\b` is the words a, b.
_WORDS = re.compile(r"\\b\((?P<words>[^()]+)\)\\b")


def shown_source(source: str, fact: str) -> str:
    """One read or search in plain words (never `Read a.py`, the call format a small model copies)."""
    tool, _, target = source.partition(" ")
    what = target if tool in ("Read", "LS") else f"{_VERBS.get(tool, tool)} {_terms(target)}"
    if not fact:
        return what
    path = target.split(" ", 1)[0]
    return fact if tool == "Read" and fact.startswith(path) else f"{what}: {fact}"


def _terms(target: str) -> str:
    """A search's target as its words (`pass_context`, not `\\b(pass_context)\\b`)."""
    found = _WORDS.fullmatch(target.strip())
    return ", ".join(found["words"].replace("\\", "").split("|")) if found else target


def _searched(source: str) -> str:
    """A search as what it looked for: `pass_context`, `the definition of Signer`."""
    tool, _, target = source.partition(" ")
    return f"{_SEARCHED.get(tool, tool + ' ')}{_terms(target)}"


def _reads(trail: Trail) -> tuple[list[tuple[str, str]], list[str]]:
    """The files read (source, fact) and the searches made (in plain words), each in order."""
    files = [(s, f) for s, f in trail.read if s.split(" ", 1)[0] in ("Read", "LS")]
    searches = [_searched(s) for s, _ in trail.read if s.split(" ", 1)[0] not in ("Read", "LS")]
    return files, searches


def block(trail: Trail, defined: Sequence[str] = ()) -> str:
    """The trail as a few plain lines, at most TRAIL_BLOCK_CHARS: the goal, the rules and the decisions
    first; then the files read (facts dropped before files), the searches made; then the earlier
    questions, numbered, with how each answer began (cut shorter before any is left out); last, where
    the names the question asks about are `defined` (the symbol index's sentences), which always fit."""
    said = "\n".join([DEFINED_HEADER, *(f"  - {clip(d)}" for d in defined)]) if defined else ""
    limit = int(TRAIL_BLOCK_CHARS.value) - (len(said) + 1 if said else 0)
    head = [BLOCK_HEADER, f"- The user's first request (their goal): {clip(trail.goal)}"]
    head += [f"- A rule the user gave you: {r}" for r in trail.rules]
    head += [f"- Decided: {d.decision}" + (f" (why: {d.why})" if d.why else "") for d in trail.decisions]
    files, searches = _reads(trail)
    room = (limit - _size(head)) // 2
    read = _fit([f"  - {shown_source(s, f)}" for s, f in files], room)
    if len(read) < len(files):  # the facts do not fit: every file, without them
        read = _fit([f"  - {shown_source(s, '')}" for s, _ in files], room)
    lines = [*head, READS_HEADER, *read] if read else [*head, NO_READS]
    if searches:
        lines += _fit([f"- aforo searched for: {'; '.join(searches[::-1])}"[: room - _size(read)]], room)
    room = limit - _size(lines) - len(ANSWERS_HEADER) - 1
    for chars in _ANSWER_CHARS:
        asked = [
            f"  {n}. The user asked: {clip(q, chars)!r} You answered: {clip(a, chars)}"
            for n, (q, a) in enumerate(trail.answers, start=1)
        ]
        if _size(asked) <= room:
            break
    earlier = _fit(asked[::-1], room)[::-1]  # past the shortest cut, the oldest leave
    if earlier:
        lines += [ANSWERS_HEADER, *earlier]
    kept = "\n".join(lines)[:limit]
    return f"{kept}\n{said}" if said else kept


def _size(lines: list[str]) -> int:
    return sum(len(line) + 1 for line in lines)


def _fit(lines: list[str], room: int) -> list[str]:
    """The first of `lines` that fit in `room` characters."""
    kept, used = [], 0
    for line in lines:
        used += len(line) + 1
        if used > room:
            break
        kept.append(line)
    return kept
