"""The read-only tools (Glob, Grep, Read, Find, LS), confined to the workspace, and their registry."""

from aforo.tools.find_tool import Find
from aforo.tools.glob_tool import Glob
from aforo.tools.grep_tool import Grep
from aforo.tools.ls_tool import LS
from aforo.tools.read_tool import Read
from aforo.tools.registry import ToolRegistry, default_registry, default_tools
from aforo.tools.workspace import resolve

__all__ = [
    "LS",
    "Find",
    "Glob",
    "Grep",
    "Read",
    "ToolRegistry",
    "default_registry",
    "default_tools",
    "resolve",
]
