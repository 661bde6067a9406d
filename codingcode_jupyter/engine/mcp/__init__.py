"""MCP servers: ``.mcp.json``, one owner task per server, wire-safe tool names, and the client
side of the protocol (progress, logs, resources, prompts, sampling, elicitation, roots, OAuth).

Names are imported on first use: the client side pulls in the ``mcp`` SDK (and with it most of
its server side), which a session whose project configures no server never needs.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .client import McpCallError, McpToolInfo, ResourceInfo, ServerConnection, to_tool_result
    from .config import (
        HttpServerConfig,
        McpConfigError,
        OAuthOptions,
        SseServerConfig,
        StdioServerConfig,
        load_mcp_config,
        load_mcp_config_partial,
        parse_server,
        parse_typed_entry,
    )
    from .elicitation import ElicitationRequest, ElicitationResponse, Elicitor, FormField, check_answer, parse_form
    from .manager import McpManager, ServerStatus
    from .naming import assign_wire_names, display_name, is_wire_name
    from .oauth import LoginError
    from .origin import CallOrigin
    from .prompts import PromptError
    from .sampling import Sampler, SamplingDeclined, SamplingRequest, SamplingResult, TurnSampler

__all__ = [
    "McpManager",
    "ServerStatus",
    "ServerConnection",
    "McpCallError",
    "McpToolInfo",
    "ResourceInfo",
    "McpConfigError",
    "StdioServerConfig",
    "HttpServerConfig",
    "SseServerConfig",
    "OAuthOptions",
    "load_mcp_config",
    "load_mcp_config_partial",
    "parse_server",
    "parse_typed_entry",
    "to_tool_result",
    "assign_wire_names",
    "display_name",
    "is_wire_name",
    "CallOrigin",
    "ElicitationRequest",
    "ElicitationResponse",
    "Elicitor",
    "FormField",
    "parse_form",
    "check_answer",
    "PromptError",
    "LoginError",
    "Sampler",
    "SamplingRequest",
    "SamplingResult",
    "SamplingDeclined",
    "TurnSampler",
]


# Where each public name lives; the module is imported when the name is first asked for.
_HOMES = {
    "McpCallError": "client", "McpToolInfo": "client", "ResourceInfo": "client", "ServerConnection": "client",
    "to_tool_result": "results",
    "HttpServerConfig": "config", "McpConfigError": "config", "OAuthOptions": "config", "SseServerConfig": "config",
    "StdioServerConfig": "config", "load_mcp_config": "config", "load_mcp_config_partial": "config",
    "parse_server": "config", "parse_typed_entry": "config",
    "ElicitationRequest": "elicitation", "ElicitationResponse": "elicitation", "Elicitor": "elicitation",
    "FormField": "elicitation", "check_answer": "elicitation", "parse_form": "elicitation",
    "McpManager": "manager", "ServerStatus": "manager",
    "assign_wire_names": "naming", "display_name": "naming", "is_wire_name": "naming",
    "LoginError": "oauth",
    "CallOrigin": "origin",
    "PromptError": "prompts",
    "Sampler": "sampling", "SamplingDeclined": "sampling", "SamplingRequest": "sampling",
    "SamplingResult": "sampling", "TurnSampler": "sampling",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
