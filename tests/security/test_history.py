"""The REPL's history holds what the user typed, keys included: it is 0600 and redacted, in memory and
on disk (issue 12, breach 5)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from aforo.cli.history import RedactedHistory
from aforo.store.paths import history_path

TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
TYPED = f"why does GITHUB_TOKEN={TOKEN} fail with 401?"


def test_typed_secrets_never_reach_the_history_file(open_umask: None) -> None:
    history = RedactedHistory(history_path())
    history.append_string(TYPED)
    history.append_string("a second\nline")
    path = history_path()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert TOKEN not in path.read_text()
    # Up recalls the redacted line, in this session and the next; other lines come back as typed.
    for strings in (history.get_strings()[::-1], list(RedactedHistory(path).load_history_strings())):
        assert strings[0] == "a second\nline"
        assert strings[1].startswith("why does GITHUB_TOKEN=[REDACTED:") and strings[1].endswith(
            " fail with 401?"
        )


def test_an_older_aforos_verbatim_0644_history_is_redacted_and_made_private(aforo_home: Path) -> None:
    path = aforo_home / "history"
    path.write_text(f"\n# 2026-01-01 10:00:00\n+{TYPED}\n\n# 2026-01-01 10:01:00\n+/context\n")
    os.chmod(path, 0o644)
    history = RedactedHistory(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert TOKEN not in path.read_text()
    strings = list(history.load_history_strings())
    assert (
        strings[0] == "/context"
        and strings[1].startswith("why does GITHUB_TOKEN=")
        and TOKEN not in strings[1]
    )
