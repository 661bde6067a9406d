"""``list_mcp_resources`` and ``read_mcp_resource``: the model's way to the servers' resources.

Both are read-only and name the server they ask, so a resource link in a tool result (which
says its server) can be followed. Reading decodes textual blobs and passes images as image
blocks, the same way tool results do.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Protocol

from pydantic import BaseModel, ConfigDict, Field

from ..tools.base import ToolContext, ToolDefinition, ToolError, ToolResult, text_block
from .common import McpCallError
from .origin import CallOrigin
from .results import READ_TOOL, resource_blocks

if TYPE_CHECKING:
    from .client import ServerConnection
    from .offers import ResourceInfo


class ResourceServers(Protocol):
    """The servers the resource tools reach (the session's MCP manager)."""

    def servers(self) -> list[str]: ...

    def connection(self, name: str) -> "ServerConnection | None": ...

    def resource_servers(self) -> list["ServerConnection"]: ...

__all__ = ["LIST_TOOL", "READ_TOOL", "resource_tools"]

LIST_TOOL = "list_mcp_resources"


class ListArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    server: Annotated[str | None, Field(description="Only this MCP server's resources (default: every server's).")] = None


class ReadArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    server: Annotated[str, Field(description="The MCP server that has the resource.")]
    uri: Annotated[str, Field(description="The resource's URI, as listed or as a resource link gave it.")]


def _describe(resource: ResourceInfo) -> str:
    what = f"template {resource.uri}" if resource.template else resource.uri
    parts = [f"- {what}", f"({resource.name})"]
    if resource.mime_type:
        parts.append(resource.mime_type)
    if resource.size is not None:
        parts.append(f"{resource.size} bytes")
    if resource.description:
        parts.append(f"- {resource.description}")
    return " ".join(parts)


def resource_tools(manager: ResourceServers) -> list[ToolDefinition]:
    """The two tools, bound to ``manager``'s servers."""

    async def list_resources(args: ListArgs, ctx: ToolContext) -> str:
        servers = [args.server] if args.server else [s.name for s in manager.resource_servers()]
        lines: list[str] = []
        for name in servers:
            server = manager.connection(name)
            if server is None:
                raise ToolError(f"No MCP server named {name!r}. Servers with resources: "
                                f"{', '.join(s.name for s in manager.resource_servers()) or 'none'}.")
            try:
                found = await server.refresh_resources()
            except McpCallError as error:
                lines.append(f"{name}: {error}")
                continue
            lines.append(f"{name}: {len(found)} resource(s)" + (":" if found else ""))
            lines.extend(_describe(resource) for resource in found)
        lines.append(f"Read one with {READ_TOOL}(server, uri); a template's {{placeholders}} are filled in by you.")
        return "\n".join(lines)

    async def read_resource(args: ReadArgs, ctx: ToolContext) -> ToolResult:
        server = manager.connection(args.server)
        if server is None:
            raise ToolError(f"No MCP server named {args.server!r}; the servers are: {', '.join(manager.servers()) or 'none'}.")
        try:
            result = await server.read_resource(args.uri, CallOrigin.from_context(ctx))
        except McpCallError as error:
            return ToolResult.text(str(error), is_error=True)
        blocks = resource_blocks(result.contents) or [text_block(f"(the resource {args.uri} is empty)")]
        return ToolResult(blocks)

    return [
        ToolDefinition(
            name=LIST_TOOL,
            description="List the resources (files, documents, records) the MCP servers offer, with their URIs.",
            parameters=ListArgs, execute=list_resources, source="mcp", read_only=True,
        ),
        ToolDefinition(
            name=READ_TOOL,
            description="Read one resource of an MCP server by its URI (from list_mcp_resources or a resource link "
                        "in a tool result). Text is returned as text, images as images.",
            parameters=ReadArgs, execute=read_resource, source="mcp", read_only=True,
        ),
    ]
