"""Running ripgrep safely: no shell, a deadline, bounded stderr, output streamed record by record.

`rg` comes from the `ripgrep` wheel, installed next to the Python interpreter, so no system rg is
needed. The caller reads records as they arrive and may stop early (the process is killed), which
keeps a search over a huge tree from producing output nobody will read.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from aforo.errors import ToolError

DEFAULT_TIMEOUT = 30.0
_STDERR_LIMIT = 8192

# Flags shared by every search. --no-config: RIPGREP_CONFIG_PATH could otherwise inject flags such as
# --follow (leaving the workspace through symlinks). --no-require-git: honour .gitignore even when the
# workspace is not a git checkout. --hidden with !.git: dotfiles such as .github/ are part of a
# project, the .git directory is not.
BASE_ARGS: tuple[str, ...] = (
    "--no-config",
    "--no-require-git",
    "--hidden",
    "--glob",
    "!.git",
    "--color",
    "never",
)


def rg_binary() -> str:
    """The rg of the ripgrep wheel (next to sys.executable), else one on PATH."""
    bundled = Path(sys.executable).parent / "rg"
    if bundled.is_file() and os.access(bundled, os.X_OK):
        return str(bundled)
    found = shutil.which("rg")
    if found:
        return found
    raise ToolError(
        "ripgrep (rg) is not installed: it was not found next to the Python interpreter nor on PATH. "
        "Reinstall aforo (it depends on the `ripgrep` wheel) or install ripgrep."
    )


@dataclass(frozen=True)
class Outcome:
    returncode: int | None
    stderr: str
    timed_out: bool
    stopped_early: bool

    @property
    def failed(self) -> bool:
        # rg exits 0 with matches, 1 without, 2 on any error (bad regex, unreadable file...).
        return self.returncode not in (0, 1) and not self.stopped_early and not self.timed_out


class RgProcess:
    """One rg run, used as a context manager: iterate `records()`, then `finish()` says how it ended."""

    def __init__(
        self, args: Sequence[str], cwd: Path, *, sep: bytes = b"\n", timeout: float = DEFAULT_TIMEOUT
    ) -> None:
        self._sep = sep
        self._timed_out = False
        self._stopped = False
        self._eof = False
        self._stderr = bytearray()
        self._outcome: Outcome | None = None
        try:
            self._proc = subprocess.Popen(
                [rg_binary(), *BASE_ARGS, *args],
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
        except OSError as exc:
            raise ToolError(f"could not start ripgrep: {exc}") from exc
        # Popen with PIPE always sets these; raw fds avoid the buffering of the file objects.
        self._stdout_fd = self._proc.stdout.fileno() if self._proc.stdout else -1
        self._stderr_fd = self._proc.stderr.fileno() if self._proc.stderr else -1
        self._timer = threading.Timer(timeout, self._expire)
        self._timer.daemon = True
        self._timer.start()
        # stderr is drained in a thread so a chatty rg (many unreadable files) cannot fill the pipe
        # and block while we read stdout.
        self._drain = threading.Thread(target=self._read_stderr, daemon=True)
        self._drain.start()

    def _expire(self) -> None:
        self._timed_out = True
        self._proc.kill()

    def _read_stderr(self) -> None:
        while chunk := os.read(self._stderr_fd, 4096):
            if len(self._stderr) < _STDERR_LIMIT:
                self._stderr += chunk

    def records(self) -> Iterator[str]:
        """Each output record (a line, or a NUL-terminated path), decoded leniently."""
        pending = b""
        while not self._stopped and (chunk := os.read(self._stdout_fd, 65536)):
            pending += chunk
            *complete, pending = pending.split(self._sep)
            for record in complete:
                yield record.decode("utf-8", errors="replace")
        self._eof = not self._stopped
        if pending:
            yield pending.decode("utf-8", errors="replace")

    def stop(self) -> None:
        """The caller has read enough: end rg now."""
        if self._proc.poll() is None:
            self._stopped = True
            self._proc.kill()

    def __enter__(self) -> RgProcess:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.finish()

    def finish(self) -> Outcome:
        """Stop rg if it still runs, reap it and say how it ended (idempotent)."""
        if self._outcome is not None:
            return self._outcome
        # After EOF rg is exiting on its own: killing it now would hide its exit status (a bad regex).
        if not self._eof:
            self.stop()
        returncode = self._proc.wait()
        self._timer.cancel()
        self._drain.join()
        for stream in (self._proc.stdout, self._proc.stderr):
            if stream is not None:
                stream.close()
        self._outcome = Outcome(
            returncode=returncode,
            stderr=self._stderr.decode("utf-8", errors="replace").strip(),
            timed_out=self._timed_out,
            stopped_early=self._stopped,
        )
        return self._outcome


def list_files(cwd: Path, paths: Sequence[str] = (), *, timeout: float = DEFAULT_TIMEOUT) -> set[str]:
    """Every file rg would search under `paths` (relative to `cwd`), honouring the ignore files.

    Used to filter results of runs with --glob: rg's globs override ignore rules, so a file ignored
    by .gitignore but matching the glob would otherwise show up.
    """
    args = ["--files", "--null", "--", *paths] if paths else ["--files", "--null"]
    with RgProcess(args, cwd, sep=b"\0", timeout=timeout) as proc:
        files = {strip_dot(record) for record in proc.records()}
    if proc.finish().timed_out:
        raise ToolError(f"listing files took longer than {timeout:g} s; search a smaller directory")
    return files


def strip_dot(path: str) -> str:
    """rg prints './x' when searching '.'; the model sees 'x'."""
    return path[2:] if path.startswith("./") else path
