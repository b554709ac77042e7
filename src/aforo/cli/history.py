"""The REPL's line history, kept like every other state file: private (0600) and redacted.

People paste keys into a prompt ("why does OPENAI_API_KEY=sk-... fail?"). Each line is redacted with
`aforo.store.redact.redact` before it is kept, in memory and on disk alike, so what Up recalls is the
redacted line: the secret never reaches the file, and recalling a line never resends one either.

The file keeps prompt_toolkit's `FileHistory` format, with a first line that marks it as redacted. A
history without that mark was written by an older aforo (0644, verbatim): it is redacted and made 0600
once, when it is first opened.
"""

from __future__ import annotations

import contextlib
import datetime
import os
from pathlib import Path

from prompt_toolkit.history import FileHistory

from aforo.errors import StoreError
from aforo.store.atomic import atomic_write
from aforo.store.paths import open_private
from aforo.store.redact import redact

MARK = "# aforo history: every entry redacted, file 0600\n"


def _entry(string: str) -> str:
    lines = "".join(f"+{line}\n" for line in string.split("\n"))
    return f"\n# {datetime.datetime.now()}\n{lines}"


class RedactedHistory(FileHistory):
    """A `FileHistory` at `path` that stores each entry redacted, in a 0600 file."""

    def __init__(self, path: Path) -> None:
        super().__init__(str(path))
        self.path = path
        self._upgrade()

    def _upgrade(self) -> None:
        try:
            with self.path.open("rb") as fh:
                if fh.readline().decode("utf-8", "replace") == MARK:
                    return
        except FileNotFoundError:
            atomic_write(self.path, MARK.encode())
            return
        except OSError as exc:
            raise StoreError(f"cannot read the history {self.path}: {exc.strerror or exc}") from exc
        oldest_first = reversed(list(super().load_history_strings()))
        body = MARK + "".join(_entry(redact(s)) for s in oldest_first)
        atomic_write(self.path, body.encode("utf-8", "replace"))

    def append_string(self, string: str) -> None:
        super().append_string(redact(string))

    def store_string(self, string: str) -> None:
        # Redacted here too: a wrapper (prompt_toolkit's ThreadedHistory) may call it directly.
        data = _entry(redact(string)).encode("utf-8", "replace")
        # History is a convenience: a full disk must not end the session; the line stays in memory.
        with (
            contextlib.suppress(OSError),
            os.fdopen(open_private(self.path, os.O_WRONLY | os.O_APPEND), "ab") as fh,
        ):
            fh.write(data)
