"""Crash-safe file replacement: a reader sees the old file or the new one, never a torn mix.

The recipe: write a temp file in the *same directory* (so the rename cannot cross file systems),
fsync it, `os.replace` it over the target (atomic on POSIX), then fsync the directory so the rename
itself survives a power loss. Temp files are hidden (`.name.XXXX.tmp`), so a crash that leaves one
behind never makes it look like a checkpoint or a session; `remove_stale_temps` sweeps them later.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from aforo.errors import StoreError
from aforo.store.paths import FILE_MODE, ensure_dir

TEMP_SUFFIX = ".tmp"


def is_temp_name(name: str) -> bool:
    return name.startswith(".") and name.endswith(TEMP_SUFFIX)


def fsync_dir(directory: Path) -> None:
    """Persist a rename. Some platforms cannot open a directory for fsync; there it is a no-op."""
    try:
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write(path: Path, data: bytes) -> None:
    """Replace `path` with `data` atomically, as a 0600 file in a 0700 directory."""
    directory = ensure_dir(path.parent)
    tmp = ""
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=TEMP_SUFFIX, dir=directory)
        with os.fdopen(fd, "wb") as fh:
            os.fchmod(fh.fileno(), FILE_MODE)
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        if tmp:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        raise StoreError(
            f"cannot write {path}: {exc.strerror or exc}; the previous version is intact."
        ) from exc
    except BaseException:
        # KeyboardInterrupt and friends: leave no temp file, keep the old target.
        if tmp:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        raise
    fsync_dir(directory)


def remove_stale_temps(directory: Path, max_age_s: float = 60.0) -> int:
    """Delete temp files left by crashed writers. Young ones may belong to a live writer: kept."""
    removed = 0
    cutoff = time.time() - max_age_s
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return 0
    for entry in entries:
        if not is_temp_name(entry.name):
            continue
        with contextlib.suppress(OSError):
            if entry.stat(follow_symlinks=False).st_mtime < cutoff:
                os.unlink(entry.path)
                removed += 1
    return removed


def read_json(path: Path, what: str, *, missing: str, corrupt_advice: str) -> Any:
    """The parsed JSON of a state file, or StoreError: `missing` when absent, `what` names it otherwise."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError as exc:
        raise StoreError(missing) from exc
    except OSError as exc:
        raise StoreError(f"cannot read {what} {path}: {exc.strerror or exc}") from exc
    try:
        return json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise StoreError(
            f"{what} {path} is not valid JSON ({exc}): it is corrupt or truncated and will not be used. "
            f"{corrupt_advice}"
        ) from exc
