"""Which tools an agent is offered: built-ins ∪ custom ∪ MCP ∪ tool_search ∪ extras, filtered.

The resolver is asked before every request, so a server's changed tool list, a tool found
by tool_search or a tool registered from a cell shows up on the next step. The order is
stable (built-ins in registry order, custom tools, MCP tools by server then tool,
tool_search, extras) so the tools block — the start of the prompt cache — does not change
between requests unless the set of tools does.
"""

from __future__ import annotations

from fnmatch import fnmatchcase
from typing import TYPE_CHECKING, Iterable, Literal

from pydantic import BaseModel, ConfigDict

from ..state import SessionState
from .base import ToolDefinition
from .registry import ToolRegistry
from .tool_search import TOOL_SEARCH_NAME, make_tool_search

if TYPE_CHECKING:
    from ..mcp.manager import McpManager

__all__ = ["ToolVisibilityPolicy", "SessionToolResolver", "ToolStatus"]

ToolStatus = Literal["offered", "deferred"]


class ToolVisibilityPolicy(BaseModel):
    """What an agent may see. ``None`` means no restriction."""

    model_config = ConfigDict(extra="forbid")

    # Display names (``read_file``, ``server:tool``); globs allowed (``everything:*``).
    allowed_tools: set[str] | None = None
    allowed_mcp_servers: set[str] | None = None
    allow_tool_search: bool = True
    # False hides deferred tools altogether (and so tool_search has nothing to find).
    allow_deferred_tools: bool = True


def _matches(tool: ToolDefinition, patterns: Iterable[str]) -> bool:
    from ..claude.names import claude_names

    display = tool.display_name or tool.name
    # A pattern may name the tool as Claude Code does (`Read`, `mcp__server__tool`) too.
    names = {display, tool.name, *claude_names(display, mcp=tool.source == "mcp")}
    return any(fnmatchcase(name, pattern) for pattern in patterns for name in names)


class SessionToolResolver:
    """The tools of one agent in one session (see the module docstring for the order)."""

    def __init__(
        self,
        registry: ToolRegistry,
        *,
        state: SessionState,
        mcp: "McpManager | None" = None,
        policy: ToolVisibilityPolicy | None = None,
        profile_tools: list[str] | None = None,
        extra_tools: Iterable[ToolDefinition] = (),
        denied_tools: Iterable[str] = (),
    ) -> None:
        self.registry = registry
        self.state = state
        self.mcp = mcp
        self.policy = policy or ToolVisibilityPolicy()
        self.profile_tools = list(profile_tools) if profile_tools is not None else None
        # A profile's disallowedTools: never offered, whatever else admits them.
        self.denied_tools = list(denied_tools)
        self.extra_tools = list(extra_tools)
        self.tool_search = make_tool_search(self._searchable, state)
        if mcp is not None:
            # MCP tools must never take a built-in's wire name.
            mcp.reserve_names(self._own_names)

    def _own_names(self) -> set[str]:
        names = {tool.name for tool in self.registry if tool.source != "mcp"}
        return names | {TOOL_SEARCH_NAME} | {tool.name for tool in self.extra_tools}

    # -- the pipeline --------------------------------------------------------------------

    def _candidates(self) -> list[ToolDefinition]:
        registered = list(self.registry)
        builtins = [tool for tool in registered if tool.source == "builtin"]
        custom = [tool for tool in registered if tool.source not in ("builtin", "mcp")]
        mcp_tools = [tool for tool in registered if tool.source == "mcp"]
        if self.mcp is not None:
            mcp_tools += self.mcp.tools()
        mcp_tools.sort(key=lambda tool: (tool.mcp_server or "", tool.display_name or tool.name))
        return builtins + custom + mcp_tools

    def _admits(self, tool: ToolDefinition) -> bool:
        policy = self.policy
        if tool.source == "mcp" and policy.allowed_mcp_servers is not None:
            if tool.mcp_server not in policy.allowed_mcp_servers:
                return False
        if tool.deferred and not policy.allow_deferred_tools:
            return False
        if policy.allowed_tools is not None and not _matches(tool, policy.allowed_tools):
            return False
        if self.profile_tools is not None and not _matches(tool, self.profile_tools):
            return False
        if self.denied_tools and _matches(tool, self.denied_tools):
            return False
        return True

    def _admitted(self) -> list[ToolDefinition]:
        seen: set[str] = set()
        admitted = []
        for tool in self._candidates():
            # The first holder of a wire name keeps it; a later duplicate would make the
            # request invalid (the API rejects duplicate tool names).
            if tool.name in seen or tool.name == TOOL_SEARCH_NAME or not self._admits(tool):
                continue
            seen.add(tool.name)
            admitted.append(tool)
        return admitted

    def _searchable(self) -> list[ToolDefinition]:
        return [tool for tool in self._admitted() if tool.deferred]

    def visible(self) -> list[tuple[ToolDefinition, ToolStatus]]:
        """Every tool the policy admits, with whether it is offered now or waits for tool_search."""
        listed: list[tuple[ToolDefinition, ToolStatus]] = []
        any_hidden = False
        for tool in self._admitted():
            hidden = tool.deferred and tool.name not in self.state.discovered_tools
            any_hidden = any_hidden or tool.deferred
            listed.append((tool, "deferred" if hidden else "offered"))
        # tool_search stays once everything was found: the model may search again and
        # removing it would change the tools block (and break the prompt cache).
        if self.policy.allow_tool_search and any_hidden:
            listed.append((self.tool_search, "offered"))
        taken = {tool.name for tool, _ in listed}
        for tool in self.extra_tools:
            if tool.name not in taken and self._admits(tool):
                hidden = tool.deferred and tool.name not in self.state.discovered_tools
                listed.append((tool, "deferred" if hidden else "offered"))
                taken.add(tool.name)
        return listed

    def offered(self) -> list[ToolDefinition]:
        """The tools the next request sends, in a stable order."""
        return [tool for tool, status in self.visible() if status == "offered"]

    def lookup(self, wire_name: str) -> ToolDefinition | None:
        """An offered tool by wire name; None for unknown, filtered-out or undiscovered tools."""
        for tool in self.offered():
            if tool.name == wire_name:
                return tool
        return None
