"""One connection to one MCP server, owned by one long-lived task.

The SDK's client session lives in anyio cancel scopes, so it must be entered and exited
in the same task (the SDK's anyio cancel scopes require it). :class:`ServerConnection` starts an owner task that opens
the session, lists the tools, keeps a change subscription open and waits to be stopped;
calls from any other task use the open session directly (the SDK multiplexes concurrent
requests), bounded by a per-server semaphore. A crash, a timeout or a server that never
starts becomes a clear :class:`McpCallError` or a ``failed`` status, never a stuck turn;
the next call after a crash starts the server again.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import logging
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Literal

import httpx2
import mcp_types as types
from mcp import Client, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from ..tools.base import ToolResult, text_block
from .config import HttpServerConfig, StdioServerConfig

__all__ = ["McpCallError", "McpToolInfo", "ServerConnection", "ConnectionState", "to_tool_result"]

log = logging.getLogger(__name__)

ConnectionState = Literal["stopped", "starting", "running", "failed"]
# Image types the Messages API accepts as image blocks; others become a text note.
MODEL_IMAGE_TYPES = {"image/jpeg", "image/png", "image/gif", "image/webp"}
_MAX_TOOL_PAGES = 100


class McpCallError(Exception):
    """A call that could not get a result from the server (not started, crashed, timed out)."""


@dataclass(frozen=True)
class McpToolInfo:
    """A tool as a server lists it."""

    name: str
    description: str
    input_schema: dict[str, Any]
    annotations: dict[str, Any] | None = None
    title: str | None = None


def _error_text(error: BaseException) -> str:
    # anyio task groups wrap the real failure; show the innermost, most specific one.
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    if isinstance(error, MCPError):
        return error.error.message
    if isinstance(error, McpCallError):
        return str(error)
    text = str(error)
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def _tool_info(tool: types.Tool) -> McpToolInfo:
    annotations = tool.annotations.model_dump(by_alias=True, exclude_none=True) if tool.annotations else None
    return McpToolInfo(
        name=tool.name,
        description=tool.description or "",
        input_schema=dict(tool.input_schema) if tool.input_schema else {"type": "object", "properties": {}},
        annotations=annotations or None,
        title=tool.title,
    )


@dataclass
class ServerConnection:
    """A configured server and, while running, its open client session."""

    name: str
    config: StdioServerConfig | HttpServerConfig
    project: Path
    log_path: Path | None = None
    call_timeout: float = 60.0
    start_timeout: float = 30.0
    max_concurrency: int = 4
    # "auto" speaks the 2026 protocol to servers that have it and falls back to the
    # initialize handshake otherwise; "legacy" forces the handshake (tests, odd servers).
    protocol_mode: str = "auto"
    # Called (with no arguments) after the tool list changed.
    on_tools_changed: Callable[[], None] = lambda: None
    # The session's CommandSandbox, for stdio servers whose entry says "sandbox": true.
    sandbox: Any = None

    state: ConnectionState = field(default="stopped", init=False)
    error: str | None = field(default=None, init=False)
    tools: list[McpToolInfo] = field(default_factory=list, init=False)
    restarts: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        self._client: Client | None = None
        self._owner: asyncio.Task[None] | None = None
        self._ready = asyncio.Event()
        self._wake = asyncio.Event()
        self._stopping = False
        self._dirty = asyncio.Event()
        self._start_lock = asyncio.Lock()
        self._calls = asyncio.Semaphore(max(1, self.max_concurrency))
        self._generation = 0

    @property
    def transport(self) -> str:
        return "stdio" if isinstance(self.config, StdioServerConfig) else "http"

    @property
    def timeout(self) -> float:
        return self.config.timeout if self.config.timeout is not None else self.call_timeout

    # -- lifecycle ---------------------------------------------------------------------

    async def start(self) -> None:
        """Start the server and wait until it answers or fails; failures go to ``state``/``error``."""
        async with self._start_lock:
            if self.state == "running":
                return
            await self._halt()
            self._ready = asyncio.Event()
            self._wake = asyncio.Event()
            self._stopping = False
            self._dirty = asyncio.Event()
            self.state, self.error = "starting", None
            self._generation += 1
            self._owner = asyncio.create_task(self._own(self._generation), name=f"mcp-server-{self.name}")
            await self._ready.wait()

    async def stop(self) -> None:
        """Close the session and end the server process (if it is ours)."""
        async with self._start_lock:
            await self._halt()
            self.state = "stopped"

    async def _halt(self) -> None:
        owner, self._owner = self._owner, None
        if owner is None:
            return
        self._stopping = True
        self._wake.set()
        try:
            # The SDK bounds its own shutdown (close stdin, SIGTERM, SIGKILL); this is a backstop.
            await asyncio.wait_for(asyncio.shield(owner), timeout=10)
        except (asyncio.TimeoutError, Exception):
            owner.cancel()
            await asyncio.gather(owner, return_exceptions=True)
        self._client = None

    def _transport(self, stack: AsyncExitStack) -> Any:
        config = self.config
        if isinstance(config, StdioServerConfig):
            cwd = self.project / config.cwd if config.cwd else self.project
            argv = [config.command, *config.args]
            if config.sandbox:
                # Fail closed: a server that asked for the sandbox never starts without it.
                if self.sandbox is None or not self.sandbox.active:
                    reason = getattr(self.sandbox, "unavailable_reason", None) or "no sandbox is configured"
                    raise RuntimeError(f"server '{self.name}' asks for the sandbox, which is unavailable: {reason}")
                argv = self.sandbox.wrap(argv, cwd)
            params = StdioServerParameters(command=argv[0], args=argv[1:], env=config.env or None, cwd=cwd)
            # A real file: under ipykernel sys.stderr may have no file descriptor.
            if self.log_path is not None:
                self.log_path.parent.mkdir(parents=True, exist_ok=True)
                errlog = stack.enter_context(open(self.log_path, "a", encoding="utf-8", errors="replace"))
            else:
                errlog = stack.enter_context(open("/dev/null", "w"))
            return stdio_client(params, errlog=errlog)
        http = httpx2.AsyncClient(headers=config.headers, timeout=httpx2.Timeout(30.0, read=300.0))
        return streamable_http_client(config.url, http_client=http)

    async def _own(self, generation: int) -> None:
        try:
            async with AsyncExitStack() as stack:
                client = Client(
                    self._transport(stack),
                    message_handler=self._on_message,
                    read_timeout_seconds=self.start_timeout,
                    mode=self.protocol_mode,
                )
                try:
                    async with asyncio.timeout(self.start_timeout):
                        await stack.enter_async_context(client)
                        self.tools = await self._list_tools(client)
                except TimeoutError:
                    raise McpCallError(f"did not answer within {self.start_timeout:g} s") from None
                self._client = client
                self.state, self.error = "running", None
                self._ready.set()
                async with asyncio.TaskGroup() as group:
                    helpers = [group.create_task(self._refresh_on_change(client))]
                    if client.protocol_version in MODERN_PROTOCOL_VERSIONS:
                        helpers.append(group.create_task(self._listen(client, generation)))
                    # Woken by stop() or by a lost connection; either way the session closes here,
                    # in the task that opened it.
                    await self._wake.wait()
                    for helper in helpers:
                        helper.cancel()
        except BaseException as error:  # noqa: BLE001 - every failure becomes a status
            if isinstance(error, asyncio.CancelledError) and self._stopping:
                return
            if not self._stopping and generation == self._generation:
                self._fail(_error_text(error))
        finally:
            self._client = None
            self._ready.set()

    def _fail(self, message: str) -> None:
        self.state, self.error = "failed", message
        self._client = None
        self._wake.set()
        log.warning("MCP server %s failed: %s", self.name, message)

    # -- tool list ---------------------------------------------------------------------

    async def _list_tools(self, client: Client) -> list[McpToolInfo]:
        tools: list[McpToolInfo] = []
        if client.server_capabilities.tools is None:
            return tools  # a server of only prompts or resources: nothing to offer, not a failure
        cursor: str | None = None
        for _ in range(_MAX_TOOL_PAGES):
            # "refresh": the SDK's response cache must not hand back a list we were told is stale.
            page = await client.list_tools(cursor=cursor, cache_mode="refresh")
            tools.extend(_tool_info(tool) for tool in page.tools)
            cursor = page.next_cursor
            if cursor is None:
                break
        return tools

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            # Never list from inside the handler: it runs on the session's receive loop.
            self._dirty.set()
        await asyncio.sleep(0)

    async def _refresh_on_change(self, client: Client) -> None:
        while True:
            await self._dirty.wait()
            self._dirty.clear()
            try:
                self.tools = await self._list_tools(client)
            except Exception as error:
                log.warning("MCP server %s: refreshing the tool list failed: %s", self.name, _error_text(error))
                continue
            self.on_tools_changed()

    async def _listen(self, client: Client, generation: int) -> None:
        # On the 2026 protocol, change notifications flow only while a listen stream is open.
        try:
            async with client.listen(tools_list_changed=True) as subscription:
                async for _event in subscription:
                    self._dirty.set()
        except asyncio.CancelledError:
            raise
        except Exception as error:
            if not self._stopping and generation == self._generation:
                self._fail(f"connection lost: {_error_text(error)}")
            return
        if not self._stopping and generation == self._generation:
            self._fail("connection closed by the server")

    # -- calls -------------------------------------------------------------------------

    async def call(self, tool: str, arguments: dict[str, Any]) -> types.CallToolResult:
        """Call a tool; McpCallError with a clear message if no result can be had."""
        if self.state != "running":
            if self.state == "failed":
                self.restarts += 1
            await self.start()
        client = self._client
        if self.state != "running" or client is None:
            raise McpCallError(f"MCP server {self.name!r} is not running: {self.error or 'not started'}")
        async with self._calls:
            try:
                return await client.call_tool(tool, arguments, read_timeout_seconds=self.timeout)
            except MCPError as error:
                if error.code == REQUEST_TIMEOUT:
                    raise McpCallError(f"{self.name}:{tool} timed out after {self.timeout:g} s") from None
                if error.code == CONNECTION_CLOSED:
                    self._fail("the server exited or closed the connection")
                    raise McpCallError(
                        f"MCP server {self.name!r} crashed or closed the connection during {tool}; "
                        "it will be restarted on the next call" + self._log_hint()
                    ) from None
                raise McpCallError(f"{self.name}:{tool} failed: {error.error.message}") from None
            except (TimeoutError, asyncio.TimeoutError):
                raise McpCallError(f"{self.name}:{tool} timed out after {self.timeout:g} s") from None
            except (OSError, httpx2.HTTPError, EOFError) as error:
                self._fail(_error_text(error))
                raise McpCallError(
                    f"MCP server {self.name!r} is unreachable: {_error_text(error)}; it will be retried on the next call"
                ) from None

    def _log_hint(self) -> str:
        return f" (its stderr is in {self.log_path})" if self.log_path and self.transport == "stdio" else ""


# -- results -----------------------------------------------------------------------------


def _image_block(data: str, mime: str) -> dict[str, Any]:
    return {"type": "image", "source": {"type": "base64", "media_type": mime, "data": data}}


def _decoded_size(data: str) -> int:
    try:
        return len(base64.b64decode(data, validate=False))
    except (binascii.Error, ValueError):
        return len(data)


def _content_block(item: Any) -> dict[str, Any]:
    if isinstance(item, types.TextContent):
        return text_block(item.text)
    if isinstance(item, types.ImageContent):
        if item.mime_type in MODEL_IMAGE_TYPES:
            return _image_block(item.data, item.mime_type)
        return text_block(f"[image of type {item.mime_type}, {_decoded_size(item.data)} bytes: a type the model cannot view]")
    if isinstance(item, types.AudioContent):
        return text_block(f"[audio of type {item.mime_type}, {_decoded_size(item.data)} bytes: not shown to the model]")
    if isinstance(item, types.ResourceLink):
        parts = [f"Resource link: {item.name} <{item.uri}>"]
        if item.mime_type:
            parts.append(f"({item.mime_type})")
        if item.description:
            parts.append(f"- {item.description}")
        return text_block(" ".join(parts))
    if isinstance(item, types.EmbeddedResource):
        resource = item.resource
        mime = resource.mime_type or "unknown type"
        if isinstance(resource, types.TextResourceContents):
            return text_block(f"Resource {resource.uri} ({mime}):\n{resource.text}")
        if resource.mime_type in MODEL_IMAGE_TYPES:
            return _image_block(resource.blob, resource.mime_type)
        return text_block(f"[binary resource {resource.uri} ({mime}), {_decoded_size(resource.blob)} bytes]")
    kind = getattr(item, "type", type(item).__name__)
    return text_block(f"[{kind} content not supported]")


def to_tool_result(result: types.CallToolResult) -> ToolResult:
    """An MCP call result as Messages API tool_result content."""
    blocks = [_content_block(item) for item in result.content]
    has_text = any(block["type"] == "text" for block in blocks)
    if result.structured_content is not None and not has_text:
        blocks.append(text_block(json.dumps(result.structured_content, ensure_ascii=False, sort_keys=True)))
    if not blocks:
        blocks.append(text_block("(no output)"))
    return ToolResult(blocks, is_error=bool(result.is_error))
