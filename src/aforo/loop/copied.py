"""aforo's own formats, copied back as an answer: told apart by their shape, line by line.

A small model answers with what it was shown last. Asked where a setting is read from the environment,
the 1.5B answered with thirteen `path:line` places from the pre-search; asked which files it had read,
`Read a.py, Read b.py`; the 0.5B answered with the pre-search's first line and with its labels
(`main.py:186 in set_key calls parse_stream`). None of it is an answer. Each format aforo shows the
model has a shape here: the places of the pre-search, Grep and Find (`path:line`, then a label or the
line's text), Read's numbered lines and its heading (`path: N lines`), the names of the calls of a
step (`Read a.py`), the headings of the pre-search and of tool results, and the reply format's keys.
An answer every line of which has one of those shapes is a copied format; an answer with one sentence
of its own is not.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from aforo import reply_format
from aforo.citations import PATH
from aforo.headings import FILE_LINES, FILE_RANGE, LEFT_OUT
from aforo.messages import ToolSpec
from aforo.navigate import facts, presearch
from aforo.tools import find_tool, ls_tool, read_tool

# A place, as the pre-search, Grep and Find write one: `path:line`, then the line's text after a colon
# or a tab, or a label of a few words (`in Signer.get_signature calls derive_key`).
_PLACE = re.compile(
    rf"`?{PATH}:\d+(?:[-–]\d+)?`?(?:(?::|\t|\s+-\s).*|(?:\s+in\s+[\w.`]+)?(?:\s+[a-z]+\s+[\w.`]+)?\s*[.,;]?)",
)
# One place and nothing else, and a question that asks where a thing is.
_BARE_PLACE = re.compile(rf"`?{PATH}(?::\d+(?:[-–]\d+)?)?`?\.?")
_WHERE = re.compile(r"\b(?:where|which (?:file|module|folder))\b", re.I)
# Read's numbered lines (`12\tcode`), and its heading, alone or opening a long file's view: `path: 392
# lines`, `path: lines 1-40 of 392`; a copy may put the path in backticks.
_NUMBERED = re.compile(r"\d+\t.*")
_COPIED_PATH = rf"`?{PATH}`?"
_READ_HEADING = re.compile(
    rf"\(?(?:{FILE_LINES.pattern(path=_COPIED_PATH)}|{FILE_RANGE.pattern(path=_COPIED_PATH)})\b.*"
)
# The headings aforo writes above what it found, each taken from the module that writes it: of the long
# ones (the pre-search's, the files the question names, the reply format's) their first words, of the
# others the whole line. The pre-search's heading before it began "Before asking you" is still in
# conversations saved then.
_OPENINGS = (presearch.OPENING, "aforo searched the workspace", facts.NAMED_OPENING, reply_format.OPENING)
_WHOLE = (
    reply_format.RESULT_OF.pattern(),
    reply_format.ERROR_FROM.pattern(),
    read_tool.OUTLINE.pattern(),
    find_tool.DEFINED_AT.pattern(),
    find_tool.USED_IN.pattern(),
    ls_tool.LISTING.pattern(),
)
_HEADINGS = re.compile(
    "|".join(
        [
            *(rf"{re.escape(opening)}(?!\w)" for opening in _OPENINGS),
            rf"{LEFT_OUT.pattern()}(?!\w)",  # the count of what was left out: `(12 more lines not shown`
            *(rf"(?:{whole})$" for whole in _WHOLE),
        ]
    ),
    re.I,
)


def copied_format(text: str, tools: Sequence[ToolSpec], question: str = "") -> str:
    """What format of aforo's `text` is made of ("" when it has words of its own): each of its lines
    has the shape of one of them. One bare place (`initialise.py:65`) is the answer to a `question`
    that asks where: asked "In which file did you find deinit?", the 1.5B answered it, right, was
    asked again in words, answered it again, and the question ended with no answer."""
    # A list's markers are the model's; a numbered line's tab is the format's own.
    lines = [re.sub(r"^[\s*•>-]+", "", line).rstrip(" \r") for line in text.splitlines()]
    lines = [line for line in lines if line.strip() and not line.startswith("```")]
    if not lines:
        return ""
    if len(lines) == 1 and _WHERE.search(question) and _BARE_PLACE.fullmatch(lines[0]):
        return ""
    kinds = [_kind(line, tools) for line in lines]
    if not all(kinds):
        return ""
    return " and ".join(dict.fromkeys(kinds))


def _kind(line: str, tools: Sequence[ToolSpec]) -> str:
    if _PLACE.fullmatch(line) or _NUMBERED.fullmatch(line):
        return "a list of places"
    if _READ_HEADING.fullmatch(line):
        return "a Read result's heading"
    if _HEADINGS.match(line):
        return "the heading of what aforo found"
    names = "|".join(re.escape(t.name) for t in tools)
    if names and re.fullmatch(rf"(?:(?:{names})\s+[^\s,]+(?:\s*,\s*|\s+and\s+|\s*\.?$))+", line):
        return "the names of tool calls"
    keys = "|".join(re.escape(k) for k in ("answer", *(t.name.lower() for t in tools)))
    if re.match(rf'\{{?\s*"(?:{keys})"\s*:', line):
        return "the reply format's keys"
    return ""
