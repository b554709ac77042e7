"""Confinement: every path a tool touches is resolved here and must stay inside the workspace.

A path is checked twice. First lexically (after collapsing `..`), so an escape is refused even when
the target does not exist; then after resolving symlinks, so a link inside the workspace that points
outside is refused too. Tools receive the real, resolved path and never the model's string.

Paths are shown to the model through `names.show` (one line, valid UTF-8) and the model's paths are read
back through `names.unshow`, so a file with a newline or a non-UTF-8 byte in its name can be reached.
Files are opened only through `open_regular`, which never blocks and never follows a late symlink.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path
from typing import BinaryIO

from aforo.errors import ToolError
from aforo.tools.names import show, unshow


def root_of(workspace: Path) -> Path:
    """The workspace's real path; a ToolError if it is gone (the model cannot fix that, the user can)."""
    root = Path(os.path.realpath(workspace))
    if not root.is_dir():
        raise ToolError(f"the workspace {show(str(workspace))} does not exist or is not a directory")
    return root


def resolve(workspace: Path, user_path: str | None) -> Path:
    """Resolve `user_path` (relative to the workspace, or absolute inside it) to a real path inside it."""
    root = root_of(workspace)
    if user_path is None or not user_path.strip():
        return root
    spelled = _existing_spelling(root, user_path)
    if "\0" in spelled:
        raise ToolError(f"the path {user_path!r} contains a NUL byte; give a plain file path")
    given = Path(spelled)
    if user_path.startswith("~"):
        # Expand so "~/x" is reported as outside the workspace instead of "not found".
        with contextlib.suppress(RuntimeError):
            given = given.expanduser()
    candidate = given if given.is_absolute() else root / given
    lexical = Path(os.path.normpath(candidate))
    # The workspace may have been given through a symlink (e.g. /tmp -> /private/tmp): an absolute
    # path spelled with either form is inside.
    spelled_root = Path(os.path.abspath(workspace))
    if not (lexical.is_relative_to(root) or lexical.is_relative_to(spelled_root)):
        raise ToolError(
            f"the path {user_path!r} is outside the workspace ({show(str(root))}); only files inside it can "
            "be read. Use a path relative to the workspace root, e.g. 'src/main.py' or '.'."
        )
    try:
        # resolve() follows symlinks as the OS would (including `link/..`), which is what opening does.
        real = candidate.resolve()
    except (OSError, RuntimeError) as exc:
        raise ToolError(f"cannot resolve the path {user_path!r}: {exc}") from exc
    if not real.is_relative_to(root):
        raise ToolError(
            f"the path {user_path!r} goes through a symlink that points outside the workspace; "
            "it cannot be read. Only files whose real location is inside the workspace are allowed."
        )
    return real


def _existing_spelling(root: Path, user_path: str) -> str:
    """The model's path with `show`'s escapes undone, unless only the literal spelling exists."""
    unescaped = unshow(user_path)
    if unescaped != user_path and not os.path.lexists(root / unescaped) and os.path.lexists(root / user_path):
        return user_path
    return unescaped


def relative(root: Path, path: Path) -> str:
    """`path` as the model should see it: relative to the workspace root, '/'-separated, '.' for the root,
    escaped by `names.show`."""
    try:
        rel = path.relative_to(root)
    except ValueError:
        return show(path.as_posix())
    return show(rel.as_posix()) if rel.parts else "."


def open_regular(path: Path, shown: str) -> BinaryIO:
    """Open `path` for reading only if it is a regular file, never blocking."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise ToolError(f"{shown} does not exist; use Glob or LS to find the right path") from None
    except OSError as exc:
        raise ToolError(f"cannot access {shown}: {exc.strerror}") from exc
    if stat.S_ISDIR(mode):
        raise ToolError(f"{shown} is a directory, not a file; use LS to list it or Glob to find files in it")
    if not stat.S_ISREG(mode):
        raise ToolError(f"{shown} is not a regular file ({_kind(mode)}); Read only reads regular files")
    # O_NONBLOCK and the fstat below close the race of the file being swapped for a FIFO after
    # the stat; O_NOFOLLOW refuses a symlink planted after resolve() checked the path.
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise ToolError(f"cannot open {shown}: {exc.strerror}") from exc
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise ToolError(f"{shown} is not a regular file; Read only reads regular files")
    return os.fdopen(fd, "rb")


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a file"
