"""docs/limits.md's table of limits lists every entry of `aforo.limits.LIMITS`, as it is, and nothing else."""

from __future__ import annotations

from pathlib import Path

from aforo.limits import LIMITS

LIMITS_PAGE = Path(__file__).resolve().parents[1] / "docs" / "limits.md"


def page_rows() -> dict[str, list[str]]:
    text = LIMITS_PAGE.read_text(encoding="utf-8")
    section = text.split("# Limits\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    cells = [[c.strip() for c in row.strip("|").split(" | ")] for row in rows]
    return {c[0].strip("`"): c[1:] for c in cells}


def test_the_limits_page_table_and_the_limits_agree() -> None:
    rows = page_rows()
    assert sorted(rows) == sorted(LIMITS)
    for name, limit in LIMITS.items():
        value, what, how = rows[name]
        shown = f"{limit.value:,}" if isinstance(limit.value, int) else f"{limit.value:g}"
        assert value == f"{shown} {limit.unit}", name
        assert what == limit.what, name
        assert how == (limit.setting or "fixed"), name
