"""The built-in tools, in the stable order the model sees them (the prompt cache depends on it)."""

from __future__ import annotations

import threading

from .base import ToolDefinition
from .files import edit_file_tool, read_file_tool, write_file_tool
from .registry import ToolRegistry
from .search import search_code_tool, search_files_tool
from .shell import execute_command_tool
from .todo import todo_write_tool
from .web import fetch_url_tool, web_search_tool

__all__ = ["BUILTIN_TOOL_NAMES", "builtin_tools", "global_registry"]

BUILTIN_TOOL_NAMES = (
    "read_file",
    "write_file",
    "edit_file",
    "search_code",
    "search_files",
    "execute_command",
    "fetch_url",
    "web_search",
    "todo_write",
)


def builtin_tools() -> list[ToolDefinition]:
    """Fresh definitions of every built-in tool, in ``BUILTIN_TOOL_NAMES`` order."""
    return [
        read_file_tool(),
        write_file_tool(),
        edit_file_tool(),
        search_code_tool(),
        search_files_tool(),
        execute_command_tool(),
        fetch_url_tool(),
        web_search_tool(),
        todo_write_tool(),
    ]


_REGISTRY: ToolRegistry | None = None
# warm_up() may build the registry on another thread while a cell registers a custom tool.
_REGISTRY_LOCK = threading.Lock()


def global_registry() -> ToolRegistry:
    """The process's tools: the built-ins, then custom tools registered from cells."""
    global _REGISTRY
    if _REGISTRY is None:
        with _REGISTRY_LOCK:
            if _REGISTRY is None:
                _REGISTRY = ToolRegistry(builtin_tools())
    return _REGISTRY
