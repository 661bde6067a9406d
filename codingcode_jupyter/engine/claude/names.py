"""Claude Code's tool names and ours, in one table read in both directions.

A rule, a hook matcher, an agent's ``tools:`` list or a tool_search query may name a tool
the way Claude Code does (``Bash``, ``Read``, ``mcp__github__create_issue``); each maps to
the tools of ours it stands for. A hook configured in a Claude Code file is told our tool's
Claude Code name (``execute_command`` is ``Bash`` there).

Decisions where the two products differ:

* ``Read`` rules with a path also cover search_code and search_files (Claude Code applies
  Read rules to Grep and Glob); ``Edit`` covers edit_file and write_file (all the tools that
  edit files). ``NotebookEdit`` covers edit_file and write_file on ``*.ipynb`` files: our
  file tools are what edit a notebook file.
* Claude Code tools with no counterpart here (``KillShell``, ``SlashCommand``, ``PowerShell``...)
  are known names: a rule naming one is kept and reported as having nothing to apply to.
* MCP tools are ``server:tool`` here and ``mcp__server__tool`` there; ``mcp__server`` and
  ``mcp__server__*`` name every tool of a server, ``mcp__*`` every MCP tool.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Literal

__all__ = [
    "PatternKind",
    "ClaudeTool",
    "CLAUDE_TOOLS",
    "ENGINE_TOOL_NAMES",
    "declare_front_tools",
    "known_tool_names",
    "claude_tool",
    "claude_name",
    "claude_names",
    "mcp_display_name",
    "is_mcp_form",
    "our_tool_globs",
]

# How a rule's pattern is read for the tool: a command line, a gitignore path, a URL
# (``domain:host`` or the URL itself), a sub-agent's name, or the tool's key argument.
PatternKind = Literal["command", "path", "url", "agent", "main"]


@dataclass(frozen=True)
class ClaudeTool:
    """One of Claude Code's tools and what it is here."""

    name: str
    # Our tools (display names) the name stands for; empty: no counterpart here.
    tools: tuple[str, ...]
    pattern: PatternKind = "main"
    # The tools a rule with a path pattern covers, when wider than ``tools`` (Read: the searches too).
    path_tools: tuple[str, ...] | None = None
    # A bare rule stands for this path pattern (NotebookEdit: notebook files only).
    implicit_pattern: str | None = None
    # Why there is nothing here for it (shown next to a rule that names it).
    missing: str = ""
    # The one tool of ours that *is* this tool, when ``tools`` holds more than one (Edit is
    # edit_file): a Claude Code hook is told its name and its matcher matches it by this name.
    same_as: str | None = None

    @property
    def same_tool(self) -> str | None:
        """Our tool this tool is (not only covers): the hook-name side of the table."""
        return self.same_as or (self.tools[0] if len(self.tools) == 1 else None)

    @property
    def has_counterpart(self) -> bool:
        return bool(self.tools)


_NONE = "Claude Code's {name} has no counterpart here"

CLAUDE_TOOLS: dict[str, ClaudeTool] = {tool.name: tool for tool in (
    ClaudeTool("Bash", ("execute_command",), "command"),
    ClaudeTool("Read", ("read_file",), "path", path_tools=("read_file", "search_code", "search_files")),
    ClaudeTool("NotebookRead", ("read_file",), "path"),
    ClaudeTool("Edit", ("edit_file", "write_file"), "path", same_as="edit_file"),
    ClaudeTool("MultiEdit", ("edit_file",), "path"),
    ClaudeTool("Write", ("write_file",), "path"),
    ClaudeTool("NotebookEdit", ("edit_file", "write_file"), "path", implicit_pattern="**/*.ipynb"),
    ClaudeTool("Glob", ("search_files",), "path"),
    ClaudeTool("LS", ("search_files",), "path"),
    ClaudeTool("Grep", ("search_code",), "path"),
    ClaudeTool("WebFetch", ("fetch_url",), "url"),
    ClaudeTool("WebSearch", ("web_search",)),
    ClaudeTool("TodoWrite", ("todo_write",)),
    ClaudeTool("Task", ("dispatch_agent",), "agent"),
    ClaudeTool("Agent", ("dispatch_agent",), "agent"),
    ClaudeTool("ToolSearch", ("tool_search",)),
    ClaudeTool("ListMcpResourcesTool", ("list_mcp_resources",)),
    ClaudeTool("ReadMcpResourceTool", ("read_mcp_resource",)),
    ClaudeTool("Skill", ("load_skill",)),
    *(ClaudeTool(name, (), missing=_NONE.format(name=name)) for name in (
        "BashOutput", "KillShell", "KillBash", "ExitPlanMode", "EnterPlanMode", "SlashCommand",
        "AskUserQuestion", "PowerShell", "Monitor", "TaskOutput", "TaskStop", "TaskCreate", "TaskUpdate",
        "TaskList", "TaskGet", "Cd", "EndConversation", "LSP", "Artifact")),
)}



def _hook_names() -> dict[str, tuple[str, ...]]:
    names: dict[str, tuple[str, ...]] = {}
    for tool in CLAUDE_TOOLS.values():
        if tool.same_tool is not None:
            names[tool.same_tool] = (*names.get(tool.same_tool, ()), tool.name)
    return names


# Our side, read from the table: the Claude Code name a hook in a Claude Code file is told
# (the first row for the tool), then the other names its matcher may use for the same tool.
_HOOK_NAMES: dict[str, tuple[str, ...]] = _hook_names()

# The engine's own tools a rule can name before a session registers them: the built-ins and
# the agent machinery's (sub-agents, deferred tools, MCP resources, skills); a test checks them
# against the definitions. A front adds its own tools' names (the notebook's kernel tools) with
# declare_front_tools, before it reads any settings. Custom and MCP tools are not known when
# settings load; see rule_syntax.check_tool_name for how those are judged.
ENGINE_TOOL_NAMES: frozenset[str] = frozenset({
    "read_file", "write_file", "edit_file", "search_code", "search_files", "execute_command", "fetch_url",
    "web_search", "todo_write", "dispatch_agent", "tool_search", "list_mcp_resources", "read_mcp_resource",
    "load_skill",
})
_FRONT_TOOL_NAMES: set[str] = set()


def declare_front_tools(names: Iterable[str]) -> None:
    """The front's own tools (for the process): rules may name them before they are registered."""
    _FRONT_TOOL_NAMES.update(names)


def known_tool_names() -> frozenset[str]:
    """Every tool name of ours a rule can name without the tool being registered yet."""
    return ENGINE_TOOL_NAMES | _FRONT_TOOL_NAMES

# The server part holds no `__` and no wildcard (Claude Code: a rule names one configured server).
_MCP = re.compile(r"^mcp__(?P<server>[^_*?\[\]](?:[^_*?\[\]]|_(?!_))*)(?:__(?P<tool>.+))?$")


def claude_tool(name: str) -> ClaudeTool | None:
    """Claude Code's tool ``name`` (exact, case-sensitive like Claude Code), or None."""
    return CLAUDE_TOOLS.get(name)


def is_mcp_form(name: str) -> bool:
    """``mcp__server``, ``mcp__server__tool``, ``mcp__server__*`` or ``mcp__*``."""
    return name == "mcp__*" or _MCP.match(name) is not None


def mcp_display_name(name: str) -> str | None:
    """``mcp__server__tool`` as our display name (``server:tool``, ``server:*``, ``*:*``); None if not that form."""
    if name == "mcp__*":
        return "*:*"
    match = _MCP.match(name)
    if match is None:
        return None
    return f"{match.group('server')}:{match.group('tool') or '*'}"


def claude_names(tool: str, *, mcp: bool = False) -> tuple[str, ...]:
    """The Claude Code names of our tool ``tool`` (a display name), the one hooks are told first.

    An MCP tool ``server:tool`` is ``mcp__server__tool``; a tool Claude Code has no name
    for (run_python, a custom tool) keeps its own.
    """
    if mcp and ":" in tool:
        server, _, name = tool.partition(":")
        return (f"mcp__{server}__{name}",)
    return _HOOK_NAMES.get(tool, (tool,))


def claude_name(tool: str, *, mcp: bool = False) -> str:
    """The name a Claude Code hook is told for our tool ``tool``."""
    return claude_names(tool, mcp=mcp)[0]


def our_tool_globs(name: str) -> tuple[str, ...]:
    """What ``name`` (ours, Claude Code's, or ``mcp__…``) names among our tools, as display-name globs.

    Empty for a Claude Code tool with no counterpart here.
    """
    tool = CLAUDE_TOOLS.get(name)
    if tool is not None:
        return tool.tools
    display = mcp_display_name(name) if name.startswith("mcp__") else None
    return (display,) if display is not None else (name,)
