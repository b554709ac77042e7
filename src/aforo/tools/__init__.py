"""The read-only tools (Glob, Grep, Read, LS), confined to the workspace, and the registry that runs them."""

from aforo.tools.glob_tool import Glob
from aforo.tools.grep_tool import Grep
from aforo.tools.ls_tool import LS
from aforo.tools.read_tool import Read
from aforo.tools.registry import ToolRegistry, default_registry, default_tools
from aforo.tools.workspace import resolve

__all__ = ["LS", "Glob", "Grep", "Read", "ToolRegistry", "default_registry", "default_tools", "resolve"]
