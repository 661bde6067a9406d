"""A server's tools as the session's :class:`ToolDefinition` s, and the directories a stdio
server's arguments name (sent to it as roots beside the project)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from ..tools.base import AnyArgs, ToolContext, ToolDefinition, ToolResult
from .common import McpCallError
from .config import HttpServerConfig, SseServerConfig, StdioServerConfig
from .naming import display_name
from .origin import CallOrigin
from .results import to_tool_result

if TYPE_CHECKING:
    from .client import ServerConnection
    from .offers import McpToolInfo

__all__ = ["argument_directories", "trusted_read_only", "tool_definition"]

AnyConfig = StdioServerConfig | HttpServerConfig | SseServerConfig


def argument_directories(config: AnyConfig, project: Path) -> list[Path]:
    """The existing directories a stdio server's arguments name (relative ones from its working directory)."""
    if not isinstance(config, StdioServerConfig):
        return []
    base = Path(config.cwd) if config.cwd else project
    if not base.is_absolute():
        base = project / base
    found: list[Path] = []
    for arg in config.args:
        if not arg or arg.startswith("-"):
            continue  # an option, not a place
        path = Path(os.path.expanduser(arg))
        path = path if path.is_absolute() else base / path
        try:
            if path.is_dir():
                resolved = path.resolve()
                if resolved not in found:
                    found.append(resolved)
        except OSError:
            continue
    return found


def trusted_read_only(server: ServerConnection, info: McpToolInfo) -> bool:
    # A hint can only tighten what an untrusted server gets: readOnlyHint loosens approval
    # (no question asked), so it counts only where the person vouched for the server.
    return server.config.trust_annotations and (info.annotations or {}).get("readOnlyHint") is True


def tool_definition(server: ServerConnection, info: McpToolInfo, wire_name: str) -> ToolDefinition:
    async def execute(args: AnyArgs, ctx: ToolContext) -> ToolResult:
        arguments = args.model_dump(exclude_unset=True)
        try:
            result = await server.call(info.name, arguments, CallOrigin.from_context(ctx))
        except McpCallError as error:
            return ToolResult.text(str(error), is_error=True)
        return to_tool_result(result, server.name)

    description = info.description or info.title or f"{info.name} (from MCP server {server.name})"
    return ToolDefinition(
        name=wire_name,
        description=description,
        parameters=AnyArgs,
        execute=execute,
        json_schema=info.input_schema,
        source="mcp",
        display_name=display_name(server.name, info.name),
        mcp_server=server.name,
        annotations=info.annotations,
        deferred=server.config.deferred,
        read_only=trusted_read_only(server, info),
    )
