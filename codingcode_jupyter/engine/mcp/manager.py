"""The MCP servers of a session: started from ``.mcp.json``, added and removed at will,
their tools offered as :class:`ToolDefinition` s.

A server that fails to start, crashes or times out never stops the session: its status
says what happened, a call to it returns a clear ``is_error`` result, and the next call
after a crash starts it again.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from pydantic import BaseModel

from ..tools.base import AnyArgs, ToolContext, ToolDefinition, ToolResult
from .client import (
    ConnectionState,
    McpCallError,
    McpToolInfo,
    ServerConnection,
    to_tool_result,
)
from .config import (
    CONFIG_FILE,
    HttpServerConfig,
    McpConfigError,
    StdioServerConfig,
    load_mcp_config_partial,
    parse_server,
)
from .naming import assign_wire_names, display_name

__all__ = ["McpManager", "ServerStatus"]


@dataclass(frozen=True)
class ServerStatus:
    """What ``%agent mcp`` shows for one server."""

    name: str
    transport: str
    state: ConnectionState
    error: str | None
    tool_count: int
    log_path: Path | None
    deferred: bool = False
    tools: tuple[str, ...] = ()


class McpManager:
    """Every MCP server of one project, each behind its own owner task."""

    def __init__(
        self,
        project: Path,
        *,
        log_dir: Path | None = None,
        call_timeout: float = 60.0,
        max_concurrency: int = 4,
        start_timeout: float = 30.0,
        reserved_names: Callable[[], set[str]] | None = None,
        sandbox: Any = None,
    ) -> None:
        self.project = Path(project)
        self.sandbox = sandbox
        self.log_dir = Path(log_dir) if log_dir is not None else self.project / ".codingcode" / "logs"
        self.call_timeout = call_timeout
        self.max_concurrency = max_concurrency
        self.start_timeout = start_timeout
        # Wire names MCP tools must not take (the built-ins'), asked for at naming time.
        self._name_providers: list[Callable[[], set[str]]] = [reserved_names] if reserved_names else []
        self._servers: dict[str, ServerConnection] = {}
        self._config_errors: dict[str, str] = {}
        self._config_loaded = False
        # Bumped whenever the set of tools may have changed; a cheap "look again" signal.
        self.tools_version = 0

    # -- configuration -----------------------------------------------------------------

    def load_config(self) -> dict[str, StdioServerConfig | HttpServerConfig]:
        """Read ``.mcp.json`` and register its usable servers (not started).

        Raises McpConfigError naming every unusable entry, after registering the good ones;
        the errors also show in :meth:`status`.
        """
        self._config_loaded = True
        self._config_errors.clear()
        try:
            configs, errors = load_mcp_config_partial(self.project)
        except McpConfigError as error:
            self._config_errors[CONFIG_FILE] = str(error)
            raise
        for name, config in configs.items():
            if name not in self._servers:
                self._servers[name] = self._connection(name, config)
        self._config_errors.update(errors)
        if errors:
            raise McpConfigError("\n".join(errors.values()))
        return configs

    def _connection(self, name: str, config: StdioServerConfig | HttpServerConfig) -> ServerConnection:
        return ServerConnection(
            name=name,
            config=config,
            project=self.project,
            log_path=self.log_dir / f"mcp-{name}.log",
            call_timeout=self.call_timeout,
            start_timeout=self.start_timeout,
            max_concurrency=self.max_concurrency,
            on_tools_changed=self._tools_changed,
            sandbox=self.sandbox,
        )

    def reserve_names(self, provider: Callable[[], set[str]]) -> None:
        """Add a source of wire names MCP tools must not take (a resolver's built-ins)."""
        if provider not in self._name_providers:
            self._name_providers.append(provider)

    def _reserved(self) -> set[str]:
        names: set[str] = set()
        for provider in self._name_providers:
            names |= provider()
        return names

    def _tools_changed(self) -> None:
        self.tools_version += 1

    # -- lifecycle ---------------------------------------------------------------------

    async def start(self) -> None:
        """Start every configured server at once; failures are recorded in status, never raised."""
        if not self._config_loaded:
            try:
                self.load_config()
            except McpConfigError:
                pass  # recorded for status(); the valid servers still start
        await asyncio.gather(*(server.start() for server in self._servers.values() if server.state != "running"))
        self._tools_changed()

    async def add(self, name: str, config: dict[str, Any] | StdioServerConfig | HttpServerConfig) -> ServerStatus:
        """Add (or replace) a server for this session and start it; McpConfigError if the entry is invalid."""
        parsed = config if isinstance(config, BaseModel) else parse_server(name, config, source="%agent mcp add")
        if name in self._servers:
            await self.remove(name)
        server = self._servers[name] = self._connection(name, parsed)
        await server.start()
        self._tools_changed()
        return self._status(server)

    async def remove(self, name: str) -> bool:
        """Stop and forget a server; False if there was none by that name."""
        server = self._servers.pop(name, None)
        if server is None:
            return False
        await server.stop()
        self._tools_changed()
        return True

    async def aclose(self) -> None:
        """Stop every server."""
        await asyncio.gather(*(server.stop() for server in self._servers.values()), return_exceptions=True)

    # -- what is known -----------------------------------------------------------------

    def servers(self) -> list[str]:
        """The configured server names, sorted."""
        return sorted(self._servers)

    def connection(self, name: str) -> ServerConnection | None:
        """The connection of one server (for status and tests)."""
        return self._servers.get(name)

    def _status(self, server: ServerConnection) -> ServerStatus:
        return ServerStatus(
            name=server.name,
            transport=server.transport,
            state=server.state,
            error=server.error,
            tool_count=len(server.tools),
            log_path=server.log_path if server.transport == "stdio" else None,
            deferred=server.config.deferred,
            tools=tuple(tool.name for tool in server.tools),
        )

    def status(self) -> list[ServerStatus]:
        """One line per server, sorted by name (plus a config error, if ``.mcp.json`` is invalid)."""
        statuses = [self._status(self._servers[name]) for name in sorted(self._servers)]
        for source, error in sorted(self._config_errors.items()):
            statuses.append(ServerStatus(source, "config", "failed", error, 0, None))
        return statuses

    def describe(self) -> str:
        """Plain text for ``%agent mcp``: each server, its state and its tools."""
        statuses = self.status()
        if not statuses:
            return f"No MCP servers (add them to {self.project / '.mcp.json'} or with %agent mcp add)."
        lines = []
        for status in statuses:
            head = f"{status.name} [{status.transport}] {status.state}"
            if status.state != "failed" or status.tool_count:
                head += f", {status.tool_count} tool(s)"
            if status.deferred:
                head += ", deferred (found through tool_search)"
            lines.append(head)
            if status.error:
                lines.append(f"  error: {status.error}")
            if status.log_path is not None and status.log_path.exists():
                lines.append(f"  log: {status.log_path}")
            if status.tools:
                lines.append("  tools: " + ", ".join(f"{status.name}:{tool}" for tool in status.tools))
        return "\n".join(lines)

    def tools(self) -> list[ToolDefinition]:
        """The tools of every server whose tool list is known, sorted by server then tool.

        A server that crashed keeps its last tool list, so the model's tools block does not
        flicker; a call to one of them restarts the server.
        """
        pairs = [(server.name, tool.name) for server in self._servers.values() for tool in server.tools]
        names = assign_wire_names(pairs, reserved=self._reserved())
        definitions = []
        for server_name in sorted(self._servers):
            server = self._servers[server_name]
            for info in sorted(server.tools, key=lambda tool: tool.name):
                definitions.append(_definition(server, info, names[(server.name, info.name)]))
        return definitions


def _definition(server: ServerConnection, info: McpToolInfo, wire_name: str) -> ToolDefinition:
    async def execute(args: AnyArgs, ctx: ToolContext) -> ToolResult:
        arguments = args.model_dump(exclude_unset=True)
        try:
            result = await server.call(info.name, arguments)
        except McpCallError as error:
            return ToolResult.text(str(error), is_error=True)
        return to_tool_result(result)

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
        # readOnlyHint is the server's claim, shown on approval cards but never trusted:
        # read_only would let the approval pipeline wave calls through without asking.
        read_only=False,
    )
