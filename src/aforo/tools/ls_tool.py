"""LS: the entries of one directory, sorted, directories marked with a trailing '/'.

Nothing is filtered (unlike Glob and Grep, .gitignore does not apply): it shows what is on disk.
Symlinks are shown as links and never followed, so listing cannot leave the workspace. Names are
escaped by `names.show`: one entry per line, whatever bytes a name holds.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from aforo.errors import ToolError
from aforo.headings import LEFT_OUT, Heading
from aforo.messages import ToolSpec, object_schema
from aforo.protocols import ToolContext, ToolOutput
from aforo.tools.deadline import check
from aforo.tools.names import show
from aforo.tools.workspace import relative, resolve, root_of

DEFAULT_MAX_ENTRIES = 500
# Entries read between two looks at the deadline and the cancel event.
_CHECK_EVERY = 256
# The listing's first line: `src/ (12 entries)`.
LISTING = Heading("{directory}/ ({count} entries)", directory=r"\S*", count=r"\d+")


class LS:
    spec = ToolSpec(
        "LS",
        "List a directory (default: the workspace root). Directories end with '/'.",
        object_schema({"path": {"type": "string", "description": "Directory (default: workspace root)."}}),
    )

    def __init__(self, max_entries: int = DEFAULT_MAX_ENTRIES):
        self.max_entries = max_entries

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        root = root_of(ctx.workspace)
        path = resolve(ctx.workspace, args.get("path"))
        shown = relative(root, path)
        try:
            listing = sorted(_entries(path, ctx))
        except FileNotFoundError:
            raise ToolError(f"{shown} does not exist; use LS on its parent to see what is there") from None
        except NotADirectoryError:
            raise ToolError(f"{shown} is not a directory; use Read to read a file") from None
        except OSError as exc:
            raise ToolError(f"cannot list {shown}: {exc.strerror}") from exc
        if not listing:
            return ToolOutput(f"{shown}/ is empty.")
        budget = 2 * ctx.max_chars if ctx.max_chars else None
        out = [LISTING(directory=shown, count=len(listing))]
        size = 0
        for entry in listing[: self.max_entries]:
            if budget is not None and size >= budget:
                break
            out.append(entry)
            size += len(entry) + 1
        if len(out) - 1 < len(listing):
            out.append(
                f"{LEFT_OUT(count=len(listing) - len(out) + 1, what='entries')}; use Glob to narrow down)"
            )
        return ToolOutput("\n".join(out))


def _entries(path: Path, ctx: ToolContext) -> Iterator[str]:
    with os.scandir(path) as entries:
        for count, entry in enumerate(entries, start=1):
            if count % _CHECK_EVERY == 0:
                check(ctx)
            yield _describe(entry)
    check(ctx)


def _describe(entry: os.DirEntry[str]) -> str:
    name = show(entry.name)
    try:
        if entry.is_symlink():
            return f"{name} -> {show(os.readlink(entry.path))}"
        if entry.is_dir(follow_symlinks=False):
            return f"{name}/"
    except OSError:
        pass
    return name
