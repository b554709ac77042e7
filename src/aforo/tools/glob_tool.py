"""Glob: find files by name pattern, newest first, honouring .gitignore.

rg does the walking (`rg --files --glob PATTERN --sortr modified`). Its globs override ignore rules,
so the result is intersected with a plain `rg --files`: a gitignored file never shows up just
because it matches the pattern. Both runs share the call's one deadline.
"""

from __future__ import annotations

import os
from typing import Any

from aforo.errors import ToolError
from aforo.headings import LEFT_OUT
from aforo.messages import ToolSpec, object_schema
from aforo.protocols import ToolContext, ToolOutput
from aforo.tools import ripgrep
from aforo.tools.names import show
from aforo.tools.workspace import relative, resolve, root_of

DEFAULT_MAX_ENTRIES = 200
# Past this many matches beyond what is shown, stop counting: "at least N more" is enough.
_COUNT_SLACK = 10_000


class Glob:
    spec = ToolSpec(
        "Glob",
        "Find files by name ('*.py', 'src/**/test_*.py'), newest first, skipping .gitignored files.",
        object_schema(
            {
                "pattern": {"type": "string", "minLength": 1, "description": "Glob pattern."},
                "path": {"type": "string", "description": "Directory (default: workspace root)."},
            },
            required=["pattern"],
        ),
    )

    def __init__(self, max_entries: int = DEFAULT_MAX_ENTRIES):
        self.max_entries = max_entries

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        pattern = str(args["pattern"])
        root = root_of(ctx.workspace)
        base = resolve(ctx.workspace, args.get("path"))
        prefix = relative(root, base)
        if not base.exists():
            raise ToolError(f"{prefix} does not exist; use LS to see what is there")
        if not base.is_dir():
            raise ToolError(f"{prefix} is not a directory; `path` must be the directory to search in")
        budget = 2 * ctx.max_chars if ctx.max_chars else None

        allowed = ripgrep.list_files(base, ctx)
        shown: list[str] = []
        matched = 0
        size = 0
        argv = ["--files", "--null", "--sortr", "modified", "--glob", pattern]
        with ripgrep.RgProcess(argv, base, ctx, sep=b"\0") as proc:
            for record in proc.records():
                name = ripgrep.strip_dot(os.fsdecode(record))
                if name not in allowed:
                    continue
                matched += 1
                if len(shown) < self.max_entries and (budget is None or size < budget):
                    entry = show(name) if prefix == "." else f"{prefix}/{show(name)}"
                    shown.append(entry)
                    size += len(entry) + 1
                elif matched > self.max_entries + _COUNT_SLACK:
                    proc.stop()
        outcome = proc.finish()
        if outcome.failed:
            raise ToolError(f"Glob failed for pattern {pattern!r}: {outcome.message or 'ripgrep error'}")
        lines = shown or [f"No files match {pattern!r} in {prefix}."]
        if matched > len(shown):
            more = matched - len(shown)
            count = f"at least {more}" if outcome.stopped_early else str(more)
            lines.append(f"{LEFT_OUT(count=count, what='files')}; use a narrower pattern or path)")
        return ToolOutput("\n".join([*lines, *ripgrep.unreadable_note(outcome, prefix)]))
