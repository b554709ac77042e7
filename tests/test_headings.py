"""A heading is written and recognised from one template (aforo.headings)."""

from __future__ import annotations

import re

import pytest

from aforo.headings import FILE_LINES, FILE_RANGE, LEFT_OUT, Heading, line_count


def test_a_heading_is_written_from_its_template_and_recognised_by_its_fields_patterns() -> None:
    listing = Heading("{directory}/ ({count} entries)", directory=r"\S*", count=r"\d+")
    assert listing(directory="src", count=12) == "src/ (12 entries)"
    assert re.fullmatch(listing.pattern(), "pkg/sub/ (3 entries)")
    # Its words are matched as words, never as a pattern: `(` and `.` are themselves.
    assert not re.fullmatch(listing.pattern(), "pkg/ 3 entries")
    assert not re.fullmatch(listing.pattern(), "pkg/ (three entries)")


def test_a_looser_field_takes_how_a_copy_writes_it() -> None:
    assert FILE_LINES(path="a.py", count=line_count(392)) == "a.py: 392 lines"
    assert not re.fullmatch(FILE_LINES.pattern(), "`a.py`: 392 lines")
    assert re.fullmatch(FILE_LINES.pattern(path=r"`a\.py`"), "`a.py`: 392 lines")
    assert (
        FILE_RANGE(path="a.py", first=1, last=40, total="at least 392") == "a.py: lines 1-40 of at least 392"
    )
    assert re.fullmatch(FILE_RANGE.pattern(), "a.py: lines 1-40 of at least 392")


def test_counts_of_lines_and_of_what_was_left_out() -> None:
    assert [line_count(1), line_count(2), line_count(7, exact=False)] == [
        "1 line",
        "2 lines",
        "at least 7 lines",
    ]
    assert LEFT_OUT(count="at least 5", what="files") == "(at least 5 more files not shown"
    assert re.match(LEFT_OUT.pattern(), "(12 more lines not shown; narrow the pattern)")


def test_a_field_without_a_pattern_is_refused_where_the_heading_is_made() -> None:
    with pytest.raises(ValueError, match=r"no pattern for \['count'\]"):
        Heading("{name} is used in {count}:", name=r"\w+")
