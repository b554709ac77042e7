"""Where aforo keeps its state: $AFORO_HOME when set, else the platform's user state directory.

Every directory aforo creates is owner-only (0700): checkpoints and sessions hold whole conversations,
and the umask of the user's shell must not decide who can read them.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import platformdirs

from aforo.errors import StoreError

DIR_MODE = 0o700
FILE_MODE = 0o600


def ensure_dir(path: Path) -> Path:
    """Create `path` (and missing parents) as 0700 directories; tighten it to 0700 if it is ours."""
    missing: list[Path] = []
    probe = path
    while not probe.exists() and probe != probe.parent:
        missing.append(probe)
        probe = probe.parent
    try:
        for directory in reversed(missing):
            # Another process may create it between the check and here.
            with contextlib.suppress(FileExistsError):
                directory.mkdir(mode=DIR_MODE)
            # mkdir's mode is filtered by the umask; chmod is not.
            os.chmod(directory, DIR_MODE)
        st = path.stat()
        if st.st_uid == os.getuid() and st.st_mode & 0o777 != DIR_MODE:
            os.chmod(path, DIR_MODE)
    except OSError as exc:
        raise StoreError(
            f"cannot create the state directory {path}: {exc.strerror or exc}. "
            "Set AFORO_HOME to a directory you can write."
        ) from exc
    if not path.is_dir():
        raise StoreError(f"{path} exists but is not a directory; set AFORO_HOME elsewhere or remove it.")
    return path


def state_dir() -> Path:
    """The root of aforo's state, created 0700 on first use."""
    home = os.environ.get("AFORO_HOME")
    root = Path(home).expanduser() if home else Path(platformdirs.user_state_dir("aforo"))
    return ensure_dir(root)


def checkpoints_dir() -> Path:
    return ensure_dir(state_dir() / "checkpoints")


def sessions_dir() -> Path:
    return ensure_dir(state_dir() / "sessions")


def telemetry_path() -> Path:
    return state_dir() / "telemetry.db"


def history_path() -> Path:
    """The REPL's line history file (the file itself is created by its writer)."""
    return state_dir() / "history"
