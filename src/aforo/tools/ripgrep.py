"""Running ripgrep safely: no shell, the call's deadline, bounded stderr, output streamed record by record.

`rg` comes from the `ripgrep` wheel, installed next to the Python interpreter, so no system rg is
needed. The caller reads records as they arrive and may stop early (the process is killed), which
keeps a search over a huge tree from producing output nobody will read. A watcher kills rg as soon as
the call is cancelled or passes its deadline (one deadline shared by every rg of a call), and `finish`
then raises `Interrupted`. Records are bytes: the caller decodes paths with `os.fsdecode`, so a name
that is not UTF-8 survives intact. rg runs with its data segment capped (`child_memory_bytes`): a
workspace's ignore rules are compiled in memory, and a huge .gitignore would otherwise take gigabytes;
a run the cap ends is reported as that limit, naming the largest ignore file on the way.
"""

from __future__ import annotations

import contextlib
import functools
import os
import resource
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from types import TracebackType

from aforo.errors import ToolError, ToolLimitExceeded
from aforo.limits import CHILD_MEMORY_BYTES, Limit, MiB
from aforo.protocols import ToolContext
from aforo.tools.deadline import POLL_S, Interrupted, check, interruption
from aforo.tools.names import show

_STDERR_LIMIT = 8192
# rg names the file in each per-file error ("rg: ./src/x.py: Permission denied (os error 13)"). Every
# path we give rg starts with "./" or is ".", so an error line that does not is about the whole run.
_FILE_ERROR = "rg: ./"
_NAMED_PROBLEMS = 5
# What rg (Rust) prints when an allocation fails, before it aborts.
_NO_MEMORY = "memory allocation of"
_IGNORE_FILES = (".gitignore", ".ignore", ".rgignore")
# An ignore file smaller than this is not worth naming as the likely cause.
_BIG_IGNORE = 1 * MiB

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
class RgExit:
    """How one rg run ended: its exit code, its error lines, whether aforo stopped it early."""

    returncode: int | None
    # rg's error lines (at most _STDERR_LIMIT bytes of them), each escaped for display.
    errors: tuple[str, ...]
    stopped_early: bool

    @property
    def unreadable(self) -> tuple[str, ...]:
        """The files rg could not read, as 'path: reason' relative to where it ran."""
        return tuple(line.removeprefix(_FILE_ERROR) for line in self.errors if line.startswith(_FILE_ERROR))

    @property
    def failed(self) -> bool:
        """rg failed as a whole (a bad regex or glob), not only on some files it could not read."""
        # rg exits 0 with matches, 1 without, 2 on any error.
        if self.returncode in (0, 1) or self.stopped_early:
            return False
        # Lines that do not start with "rg: " continue a multi-line message (a regex error's caret).
        whole = [line for line in self.errors if line.startswith("rg: ") and not line.startswith(_FILE_ERROR)]
        return bool(whole) or not self.unreadable

    @property
    def message(self) -> str:
        return "\n".join(self.errors)


class RgProcess:
    """One rg run, used as a context manager: iterate `records()`, then `finish()` says how it ended."""

    def __init__(self, args: Sequence[str], cwd: Path, ctx: ToolContext, *, sep: bytes = b"\n") -> None:
        check(ctx)
        self._sep = sep
        self._ctx = ctx
        self._stopped = False
        self._eof = False
        self._interrupted: Interrupted | None = None
        self._done = threading.Event()
        self._stderr = bytearray()
        self._outcome: RgExit | None = None
        self._cwd = cwd
        self._cap = _memory_cap()
        try:
            self._proc = subprocess.Popen(
                [rg_binary(), *BASE_ARGS, *args],
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                # In the child, before rg starts: setrlimit alone, no lock nor import, so the warning
                # about preexec_fn and threads (a lock another thread held at the fork) does not apply.
                preexec_fn=functools.partial(
                    resource.setrlimit, resource.RLIMIT_DATA, (self._cap, self._cap)
                ),
            )
        except OSError as exc:
            raise ToolError(f"could not start ripgrep: {exc}") from exc
        # Popen with PIPE always sets these; raw fds avoid the buffering of the file objects.
        self._stdout_fd = self._proc.stdout.fileno() if self._proc.stdout else -1
        self._stderr_fd = self._proc.stderr.fileno() if self._proc.stderr else -1
        self._watcher = threading.Thread(target=self._watch, name="aforo-rg-watch", daemon=True)
        self._watcher.start()
        # stderr is drained in a thread so a chatty rg (many unreadable files) cannot fill the pipe
        # and block while we read stdout.
        self._drain = threading.Thread(target=self._read_stderr, name="aforo-rg-stderr", daemon=True)
        self._drain.start()

    def _watch(self) -> None:
        while not self._done.wait(POLL_S):
            stop = interruption(self._ctx)
            if stop is not None:
                self._interrupted = stop
                self._proc.kill()
                return

    def _read_stderr(self) -> None:
        while chunk := os.read(self._stderr_fd, 4096):
            if len(self._stderr) < _STDERR_LIMIT:
                self._stderr += chunk

    def records(self) -> Iterator[bytes]:
        """Each output record: a line, or a NUL-terminated path, without its separator."""
        pending = b""
        while not self._stopped and (chunk := os.read(self._stdout_fd, 65536)):
            pending += chunk
            *complete, pending = pending.split(self._sep)
            yield from complete
        self._eof = not self._stopped
        if pending:
            yield pending

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

    def finish(self) -> RgExit:
        """Stop rg if it still runs, reap it and say how it ended (idempotent).

        Raises Interrupted when the watcher killed rg: whatever was read may be incomplete."""
        if self._outcome is None:
            # After EOF rg is exiting on its own: killing it now would hide its exit status (a bad regex).
            if not self._eof:
                self.stop()
            returncode = self._proc.wait()
            self._done.set()
            self._drain.join()
            for stream in (self._proc.stdout, self._proc.stderr):
                if stream is not None:
                    stream.close()
            text = os.fsdecode(bytes(self._stderr)).strip()
            self._outcome = RgExit(
                returncode=returncode,
                errors=tuple(show(line) for line in text.splitlines() if line.strip()),
                stopped_early=self._stopped,
            )
        if self._interrupted is not None:
            raise self._interrupted
        if self._out_of_memory():
            raise ToolLimitExceeded(
                self._limit(), f"ripgrep ran out of memory{_ignore_hint(self._cwd, self._ctx)}"
            )
        return self._outcome

    def _out_of_memory(self) -> bool:
        """rg ended itself by aborting (what Rust does when an allocation fails), not by our kill."""
        outcome = self._outcome
        if outcome is None or outcome.stopped_early:
            return False
        return outcome.returncode == -signal.SIGABRT or any(_NO_MEMORY in line for line in outcome.errors)

    def _limit(self) -> Limit:
        return replace(CHILD_MEMORY_BYTES, value=self._cap)


def _memory_cap() -> int:
    """The cap of `child_memory_bytes`, or the lower one aforo itself runs under (a child cannot raise
    its hard limit)."""
    cap = int(CHILD_MEMORY_BYTES.value)
    hard = resource.getrlimit(resource.RLIMIT_DATA)[1]
    return cap if hard == resource.RLIM_INFINITY else min(cap, hard)


def _ignore_hint(cwd: Path, ctx: ToolContext) -> str:
    """The largest ignore file rg read from the workspace's root down to `cwd`, when it is big enough
    to be the likely cause: rg compiles every rule of it."""
    sizes: list[tuple[int, Path]] = []
    root = ctx.workspace.resolve()
    folder = cwd.resolve()
    if not folder.is_relative_to(root):
        return ""
    for place in (folder, *folder.parents):
        for name in _IGNORE_FILES:
            with contextlib.suppress(OSError):
                sizes.append((os.stat(place / name).st_size, place / name))
        if place == root:
            break
    size, path = max(sizes, default=(0, root))
    if size < _BIG_IGNORE:
        return ""
    shown = show(os.fsdecode(path.relative_to(root)))
    return f" (the workspace's {shown} is {size / MiB:.1f} MiB: ripgrep holds every rule of it in memory)"


def unreadable_note(outcome: RgExit, prefix: str) -> list[str]:
    """A note naming what rg could not read (paths relative to the workspace), or nothing."""
    problems = outcome.unreadable
    if not problems:
        return []
    named = [p if prefix == "." else f"{prefix}/{p}" for p in problems[:_NAMED_PROBLEMS]]
    more = f"; and {len(problems) - _NAMED_PROBLEMS} more" if len(problems) > _NAMED_PROBLEMS else ""
    return [f"(some files could not be read and were skipped: {'; '.join(named)}{more})"]


def list_files(cwd: Path, ctx: ToolContext, paths: Sequence[str] = ()) -> set[str]:
    """Every file rg would search under `paths` (relative to `cwd`), honouring the ignore files.

    Used to filter results of runs with --glob: rg's globs override ignore rules, so a file ignored
    by .gitignore but matching the glob would otherwise show up. Names are as `os.fsdecode` gives them.
    """
    args = ["--files", "--null", "--", *paths] if paths else ["--files", "--null"]
    with RgProcess(args, cwd, ctx, sep=b"\0") as proc:
        return {strip_dot(os.fsdecode(record)) for record in proc.records()}


def strip_dot(path: str) -> str:
    """rg prints './x' when searching '.'; the model sees 'x'."""
    return path[2:] if path.startswith("./") else path
