"""Fixtures of the trust-model tests (docs/trust.md)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest


@pytest.fixture
def open_umask() -> Iterator[None]:
    """Umask 000, so any 0600/0700 can only come from aforo (subprocesses inherit it)."""
    old = os.umask(0)
    yield
    os.umask(old)
