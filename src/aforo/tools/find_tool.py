"""Find: where a name is defined (`path:line` and its signature) and where it is used, from one argument.

Made for the question a small model cannot plan a search for ("where is the group decorator defined?",
"what calls retry?"): it takes the name as the question spells it and answers with the lines to cite.
Definitions come from the source files' syntax trees (`tools/syntax.py`: Python, JavaScript, TypeScript,
Go, Rust, Java, C), uses from ripgrep over every file it searches. A name defined nowhere still gets its
uses, so `hashlib` finds the imports.
"""

from __future__ import annotations

from typing import Any

from aforo.errors import ToolError
from aforo.headings import LEFT_OUT, LINES, Heading, line_count
from aforo.limits import SYMBOL_FILE_BYTES, SYMBOL_FILES
from aforo.messages import ToolSpec, object_schema
from aforo.protocols import ToolContext, ToolOutput
from aforo.tools.names import show
from aforo.tools.symbol_cache import SymbolCache
from aforo.tools.symbols import cache_for, find_definitions, mentions
from aforo.tools.workspace import root_of

# Enough to show where a name is defined (a function overridden in a few classes), not a listing.
MAX_DEFINITIONS = 8
MAX_MENTIONS = 8
# The headings above the definitions and the uses: `parse is defined at:`, `parse is used in 12 lines,
# 8 shown:`.
_NAME = r"[\w.]+"
DEFINED_AT = Heading("{name} is defined at:", name=_NAME)
USED_IN = Heading("{name} is used in {count}{shown}:", name=_NAME, count=LINES, shown=r"(?:, \d+ shown)?")


class Find:
    """`symbols`: the workspace's symbol cache, which the map's index reads too."""

    def __init__(self, symbols: SymbolCache | None = None) -> None:
        self.symbols = symbols

    spec = ToolSpec(
        "Find",
        "Find where a name (function, class, variable) is defined and used, as path:line.",
        object_schema(
            {
                "name": {
                    "type": "string",
                    "minLength": 1,
                    "description": "The name, e.g. parse or Client.send.",
                }
            },
            required=["name"],
        ),
        batch=True,
    )

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        name = str(args["name"]).strip().strip("`'\"()")
        if not name.replace(".", "_").isidentifier():
            raise ToolError(f"{name!r} is not a name; Find takes one identifier (e.g. parse or Client.send)")
        return report(cache_for(self.symbols, root_of(ctx.workspace)), name, ctx)


def report(symbols: SymbolCache, name: str, ctx: ToolContext) -> ToolOutput:
    """Find's answer for `name`: the definitions, then the uses that are not a definition's own line."""
    found = find_definitions(symbols, name, ctx)
    sites = found.items
    own = {(s.path, s.line) for s in sites}
    used = mentions(symbols.root, name, ctx, MAX_MENTIONS + len(own))
    uses = [m for m in used.items if (m.file, m.line) not in own][:MAX_MENTIONS]
    lines = line_count(max(len(uses), used.total - len(own)), used.exact)
    out = []
    if sites:
        out.append(DEFINED_AT(name=name))
        out += [s.cite() for s in sites[:MAX_DEFINITIONS]]
        if len(sites) > MAX_DEFINITIONS:
            out.append(f"{LEFT_OUT(count=len(sites) - MAX_DEFINITIONS, what='definitions')})")
    else:
        out.append(f"No definition of {name} found.")
    if found.unparsed:
        limits = f"the limits {SYMBOL_FILES.name} and {SYMBOL_FILE_BYTES.name}"
        out.append(f"({found.unparsed} more files that may define it were not parsed: {limits})")
    if uses:
        more = f", {len(uses)} shown" if used.total - len(own) > len(uses) else ""
        out.append(USED_IN(name=name, count=lines, shown=more))
        out += [m.cite() for m in uses]
    elif not sites:
        out[-1] = f"{name} is neither defined nor used in the workspace (searched as a whole word)."
    defined = ", ".join(f"{show(s.path)}:{s.line}" for s in sites[:MAX_DEFINITIONS]) or "no definition"
    return ToolOutput("\n".join(out), facts=f"Find {name}: defined at {defined}; used in {lines}")
