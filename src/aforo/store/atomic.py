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
import re
import tempfile
import time
from pathlib import Path
from typing import Any

from aforo import safejson
from aforo.errors import StateLimitExceeded, StoreError
from aforo.limits import STATE_JSON_DEPTH, Limit
from aforo.store.paths import FILE_MODE, ensure_dir

TEMP_SUFFIX = ".tmp"
_SURROGATE = re.compile("[\ud800-\udfff]")


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


def encode_json(data: Any, *, indent: int | None = None, sort_keys: bool = False) -> bytes:
    """`data` as the UTF-8 JSON of a state file, whatever its strings hold.

    A byte that is not UTF-8 in a file name, a prompt or a path reaches us as a lone surrogate
    (Python's surrogateescape), which has no UTF-8 form: it is written as JSON's own `\\udcNN` escape,
    which reads back as the same string. Everything else stays as readable as `ensure_ascii=False`
    makes it (a surrogate can only occur inside a JSON string, where the escape is valid)."""
    text = json.dumps(data, ensure_ascii=False, indent=indent, sort_keys=sort_keys)
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text).encode("utf-8")


def check_size(size: int, limit: Limit, what: str) -> None:
    """`StateLimitExceeded` when `what`, a state file of `size` bytes, is over `limit`."""
    if size > limit.value:
        raise StateLimitExceeded(limit, f"{what} is {size:,} bytes")


def read_json(path: Path, what: str, *, missing: str, corrupt_advice: str, max_bytes: Limit) -> Any:
    """The parsed JSON of a state file, or StoreError: `missing` when absent, `what` names it otherwise.

    A file larger than `max_bytes`, or nested deeper than `state_json_depth`, is refused (a
    StateLimitExceeded): one hostile or broken file costs neither the memory nor the stack of the
    command that lists the others."""
    most = int(max_bytes.value)
    try:
        with path.open("rb") as fh:
            raw = fh.read(most + 1)
    except FileNotFoundError as exc:
        raise StoreError(missing) from exc
    except OSError as exc:
        raise StoreError(f"cannot read {what} {path}: {exc.strerror or exc}") from exc
    if len(raw) > most:
        raise StateLimitExceeded(max_bytes, f"{what} {path} will not be used, it is over {most:,} bytes")
    try:
        return safejson.loads(
            raw, f"{what} {path} will not be used, it", STATE_JSON_DEPTH, StateLimitExceeded
        )
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise StoreError(
            f"{what} {path} is not valid JSON ({exc}): it is corrupt or truncated and will not be used. "
            f"{corrupt_advice}"
        ) from exc
