"""Every relative link of README.md and docs/*.md resolves: the file exists, and a `#anchor` is a heading
of the target, as GitHub writes a heading's anchor."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```.*?^```", re.M | re.S)
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, code marks and punctuation gone, each space a hyphen."""
    text = heading.strip().lower().replace("`", "")
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """The anchors of a page's headings (not of `#` lines in code), a repeated one numbered as GitHub does."""
    found: set[str] = set()
    for line in FENCE.sub("", page.read_text(encoding="utf-8")).splitlines():
        if heading := re.match(r"#{1,6} (.+)", line):
            base = slug(heading.group(1))
            name, n = base, 0
            while name in found:
                n += 1
                name = f"{base}-{n}"
            found.add(name)
    return found


def broken_links(page: Path) -> list[str]:
    broken = []
    for target in LINK.findall(FENCE.sub("", page.read_text(encoding="utf-8"))):
        if re.match(r"[a-z]+:", target):  # https:, mailto: — not a file of this repository
            continue
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(f"{target}: no file {path}")
        elif anchor and file.suffix == ".md" and anchor not in anchors(file):
            broken.append(f"{target}: no heading #{anchor} in {file.name}")
    return broken


def test_slugs_are_githubs() -> None:
    assert slug("`aforo --local`") == "aforo---local"
    assert slug("3. The three stages, cheapest first") == "3-the-three-stages-cheapest-first"
    assert slug("Prompt → request") == "prompt--request"
    assert slug("The real model in aforo's own tests") == "the-real-model-in-aforos-own-tests"


def test_a_repeated_heading_is_numbered_and_code_is_no_heading(tmp_path: Path) -> None:
    page = tmp_path / "p.md"
    page.write_text("# Use\n\n## Use\n\n```sh\n# not a heading\n```\n", encoding="utf-8")
    assert anchors(page) == {"use", "use-1"}


def test_a_missing_file_or_heading_is_reported(tmp_path: Path) -> None:
    (tmp_path / "other.md").write_text("# Other page\n", encoding="utf-8")
    page = tmp_path / "p.md"
    page.write_text(
        "# Here\n[a](other.md#other-page) [b](#here) [c](gone.md) [d](other.md#gone)\n[e](https://x.org/#y)\n",
        encoding="utf-8",
    )
    assert broken_links(page) == ["gone.md: no file gone.md", "other.md#gone: no heading #gone in other.md"]


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_every_relative_link_resolves(page: Path) -> None:
    assert broken_links(page) == []
