"""Where aforo keeps its state: $AFORO_HOME when set, else the platform's user state directory.

Every directory aforo creates is owner-only (0700) and every file 0600: checkpoints and sessions hold
whole conversations, and the umask of the user's shell must not decide who can read them. A directory
aforo did not create (an existing $AFORO_HOME, or one another process made first) is never chmod-ed:
it is checked instead, and refused with the reason when someone else could plant or replace files in
it (it belongs to another user, or users other than its owner can write to it).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import platformdirs

from aforo.errors import StoreError

DIR_MODE = 0o700
FILE_MODE = 0o600


def unsafe_reason(st: os.stat_result) -> str | None:
    """Why a directory with this stat is unsafe for aforo's state, or None when it is safe.

    Readable by others is allowed (aforo's files in it are 0600). Writable by others is not, even with
    the sticky bit: a file such as trusted.json could be planted before aforo first writes it. Writable
    by the group is allowed only for the user's own primary group (the user-private group of a umask
    002 system).
    """
    if not hasattr(os, "getuid"):  # no POSIX owners (Windows): the ACLs of the profile apply
        return None
    if st.st_uid != os.getuid():
        return f"it belongs to another user (uid {st.st_uid}), who can change or replace what aforo keeps"
    mode = stat.S_IMODE(st.st_mode)
    if mode & stat.S_IWOTH:
        return f"every user can write to it (mode {mode:04o})"
    if mode & stat.S_IWGRP and st.st_gid != os.getgid():
        return f"the members of its group (gid {st.st_gid}) can write to it (mode {mode:04o})"
    return None


def ensure_dir(
    path: Path, *, variable: str = "AFORO_HOME", holds: str = "aforo's state (conversations, settings)"
) -> Path:
    """Create `path` (and missing parents) as 0700 directories; an existing one must be safe as it is.

    `variable` is the setting that moves the directory and `holds` what it holds, for the messages (the
    engine's cache, `aforo.engine.home`, follows the same rule under AFORO_ENGINE_HOME)."""
    missing: list[Path] = []
    probe = path
    while not probe.exists() and probe != probe.parent:
        missing.append(probe)
        probe = probe.parent
    created = False
    try:
        for directory in reversed(missing):
            try:
                directory.mkdir(mode=DIR_MODE)
            except FileExistsError:
                # Another process made it between the check and here: not ours to chmod; the final
                # directory is checked below like any existing one.
                continue
            # mkdir's mode is filtered by the umask; chmod is not. Only ever on a directory we made.
            os.chmod(directory, DIR_MODE)
            created = directory == path
        st = path.stat()
    except OSError as exc:
        raise StoreError(
            f"cannot create the directory {path} for {holds}: {exc.strerror or exc}. "
            f"Set {variable} to a directory you can write."
        ) from exc
    if not stat.S_ISDIR(st.st_mode):
        raise StoreError(f"{path} exists but is not a directory; set {variable} elsewhere or remove it.")
    reason = None if created else unsafe_reason(st)
    if reason is not None:
        raise StoreError(
            f"{path} is not safe for {holds}: {reason}. aforo does not change the permissions of a "
            f"directory it did not create: set {variable} to a directory only you can write, or make "
            f"this one yours alone (e.g. `chmod go-w {path}`)."
        )
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
    """The REPL's line history file (created 0600 by `aforo.cli.history`)."""
    return state_dir() / "history"


def trust_path() -> Path:
    """The workspaces whose project file the user trusted (written by `aforo.store.trust`)."""
    return state_dir() / "trusted.json"


def open_private(path: Path, flags: int) -> int:
    """Open (creating if needed) a state file as 0600, whatever the umask or an older aforo left."""
    fd = os.open(path, flags | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), FILE_MODE)
    try:
        if stat.S_IMODE(os.fstat(fd).st_mode) != FILE_MODE:
            os.fchmod(fd, FILE_MODE)
    except OSError:
        os.close(fd)
        raise
    return fd
