"""The headings aforo writes above what it shows the model, each written and recognised from one template.

A small model answers with what it was shown last, headings and all (loop/copied tells such a copy
apart). A heading's words live in one `Heading`, owned by the module that writes it: the producer
writes it by calling it, and loop/copied recognises it by its `pattern`, built from the same template,
so a heading reworded where it is written is still recognised where it is copied. Read's heading is
here because two modules write it (tools/read_tool, and tools/long_file for a file too long to show).
"""

from __future__ import annotations

import re
import string

from aforo.citations import PATH

# A count of lines as the tools write it: exact, or a floor when they stopped counting.
LINES = r"(?:at least )?\d+ lines?"


def line_count(count: int, exact: bool = True) -> str:
    """`12 lines`, `1 line`, `at least 12 lines`: the `LINES` a tool writes."""
    return f"{'' if exact else 'at least '}{count} line{'' if count == 1 else 's'}"


class Heading:
    """A heading's words with a `{field}` for each part that varies, and the pattern of each field's
    values (its producer knows what it puts there: a path, a count, a name)."""

    def __init__(self, template: str, **fields: str) -> None:
        self.template = template
        self._parts = [(literal, field) for literal, field, _, _ in string.Formatter().parse(template)]
        self._fields = fields
        missing = {f for _, f in self._parts if f is not None} - fields.keys()
        if missing:
            raise ValueError(f"heading {template!r} has no pattern for {sorted(missing)}")

    def __call__(self, **values: object) -> str:
        return self.template.format(**values)

    def pattern(self, **looser: str) -> str:
        """The regex of the heading as written (not anchored); `looser` replaces a field's pattern with
        one that also takes how a copy writes it (a path in backticks)."""
        fields = self._fields | looser
        return "".join(
            re.escape(literal) + ("" if field is None else f"(?:{fields[field]})")
            for literal, field in self._parts
        )


# Read's heading: `path: 392 lines` (a whole file, or one too long to show), `path: lines 1-40 of 392`.
FILE_LINES = Heading("{path}: {count}", path=PATH, count=LINES)
FILE_RANGE = Heading(
    "{path}: lines {first}-{last} of {total}",
    path=PATH,
    first=r"\d+",
    last=r"\d+",
    total=r"(?:at least )?\d+",
)
# What a tool or the pre-search left out, as the first words of its note: `(12 more lines not shown`.
LEFT_OUT = Heading("({count} more {what} not shown", count=r"(?:at least )?\d+", what=r"[a-z]+")
