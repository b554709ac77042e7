"""Confinement: every path a tool touches is resolved here and must stay inside the workspace.

A path is checked twice. First lexically (after collapsing `..`), so an escape is refused even when
the target does not exist; then after resolving symlinks, so a link inside the workspace that points
outside is refused too. Tools receive the real, resolved path and never the model's string.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from aforo.errors import ToolError


def root_of(workspace: Path) -> Path:
    """The workspace's real path; a ToolError if it is gone (the model cannot fix that, the user can)."""
    root = Path(os.path.realpath(workspace))
    if not root.is_dir():
        raise ToolError(f"the workspace {workspace} does not exist or is not a directory")
    return root


def resolve(workspace: Path, user_path: str | None) -> Path:
    """Resolve `user_path` (relative to the workspace, or absolute inside it) to a real path inside it."""
    root = root_of(workspace)
    if user_path is None or not user_path.strip():
        return root
    if "\0" in user_path:
        raise ToolError(f"the path {user_path!r} contains a NUL byte; give a plain file path")
    given = Path(user_path)
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
            f"the path {user_path!r} is outside the workspace ({root}); only files inside it can be "
            "read. Use a path relative to the workspace root, e.g. 'src/main.py' or '.'."
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


def relative(root: Path, path: Path) -> str:
    """`path` as the model should see it: relative to the workspace root, '/'-separated, '.' for the root."""
    try:
        rel = path.relative_to(root)
    except ValueError:
        return path.as_posix()
    return rel.as_posix() if rel.parts else "."
