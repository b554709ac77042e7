"""The trust model (docs/trust.md) names the tests that check each promise: every name must be a test here."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).parents[2]


def trust_model() -> str:
    return (ROOT / "docs" / "trust.md").read_text()


def test_every_test_the_trust_model_names_exists_in_the_file_it_names() -> None:
    trust = trust_model()
    # "`test_file.py`: `test_a`, `test_b`" — each name belongs to the last file named before it.
    cited: list[tuple[str, str]] = []
    current = ""
    for token in re.findall(r"`(test_\w+(?:\.py)?)`", trust):
        if token.endswith(".py"):
            current = token
        else:
            cited.append((current, token))
    assert len(cited) >= 20
    for file, name in cited:
        tree = ast.parse((Path(__file__).parent / file).read_text())
        defined = {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
        assert name in defined, f"docs/trust.md cites {file}::{name}, which does not exist"
