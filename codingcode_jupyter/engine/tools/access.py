"""What a tool reaches, declared by the tool itself.

The approval pipeline judges a call from its tool's :class:`ToolAccess`: which arguments
are paths (and whether they are read, written, or walked as a tree), which one is a shell
command and its working directory, a URL, code, and which argument says what the call is
about (shown on the tool's line, matched by rules on tools without paths, kept by
compaction). No part of the engine keeps its own list of tool names for this.

A tool whose code the project did not write (custom tools from a cell, MCP tools) or that
runs arbitrary code (the kernel's ``run_python``) is ``opaque``: it is judged as able to
reach every path any of its arguments names.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Callable, Literal

__all__ = ["Origin", "PathAccess", "PathArg", "ToolAccess", "OPAQUE", "LiveName", "NameLookup", "BUILTIN_ACCESS"]

# Where a tool comes from: the engine, the kernel front, a notebook cell, an MCP server, or
# the agent machinery (dispatch_agent).
Origin = Literal["builtin", "kernel", "custom", "mcp", "agent"]
PathAccess = Literal["read", "write", "tree", "list"]


@dataclass(frozen=True)
class LiveName:
    """What a name is bound to in the namespace the code will run in.

    ``module``/``callable``: ``qualified`` is its importable name (``subprocess``, ``subprocess.run``),
    judged as if imported; ``data``: a value the judge understands; ``object``: anything else
    (``qualified`` names its type)."""

    kind: Literal["data", "module", "callable", "object"]
    qualified: str = ""


# A name's binding in the live namespace, or None when the name is not bound there.
NameLookup = Callable[[str], "LiveName | None"]


@dataclass(frozen=True)
class PathArg:
    """An argument that names a path, how the tool touches it, and its value when omitted."""

    name: str
    access: PathAccess
    default: str | None = None


@dataclass(frozen=True)
class ToolAccess:
    """The tool's declaration of what its arguments reach (see the module docstring)."""

    paths: tuple[PathArg, ...] = ()
    # The argument holding a shell command, and the one holding its working directory.
    command: str | None = None
    cwd: str | None = None
    url: str | None = None
    # The argument holding Python code the tool runs.
    code: str | None = None
    # The argument holding a list of cells ({cell_type, source}) whose code cells are code too.
    cells: str | None = None
    # The code is a notebook cell as IPython runs it (`!cmd` lines, magics), not plain Python.
    ipython: bool = False
    # The code is proposed to the person, who runs it, rather than run by the tool: what would be
    # denied as a command is asked instead (the person decides; nothing runs unasked).
    proposes: bool = False
    # The argument that says what a call is about; None: the path, command or URL argument.
    key: str | None = None
    read_only: bool = False
    # An edit of project files that acceptEdits mode may allow.
    edits: bool = False
    opaque: bool = False
    # For code run in a live namespace: what a name the code does not bind is bound to there, so
    # the judge follows `sp.run(...)` after an earlier `sp = subprocess` (None: not known).
    names: NameLookup | None = field(default=None, compare=False, repr=False)

    @property
    def key_argument(self) -> str | None:
        """The name of the argument that says what a call is about."""
        if self.key is not None:
            return self.key
        if self.command is not None:
            return self.command
        if self.paths:
            return self.paths[0].name
        return self.url or self.code

    def key_value(self, tool_input: dict[str, Any]) -> str | None:
        """The key argument's value in ``tool_input`` as text (None when absent)."""
        name = self.key_argument
        value = tool_input.get(name) if name is not None else None
        if value is None:
            return None
        return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


# What a tool the project did not write is judged as: able to reach anything its arguments name.
OPAQUE = ToolAccess(opaque=True)

# The built-in tools' declarations, one place for each: the tools are defined with them, and the
# judge's tables check their examples against them (as a session would judge those tools).
BUILTIN_ACCESS: dict[str, ToolAccess] = {
    "read_file": ToolAccess(paths=(PathArg("path", "read"),), read_only=True),
    "write_file": ToolAccess(paths=(PathArg("path", "write"),), edits=True),
    "edit_file": ToolAccess(paths=(PathArg("path", "write"),), edits=True),
    "search_code": ToolAccess(paths=(PathArg("path", "tree", default="."),), key="pattern", read_only=True),
    "search_files": ToolAccess(paths=(PathArg("path", "list", default="."),), key="pattern", read_only=True),
    "execute_command": ToolAccess(command="command", cwd="cwd"),
    "fetch_url": ToolAccess(url="url", read_only=True),
    "web_search": ToolAccess(key="query", read_only=True),
}
