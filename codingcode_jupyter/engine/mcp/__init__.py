"""MCP servers: ``.mcp.json``, one owner task per server, wire-safe tool names, and the client
side of the protocol (progress, logs, resources, prompts, sampling, elicitation, roots, OAuth)."""

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
from .manager import McpFront, McpManager, ServerStatus
from .naming import assign_wire_names, display_name, is_wire_name
from .oauth import LoginError
from .origin import CallOrigin
from .prompts import PromptError
from .sampling import Sampler, SamplingDeclined, SamplingRequest, SamplingResult, TurnSampler

__all__ = [
    "McpManager",
    "McpFront",
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
