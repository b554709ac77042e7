"""The README is an on-ramp: a few screens (at most 300 lines) with the quick start, and a link to every
page under docs/, where the rest is."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def test_the_readme_is_a_few_screens_long() -> None:
    assert len(README.splitlines()) <= 300


def test_the_readme_starts_a_newcomer_off() -> None:
    for line in ("make demo    #", "make test    #", "$ aforo serve --upstream"):
        assert line in README, line


def test_the_readme_links_every_page_under_docs() -> None:
    pages = sorted(page.name for page in (ROOT / "docs").glob("*.md"))
    assert [name for name in pages if f"](docs/{name})" not in README] == []
