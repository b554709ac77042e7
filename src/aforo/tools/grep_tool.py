"""Grep: regex search through ripgrep, honouring .gitignore, in three output modes.

rg runs from the workspace root with the target as a relative path, so every printed path is
relative to the workspace. `--null` separates the path from the rest of a line, which keeps paths
with ':' unambiguous. The pattern goes through `-e` and the path after `--`, so neither is ever
taken for a flag. As in Glob, a `glob` filter overrides rg's ignore rules, so with a glob the hits
are intersected with the files rg would search without it. Every path given to rg starts with "./",
so a record that starts with "--" is a context separator, never a file; a path holding a newline
arrives split over several records and is joined back. A file rg cannot read is skipped and named.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from aforo.errors import ToolError
from aforo.headings import LEFT_OUT
from aforo.messages import ToolSpec, object_schema
from aforo.protocols import ToolContext, ToolOutput
from aforo.tools import ripgrep
from aforo.tools.names import show
from aforo.tools.workspace import relative, resolve, root_of

DEFAULT_MAX_RESULTS = 100
MAX_COLUMNS = 400
# Past this many records beyond what is shown, stop counting: "at least N more" is enough.
_COUNT_SLACK = 10_000
_LINE_NUMBER = re.compile(r"^(\d+)([:-])")

OUTPUT_MODES = ("content", "files_with_matches", "count")


class Grep:
    spec = ToolSpec(
        "Grep",
        "Search file contents for a regex (ripgrep, skipping .gitignored files). output_mode: content "
        "(path:line:text, the default), files_with_matches or count.",
        object_schema(
            {
                "pattern": {"type": "string", "minLength": 1, "description": "Regex."},
                "path": {"type": "string", "description": "File or directory (default: root)."},
                "glob": {"type": "string", "description": "Only files matching this glob."},
                "ignore_case": {"type": "boolean"},
                "context": {
                    "type": "integer",
                    "minimum": 0,
                    "maximum": 20,
                    "description": "Lines around each match.",
                },
                "output_mode": {"type": "string", "enum": list(OUTPUT_MODES)},
                "max_results": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": 2000,
                    "description": f"Default {DEFAULT_MAX_RESULTS}.",
                },
            },
            required=["pattern"],
        ),
    )

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        pattern = str(args["pattern"])
        mode = str(args.get("output_mode") or "content")
        if mode not in OUTPUT_MODES:
            raise ToolError(f"output_mode must be one of {', '.join(OUTPUT_MODES)}, not {mode!r}")
        max_results = int(args.get("max_results") or DEFAULT_MAX_RESULTS)
        root = root_of(ctx.workspace)
        target = resolve(ctx.workspace, args.get("path"))
        where = relative(root, target)
        is_dir = _check_searchable(target, where)
        # rg runs inside the searched directory so a glob is relative to `path`, as in Glob.
        cwd = target if is_dir else target.parent
        search = "." if is_dir else f"./{target.name}"
        prefix = relative(root, cwd)

        argv = _rg_flags(mode, args)
        glob = args.get("glob")
        allowed = None
        if glob:
            argv += ["--glob", str(glob)]
            allowed = ripgrep.list_files(cwd, ctx, [search])
        argv += ["-e", pattern, "--", search]

        # In files mode rg ends each path with NUL and no newline; otherwise NUL sits after the path.
        sep = b"\0" if mode == "files_with_matches" else b"\n"
        budget = 2 * ctx.max_chars if ctx.max_chars else None
        shown: list[str] = []
        total = 0  # records that passed the filters
        kept = 0  # of which shown
        matches = 0
        size = 0
        with ripgrep.RgProcess(argv, cwd, ctx, sep=sep) as proc:
            records = proc.records() if mode == "files_with_matches" else _joined(proc.records())
            for record in records:
                if mode == "content" and record == b"--":
                    # A separator between groups of context; never first, never doubled.
                    if shown and shown[-1] != "--" and total == kept:
                        shown.append("--")
                    continue
                hit = _split(record, allowed)
                if hit is None:
                    continue
                path, rest = hit
                line = _format(path if prefix == "." else f"{prefix}/{path}", rest, mode)
                total += 1
                if mode == "count":
                    matches += int(rest) if rest.isdigit() else 0
                if kept < max_results and (budget is None or size < budget):
                    shown.append(line)
                    kept += 1
                    size += len(line) + 1
                elif total > max_results + _COUNT_SLACK:
                    proc.stop()
        outcome = proc.finish()
        if outcome.failed:
            raise ToolError(_rg_error(outcome.message, pattern))
        while shown and shown[-1] == "--":
            shown.pop()
        if not shown:
            shown.append(f"No matches for {pattern!r} in {where}.")
        notes = []
        if total > kept:
            more = f"at least {total - kept}" if outcome.stopped_early else str(total - kept)
            unit = "lines" if mode == "content" else "files"
            notes.append(
                f"{LEFT_OUT(count=more, what=unit)}; narrow the pattern, path or glob, or raise max_results)"
            )
        if mode == "count":
            notes.append(f"({matches} matches in {total} files)")
        notes += ripgrep.unreadable_note(outcome, prefix)
        return ToolOutput(
            "\n".join([*shown, *notes]),
            facts=_facts(
                pattern, where, mode, total, matches, outcome.stopped_early, bool(args.get("context"))
            ),
        )


def _rg_flags(mode: str, args: dict[str, Any]) -> list[str]:
    """ripgrep's flags for this output mode and the call's options (the glob and pattern come after)."""
    argv = ["--null", "--sort", "path", "--max-columns", str(MAX_COLUMNS), "--max-columns-preview"]
    if mode == "content":
        argv += ["--line-number", "--with-filename", "--no-heading"]
        if args.get("context"):
            argv += ["--context", str(int(args["context"]))]
    elif mode == "files_with_matches":
        argv.append("--files-with-matches")
    else:
        argv += ["--count", "--with-filename"]
    if args.get("ignore_case"):
        argv.append("--ignore-case")
    return argv


def _facts(pattern: str, where: str, mode: str, total: int, matches: int, more: bool, context: bool) -> str:
    """The result in one line, what stays of it when its body is cleared."""
    least = "at least " if more else ""
    found = {
        "content": f"{least}{total} {'lines, matches and context' if context else 'matching lines'}",
        "files_with_matches": f"{least}{total} files match",
        "count": f"{matches} matches in {total} files",
    }[mode]
    return f"Grep {pattern!r} in {where}: {found}"


def _check_searchable(target: Path, where: str) -> bool:
    """True for a directory, False for a regular file; a ToolError for anything else."""
    # rg blocks on a FIFO named explicitly (it only skips them while walking): refuse up front.
    try:
        mode = target.stat().st_mode
    except FileNotFoundError:
        raise ToolError(f"{where} does not exist; use Glob or LS to find the right path") from None
    except OSError as exc:
        raise ToolError(f"cannot access {where}: {exc.strerror}") from exc
    if not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):
        raise ToolError(f"{where} is not a regular file or directory; it cannot be searched")
    return stat.S_ISDIR(mode)


def _joined(records: Iterable[bytes]) -> Iterator[bytes]:
    """Records of the form `path NUL rest`, rejoined where a newline in the path split one."""
    pending = b""
    for record in records:
        if not pending and record == b"--":
            yield record
            continue
        pending = pending + b"\n" + record if pending else record
        if b"\0" in pending:
            yield pending
            pending = b""
    if pending:
        yield pending


def _split(record: bytes, allowed: set[str] | None) -> tuple[str, str] | None:
    """(path shown to the model, rest) of one rg record, or None when the file must be dropped."""
    raw, _, rest = record.partition(b"\0")
    path = ripgrep.strip_dot(os.fsdecode(raw))
    if not path or (allowed is not None and path not in allowed):
        return None
    return show(path), rest.decode("utf-8", errors="replace")


def _format(path: str, rest: str, mode: str) -> str:
    if mode == "files_with_matches":
        return path
    if mode == "count":
        return f"{path}:{rest}"
    # A context line reads 'path-12-text', a match 'path:12:text', as rg itself prints them.
    found = _LINE_NUMBER.match(rest)
    return f"{path}{found.group(2)}{rest}" if found else f"{path}:{rest}"


def _rg_error(stderr: str, pattern: str) -> str:
    if "regex parse error" in stderr:
        return (
            f"invalid regular expression {pattern!r}:\n{stderr}\nFix the pattern (ripgrep/Rust regex syntax)."
        )
    return f"Grep failed: {stderr or 'ripgrep reported an error'}"
