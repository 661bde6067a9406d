"""``.mcp.json``: the MCP servers of a project, in the format Claude Code uses.

    {"mcpServers": {"name": {"command": ..., "args": [...], "env": {...}, "cwd": ...},
                    "other": {"type": "http", "url": ..., "headers": {...}}}}

Strings may use ``${VAR}`` and ``${VAR:-default}``; a variable that is unset and has no
default is an error naming the file, the server and the variable, never an empty string
silently passed to a server. ``"deferred": true`` hides a server's tools until
tool_search finds them; ``"timeout"`` (seconds) overrides the call timeout.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Annotated, Any, Literal, Mapping, Union

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

__all__ = [
    "CONFIG_FILE",
    "McpConfigError",
    "StdioServerConfig",
    "HttpServerConfig",
    "ServerConfig",
    "expand_vars",
    "parse_server",
    "parse_config",
    "load_mcp_config",
    "load_mcp_config_partial",
]

CONFIG_FILE = ".mcp.json"
SERVER_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


class McpConfigError(ValueError):
    """A server entry that cannot be used; the message names the file and the server."""


class _Common(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    deferred: bool = False
    timeout: float | None = Field(default=None, gt=0, description="Call timeout in seconds.")


class StdioServerConfig(_Common):
    """A server run as a child process, spoken to over its stdin and stdout."""

    type: Literal["stdio"] = "stdio"
    command: str = Field(min_length=1)
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    cwd: str | None = None
    # Opt in to the same OS sandbox as execute_command (read-only filesystem, no network).
    sandbox: bool = False


class HttpServerConfig(_Common):
    """A server reached over streamable HTTP."""

    type: Literal["http", "streamable-http", "streamableHttp"]
    url: str = Field(pattern=r"^https?://")
    headers: dict[str, str] = Field(default_factory=dict)


ServerConfig = Annotated[Union[StdioServerConfig, HttpServerConfig], Field(discriminator="type")]
_adapter: TypeAdapter[StdioServerConfig | HttpServerConfig] = TypeAdapter(ServerConfig)


def expand_vars(value: Any, environ: Mapping[str, str], *, where: str) -> Any:
    """``${VAR}`` / ``${VAR:-default}`` expanded in every string of ``value`` (recursively)."""
    if isinstance(value, str):

        def substitute(match: re.Match[str]) -> str:
            name, default = match.group(1), match.group(2)
            if name in environ:
                return environ[name]
            if default is not None:
                return default
            raise McpConfigError(f"{where}: environment variable {name} is not set and has no default (${{{name}:-...}})")

        return _VAR.sub(substitute, value)
    if isinstance(value, list):
        return [expand_vars(item, environ, where=where) for item in value]
    if isinstance(value, dict):
        return {key: expand_vars(item, environ, where=where) for key, item in value.items()}
    return value


def _describe(error: ValidationError) -> str:
    problems = []
    for item in error.errors(include_url=False):
        loc = ".".join(str(part) for part in item["loc"] if part not in ("stdio", "http", "streamable-http", "streamableHttp"))
        problems.append(f"{loc or '(entry)'}: {item['msg']}")
    return "; ".join(problems)


def parse_server(
    name: str, raw: Any, *, environ: Mapping[str, str] | None = None, source: str = CONFIG_FILE
) -> StdioServerConfig | HttpServerConfig:
    """One server entry, validated and with variables expanded; McpConfigError if unusable."""
    where = f"{source}: server {name!r}"
    if not isinstance(name, str) or not SERVER_NAME_RE.match(name):
        raise McpConfigError(
            f"{where}: a server name must be 1-64 letters, digits, '_', '.' or '-' (and start with a letter or digit)"
        )
    if not isinstance(raw, dict):
        raise McpConfigError(f"{where}: expected an object, got {type(raw).__name__}")
    entry = dict(raw)
    if "type" not in entry:
        entry["type"] = "http" if "url" in entry and "command" not in entry else "stdio"
    if entry["type"] == "sse":
        raise McpConfigError(f"{where}: the legacy SSE transport is not supported; use type \"http\" (streamable HTTP)")
    entry = expand_vars(entry, os.environ if environ is None else environ, where=where)
    try:
        return _adapter.validate_python(entry)
    except ValidationError as error:
        raise McpConfigError(f"{where}: {_describe(error)}") from None


def parse_config(
    data: Any, *, environ: Mapping[str, str] | None = None, source: str = CONFIG_FILE
) -> dict[str, StdioServerConfig | HttpServerConfig]:
    """Every server of a parsed ``.mcp.json`` document."""
    if not isinstance(data, dict):
        raise McpConfigError(f"{source}: expected a JSON object with \"mcpServers\"")
    servers = data.get("mcpServers", {})
    if not isinstance(servers, dict):
        raise McpConfigError(f"{source}: \"mcpServers\" must be an object of name -> server")
    return {name: parse_server(name, raw, environ=environ, source=source) for name, raw in servers.items()}


def _read(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
        # An empty file means no servers: the sandbox leaves an empty placeholder while it
        # protects a .mcp.json that does not exist yet.
        return json.loads(text) if text.strip() else {}
    except json.JSONDecodeError as error:
        raise McpConfigError(f"{path}: not valid JSON: {error}") from None
    except OSError as error:
        raise McpConfigError(f"{path}: cannot be read: {error}") from None


def load_mcp_config(
    project: Path, *, environ: Mapping[str, str] | None = None
) -> dict[str, StdioServerConfig | HttpServerConfig]:
    """The servers of ``<project>/.mcp.json``; none if the file does not exist."""
    path = Path(project) / CONFIG_FILE
    if not path.exists():
        return {}
    return parse_config(_read(path), environ=environ, source=str(path))


def load_mcp_config_partial(
    project: Path, *, environ: Mapping[str, str] | None = None
) -> tuple[dict[str, StdioServerConfig | HttpServerConfig], dict[str, str]]:
    """The usable servers of ``.mcp.json`` and an error message for each unusable one.

    One bad entry must not keep the others from starting. An unreadable file raises.
    """
    path = Path(project) / CONFIG_FILE
    if not path.exists():
        return {}, {}
    data = _read(path)
    if not isinstance(data, dict) or not isinstance(data.get("mcpServers", {}), dict):
        parse_config(data, source=str(path))  # raises the precise message
    good: dict[str, StdioServerConfig | HttpServerConfig] = {}
    bad: dict[str, str] = {}
    for name, raw in data.get("mcpServers", {}).items():
        try:
            good[name] = parse_server(name, raw, environ=environ, source=str(path))
        except McpConfigError as error:
            bad[name] = str(error)
    return good, bad
