"""MCP servers: ``.mcp.json``, one owner task per server, wire-safe tool names."""

from .client import McpCallError, McpToolInfo, ServerConnection, to_tool_result
from .config import (
    HttpServerConfig,
    McpConfigError,
    StdioServerConfig,
    load_mcp_config,
    load_mcp_config_partial,
    parse_server,
)
from .manager import McpManager, ServerStatus
from .naming import assign_wire_names, display_name, is_wire_name

__all__ = [
    "McpManager",
    "ServerStatus",
    "ServerConnection",
    "McpCallError",
    "McpToolInfo",
    "McpConfigError",
    "StdioServerConfig",
    "HttpServerConfig",
    "load_mcp_config",
    "load_mcp_config_partial",
    "parse_server",
    "to_tool_result",
    "assign_wire_names",
    "display_name",
    "is_wire_name",
]
