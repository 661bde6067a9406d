"""One connection to one MCP server, owned by one long-lived task.

The SDK's client session lives in anyio cancel scopes, so it must be entered and exited
in the same task (its anyio cancel scopes require it). :class:`ServerConnection` starts an owner task that opens
the session, learns what the server offers, keeps change notifications flowing and waits
to be stopped; calls from any other task use the open session directly (the SDK
multiplexes concurrent requests), bounded by a per-server semaphore.

What a server offers is negotiated, never assumed: tools, prompts and resources are listed
only when the server declares them, change subscriptions are opened only for the lists it
says can change, and a server without an optional method is still a healthy server. The
client declares sampling, elicitation and roots; what the server asks through them goes
to the :class:`ConnectionHost` (the manager), together with the call it came during.

A crash, a timeout or a server that never starts becomes a clear :class:`McpCallError`
or a ``failed`` status, never a stuck turn; a server that exits between calls is noticed
when its output closes.
"""

from __future__ import annotations

import asyncio
import logging
import time
import warnings
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, AsyncIterator, Awaitable, Callable, Literal, Protocol, TypedDict, TypeVar

import httpx2
import mcp_types as types
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import FileUrl

from ..deadline import within
from ..events import McpProgress
from ..own_dir import keep_out_of_git
from .call_clocks import CallClocks
from .common import McpCallError
from .config import HttpServerConfig, SseServerConfig, StdioServerConfig
from .elicitation import ElicitationRequest, ElicitationResponse, ElicitationSchemaError, check_answer, parse_form
from .oauth import LoginFlow, LoginPending, default_token_dir, make_oauth
from .offers import McpToolInfo, ResourceInfo, list_prompts, list_resources, list_tools
from .origin import CallOrigin
from .prompts import PromptInfo
from .results import to_tool_result
from .sampling import SamplingDeclined, SamplingRequest, SamplingResult, result_for_server, sampling_request
from .server_log import LogEntry, ServerLog
from .transport import HttpErrors, open_transport

__all__ = [
    "McpCallError",
    "McpToolInfo",
    "ResourceInfo",
    "ServerConnection",
    "ConnectionState",
    "ConnectionHost",
    "LoneHost",
    "Change",
    "to_tool_result",
]

log = logging.getLogger(__name__)
_T = TypeVar("_T")

ConnectionState = Literal["stopped", "starting", "running", "failed", "needs_login", "untrusted", "refused"]
# The SDK's own per-request clock would keep running while a person answers the server's
# question; calls are timed here instead (see CallClocks), so the SDK's is set out of reach.
_NO_SDK_TIMEOUT = 7 * 24 * 3600.0
_LOG_LEVEL: types.LoggingLevel = "info"
# The JSON-RPC code servers expect when the user rejects a sampling request.
_USER_REJECTED = -1


class _Where(TypedDict, total=False):
    """Where an elicitation came from: the call in flight when the server asked."""

    tool_use_id: str | None
    agent: str
    session_id: str
    turn_id: int


def _innermost(error: BaseException) -> BaseException:
    # anyio task groups wrap the real failure; the innermost is the most specific one.
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    return error


def _progress_text(progress: float, total: float | None, message: str | None) -> str:
    if total:
        share = max(0.0, min(1.0, progress / total))
        filled = round(share * 10)
        text = f"[{'#' * filled}{'.' * (10 - filled)}] {progress:g}/{total:g} ({share:.0%})"
    else:
        text = f"progress {progress:g}"
    return f"{text} {message}" if message else text


@dataclass
class ServerConnection:
    """A configured server and, while running, its open client session."""

    name: str
    config: StdioServerConfig | HttpServerConfig | SseServerConfig
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
    host: ConnectionHost | None = None
    # Where OAuth tokens of remote servers are kept (the person's, not the project's).
    token_dir: Path | None = None

    state: ConnectionState = field(default="stopped", init=False)
    error: str | None = field(default=None, init=False)
    tools: list[McpToolInfo] = field(default_factory=list, init=False)
    # Tools the server offers that this client does not: (name, why).
    skipped_tools: list[tuple[str, str]] = field(default_factory=list, init=False)
    prompts: list[PromptInfo] = field(default_factory=list, init=False)
    resources: list[ResourceInfo] = field(default_factory=list, init=False)
    restarts: int = field(default=0, init=False)
    # A tool result linked to one of its resources (so reading resources is worth offering).
    links_seen: bool = field(default=False, init=False)
    log: ServerLog = field(default_factory=ServerLog, init=False)

    def __post_init__(self) -> None:
        self.project = Path(self.project)
        # A connection made on its own (tests, scripts) has nobody to ask.
        self._host: ConnectionHost = self.host or LoneHost(self.project)
        self._client: Client | None = None
        self._owner: asyncio.Task[None] | None = None
        self._ready = asyncio.Event()
        self._wake = asyncio.Event()
        self._stopping = False
        self._dirty: set[str] = set()
        self._dirty_event = asyncio.Event()
        self._start_lock = asyncio.Lock()
        self._calls = asyncio.Semaphore(max(1, self.max_concurrency))
        self._clocks = CallClocks()
        self._origins: list[CallOrigin] = []
        self._generation = 0
        self._failed_generation = -1
        # A failure nobody was told about yet (the server exited between calls).
        self._failure_unreported = False
        self._ran = False  # this generation reached "running"
        self._start_deadline: asyncio.Timeout | None = None
        self._http_errors = HttpErrors()
        self._login: LoginFlow | None = None
        self.started_at: float | None = None
        self.capabilities: types.ServerCapabilities | None = None
        self.protocol_version: str | None = None

    @property
    def transport(self) -> str:
        if isinstance(self.config, StdioServerConfig):
            return "stdio"
        return "sse" if isinstance(self.config, SseServerConfig) else "http"

    @property
    def timeout(self) -> float:
        return self.config.timeout if self.config.timeout is not None else self.call_timeout

    @property
    def login(self) -> LoginPending | None:
        """The login waiting for the person, if any."""
        return self._login.pending if self._login is not None else None

    @property
    def has_resources(self) -> bool:
        """Whether the resource tools have something to reach here.

        Many server frameworks declare the resources capability whatever they hold, so a
        server counts once it lists a resource or returned a link to one.
        """
        declared = self.state == "running" and self.capabilities is not None and self.capabilities.resources is not None
        return declared and (bool(self.resources) or self.links_seen)

    # -- lifecycle ---------------------------------------------------------------------

    def start_background(self) -> None:
        """Start the server without waiting for it; a no-op while it runs or is starting."""
        if self.state in ("running", "starting", "needs_login") and self._owner is not None and not self._owner.done():
            return
        self._spawn()

    def _spawn(self) -> None:
        refused = self._host.policy_refusal(self)
        if refused is not None:
            # The policy is asked at every start: one it refuses since the session began does not come back.
            self.state, self.error = "refused", refused
            self._ready = asyncio.Event()
            self._ready.set()
            self._host.server_changed(self, "state")
            return
        refusal = self._host.refusal(self)
        if refusal is not None:
            # Never started: nothing of the server runs until the person trusts it.
            self.state, self.error = "untrusted", refusal
            self._ready = asyncio.Event()
            self._ready.set()
            self._host.server_changed(self, "state")
            return
        self._ready = asyncio.Event()
        self._wake = asyncio.Event()
        self._stopping = False
        self._dirty = set()
        self._dirty_event = asyncio.Event()
        self.state, self.error = "starting", None
        self._generation += 1
        self._ran = False
        self._failure_unreported = False
        self.started_at = time.monotonic()
        self._owner = asyncio.create_task(self._own(self._generation, self._ready, self._wake), name=f"mcp-server-{self.name}")
        self._host.server_changed(self, "state")

    async def start(self) -> None:
        """Start the server and wait until it answers, fails or waits for a login."""
        async with self._start_lock:
            if self.state == "running":
                return
            if not (self.state in ("starting", "needs_login") and self._owner is not None and not self._owner.done()):
                await self._halt()
                self._spawn()
        await self._ready.wait()

    async def stop(self) -> None:
        """Close the session and end the server process (if it is ours)."""
        async with self._start_lock:
            await self._halt()
            self.state = "stopped"
            self._host.server_changed(self, "state")

    async def restart(self) -> None:
        """Stop and start again, waiting for the outcome (``%agent mcp restart``)."""
        async with self._start_lock:
            await self._halt()
            self.restarts += 1
            self._spawn()
        await self._ready.wait()

    async def _halt(self) -> None:
        owner, self._owner = self._owner, None
        if self._login is not None:
            await self._login.aclose()
        if owner is None:
            return
        self._stopping = True
        self._wake.set()
        try:
            # The SDK bounds its own shutdown (close stdin, SIGTERM, SIGKILL); this is a backstop.
            await within(asyncio.shield(owner), 10)
        except (asyncio.TimeoutError, Exception):
            owner.cancel()
            await asyncio.gather(owner, return_exceptions=True)
        self._client = None

    def _auth(self) -> httpx2.Auth | None:
        config = self.config
        if isinstance(config, StdioServerConfig) or not config.oauth.enabled:
            return None
        provider, flow, _storage = make_oauth(
            self.name, config.url, config.oauth, self.token_dir or default_token_dir(),
            on_pending=self._login_pending, on_settled=self._login_settled,
        )
        self._login = flow
        return provider

    def _login_pending(self, pending: LoginPending) -> None:
        # The person may take minutes: the start clock stops, and whoever waits for the
        # start is told now (the status says where to log in).
        if self._start_deadline is not None:
            self._start_deadline.reschedule(None)
        self.state = "needs_login"
        self._ready.set()
        self._host.server_changed(self, "login")

    def _login_settled(self) -> None:
        if self._start_deadline is not None:
            self._start_deadline.reschedule(asyncio.get_running_loop().time() + self.start_timeout)
        if self.state == "needs_login":
            self.state = "starting"
            self._host.server_changed(self, "state")

    def complete_login(self, address: str) -> None:
        """Finish a waiting login with the address the browser was sent back to."""
        if self._login is None:
            from .oauth import LoginError

            raise LoginError(f"server {self.name!r} does not log in with OAuth")
        self._login.complete(address)

    def _open(self, stack: AsyncExitStack, generation: int) -> Any:
        if self.log_path is not None and isinstance(self.config, StdioServerConfig):
            keep_out_of_git(self.log_path)
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            errlog = stack.enter_context(open(self.log_path, "a", encoding="utf-8", errors="replace"))
        else:
            # A real file: under ipykernel sys.stderr may have no file descriptor.
            errlog = stack.enter_context(open("/dev/null", "w"))
        self._http_errors = HttpErrors()
        return open_transport(
            self.config, name=self.name, project=self.project, errlog=errlog, sandbox=self.sandbox,
            project_env=self._host.project_env(),
            auth=self._auth(), errors=self._http_errors, on_closed=lambda: self._closed_by_server(generation),
        )

    async def _own(self, generation: int, ready: asyncio.Event, wake: asyncio.Event) -> None:
        # The events are this generation's own: a restart may already have made new ones.
        try:
            async with AsyncExitStack() as stack:
                client = Client(
                    self._open(stack, generation),
                    message_handler=self._on_message,
                    logging_callback=self._on_log,
                    sampling_callback=self._on_sampling,
                    elicitation_callback=self._on_elicitation,
                    list_roots_callback=self._on_list_roots,
                    log_level=_LOG_LEVEL,
                    read_timeout_seconds=self.start_timeout,
                    mode=self.protocol_mode,
                    client_info=types.Implementation(name="codingcode-jupyter", version="0.1.0"),
                )
                try:
                    async with asyncio.timeout(self.start_timeout) as deadline:
                        self._start_deadline = deadline
                        await stack.enter_async_context(client)
                        await self._learn(client)
                except TimeoutError:
                    raise McpCallError(f"did not answer within {self.start_timeout:g} s") from None
                finally:
                    self._start_deadline = None
                self._client = client
                self.state, self.error, self._ran = "running", None, True
                ready.set()
                self._host.server_changed(self, "state")
                async with asyncio.TaskGroup() as group:
                    helpers = [group.create_task(self._refresh_on_change(client))]
                    if client.protocol_version in MODERN_PROTOCOL_VERSIONS:
                        helpers.append(group.create_task(self._listen(client, generation)))
                    # Woken by stop() or by a lost connection; either way the session closes here,
                    # in the task that opened it.
                    await wake.wait()
                    for helper in helpers:
                        helper.cancel()
        except BaseException as error:  # noqa: BLE001 - every failure becomes a status
            if isinstance(error, asyncio.CancelledError) and self._stopping:
                return
            if not self._stopping and generation == self._generation:
                self._fail(self._describe(error), generation)
        finally:
            if generation == self._generation:
                self._client = None
            ready.set()

    def _describe(self, error: BaseException) -> str:
        error = _innermost(error)
        if isinstance(error, MCPError):
            message = error.error.message
            http = self._http_errors.describe()
            if http and message in ("Server returned an error response", "Not Found"):
                return http
            return message
        if isinstance(error, McpCallError):
            return str(error)
        if isinstance(error, httpx2.HTTPStatusError):
            return f"HTTP {error.response.status_code} {error.response.reason_phrase} from {error.request.url}"
        text = str(error)
        return f"{type(error).__name__}: {text}" if text else type(error).__name__

    def _fail(self, message: str, generation: int | None = None) -> None:
        generation = self._generation if generation is None else generation
        if self.state == "failed" and self._failed_generation == generation:
            return  # the same failure seen twice (the call's error and the closed stream)
        self._failed_generation = generation
        self.state, self.error = "failed", message
        self._failure_unreported = self._ran
        self._client = None
        self._wake.set()
        log.warning("MCP server %s failed: %s", self.name, message)
        self._host.server_changed(self, "state")

    def _closed_by_server(self, generation: int) -> None:
        if not self._stopping and generation == self._generation:
            self._fail("the server exited or closed the connection" + self._log_hint(), generation)

    # -- what the server offers ------------------------------------------------------------

    async def _learn(self, client: Client) -> None:
        self.capabilities = client.server_capabilities
        self.protocol_version = client.protocol_version
        self.tools, self.skipped_tools = await list_tools(client)
        self.prompts = await self._optional("listing prompts", list_prompts(client), [])
        self.resources = await self._optional("listing resources", list_resources(client, self._optional), [])
        if self.capabilities.logging is not None and client.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            # Handshake-era servers send log messages only after logging/setLevel; on the 2026
            # protocol the opt-in rides on every request (Client(log_level=...)).
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                await self._optional("setting the log level", client.set_logging_level(_LOG_LEVEL), None)

    async def _optional(self, what: str, work: Awaitable[_T], fallback: _T) -> _T:
        """An optional method: a server without it (or failing it) is still a healthy server."""
        try:
            return await work
        except (MCPError, ValueError) as error:
            log.info("MCP server %s: %s failed: %s", self.name, what, self._describe(error))
            self.log.add("warning", "codingcode", f"{what} failed: {self._describe(error)}")
            return fallback

    async def _on_message(self, message: Any) -> None:
        # Never list from inside the handler: it runs on the session's receive loop.
        if isinstance(message, types.ToolListChangedNotification):
            self._mark("tools")
        elif isinstance(message, types.PromptListChangedNotification):
            self._mark("prompts")
        elif isinstance(message, types.ResourceListChangedNotification):
            self._mark("resources")
        elif isinstance(message, Exception):
            log.debug("MCP server %s: transport error: %s", self.name, message)
        await asyncio.sleep(0)

    def _mark(self, what: str) -> None:
        self._dirty.add(what)
        self._dirty_event.set()

    async def _refresh_on_change(self, client: Client) -> None:
        while True:
            await self._dirty_event.wait()
            self._dirty_event.clear()
            dirty, self._dirty = self._dirty, set()
            try:
                if "tools" in dirty:
                    self.tools, self.skipped_tools = await list_tools(client)
                    self.on_tools_changed()
                    self._host.server_changed(self, "tools")
                if "prompts" in dirty:
                    self.prompts = await self._optional("listing prompts", list_prompts(client), self.prompts)
                    self._host.server_changed(self, "prompts")
                if "resources" in dirty:
                    self.resources = await self._optional("listing resources", list_resources(client, self._optional), self.resources)
                    self._host.server_changed(self, "resources")
            except Exception as error:
                log.warning("MCP server %s: refreshing its lists failed: %s", self.name, self._describe(error))

    async def _listen(self, client: Client, generation: int) -> None:
        # On the 2026 protocol, change notifications flow only while a listen stream is open,
        # and only for the lists the server says can change.
        caps = client.server_capabilities
        tools = bool(caps.tools and caps.tools.list_changed)
        prompts = bool(caps.prompts and caps.prompts.list_changed)
        resources = bool(caps.resources and caps.resources.list_changed)
        if not (tools or prompts or resources):
            return
        try:
            subscription = client.listen(tools_list_changed=tools, prompts_list_changed=prompts,
                                         resources_list_changed=resources)
            stream = await subscription.__aenter__()
        except asyncio.CancelledError:
            raise
        except Exception as error:
            # Declared but not served: change notifications are an extra, not a reason to fail.
            self.log.add("warning", "codingcode", f"subscribing to list changes failed: {self._describe(error)}")
            return
        lost: BaseException | None = None
        try:
            async for event in stream:
                kind = type(event).__name__.lower()
                self._mark("prompts" if "prompt" in kind else "resources" if "resource" in kind else "tools")
        except asyncio.CancelledError:
            raise
        except Exception as error:
            lost = error
        finally:
            try:
                await subscription.__aexit__(None, None, None)
            except Exception:
                pass
        if not self._stopping and generation == self._generation:
            self._fail(f"connection lost: {self._describe(lost)}" if lost else "connection closed by the server", generation)

    # -- what the server asks of us ----------------------------------------------------------

    def _origin(self) -> CallOrigin | None:
        # The server's request names no call; the latest one in flight is the likeliest cause.
        return self._origins[-1] if self._origins else None

    async def _on_log(self, params: types.LoggingMessageNotificationParams) -> None:
        entry = self.log.add(params.level, params.logger, params.data)
        self._host.server_logged(self, entry, self._origin())

    async def _on_list_roots(self, context: Any) -> types.ListRootsResult:
        roots = [types.Root(uri=FileUrl(path.resolve().as_uri()), name=path.name or str(path)) for path in self._host.roots(self)]
        return types.ListRootsResult(roots=roots)

    async def _on_sampling(self, context: Any, params: types.CreateMessageRequestParams) -> Any:
        request = sampling_request(self.name, params, self._origin())
        try:
            with self._clocks.person_waiting():
                result = await self._host.sample(request)
        except SamplingDeclined as declined:
            return types.ErrorData(code=_USER_REJECTED, message=str(declined))
        return result_for_server(result)

    async def _on_elicitation(self, context: Any, params: Any) -> types.ElicitResult:
        origin = self._origin()
        where = _Where(tool_use_id=origin.tool_use_id, agent=origin.agent, session_id=origin.session_id,
                       turn_id=origin.turn_id) if origin else _Where()
        if isinstance(params, types.ElicitRequestURLParams):
            request = ElicitationRequest(server=self.name, message=params.message, mode="url", url=params.url,
                                         elicitation_id=params.elicitation_id, **where)
        else:
            try:
                fields = parse_form(params.requested_schema)
            except ElicitationSchemaError as error:
                self.log.add("warning", "codingcode", f"declined an elicitation this client cannot show: {error}")
                return types.ElicitResult(action="decline")
            request = ElicitationRequest(server=self.name, message=params.message, fields=fields, **where)
        with self._clocks.person_waiting():
            response = await self._host.elicit(request)
        if response.action != "accept":
            return types.ElicitResult(action=response.action)
        if request.mode == "url":
            return types.ElicitResult(action="accept")
        content, problems = check_answer(request.fields, response.content or {})
        if problems:
            # The front validates; an answer that still does not fit is not sent as if it did.
            self.log.add("warning", "codingcode", "declined an answer that does not fit the form: " + "; ".join(problems))
            return types.ElicitResult(action="decline")
        return types.ElicitResult(action="accept", content=content)

    # -- calls -------------------------------------------------------------------------

    async def _ensure_running(self) -> Client:
        if self.state == "refused" and self._host.policy_refusal(self) is not None:
            raise McpCallError(f"MCP server {self.name!r} is not started: {self.error}")
        if self.state == "untrusted" and self._host.refusal(self) is not None:
            raise McpCallError(f"MCP server {self.name!r} is not started: {self.error}")
        if self.state == "needs_login":
            pending = self.login
            where = f": open {pending.url}" if pending else ""
            raise McpCallError(f"MCP server {self.name!r} needs the user to log in first{where} "
                               f"(or %agent mcp login {self.name})")
        if self.state == "failed":
            if not self._ran:
                raise McpCallError(f"MCP server {self.name!r} is not running: {self.error or 'not started'}; "
                                   f"`%agent mcp restart {self.name}` tries again")
            if self._failure_unreported:
                # It exited between calls: say so once, and start it again for the next call.
                self._failure_unreported = False
                self.restarts += 1
                why = self.error or "it exited"  # taken before _spawn() clears it for the new start
                self._spawn()
                raise McpCallError(f"MCP server {self.name!r} stopped ({why}); it is being restarted, "
                                   "so call the tool again (state it kept in memory is gone)")
            self.restarts += 1
        if self.state != "running":
            await self.start()
        client = self._client
        if self.state != "running" or client is None:
            raise McpCallError(f"MCP server {self.name!r} is not running: {self.error or 'not started'}")
        return client

    @asynccontextmanager
    async def _request(self, what: str, origin: CallOrigin | None) -> AsyncIterator[Client]:
        client = await self._ensure_running()
        async with self._calls:
            if origin is not None:
                self._origins.append(origin)
            try:
                async with self._clocks.limit(self.timeout):
                    yield client
            except TimeoutError:
                raise McpCallError(f"{self.name}:{what} timed out after {self.timeout:g} s") from None
            except MCPError as error:
                if error.code == REQUEST_TIMEOUT:
                    raise McpCallError(f"{self.name}:{what} timed out after {self.timeout:g} s") from None
                if error.code == CONNECTION_CLOSED:
                    self._fail("the server exited or closed the connection" + self._log_hint())
                    self._failure_unreported = False  # this error tells the caller
                    raise McpCallError(
                        f"MCP server {self.name!r} crashed or closed the connection during {what}; "
                        "it will be restarted on the next call" + self._log_hint()
                    ) from None
                raise McpCallError(f"{self.name}:{what} failed: {self._describe(error)}") from None
            except (OSError, httpx2.HTTPError, EOFError) as error:
                self._fail(self._describe(error))
                self._failure_unreported = False
                raise McpCallError(
                    f"MCP server {self.name!r} is unreachable: {self._describe(error)}; it will be retried on the next call"
                ) from None
            finally:
                if origin is not None and origin in self._origins:
                    self._origins.remove(origin)

    async def call(self, tool: str, arguments: dict[str, Any], origin: CallOrigin | None = None) -> types.CallToolResult:
        """Call a tool; McpCallError with a clear message if no result can be had.

        A progress token goes with every call; the server's progress reaches ``origin``'s cell.
        """

        # The parameters are named as the SDK's ProgressFnT names them.
        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            if origin is not None:
                origin.emit(origin.stamp(McpProgress(
                    tool_use_id=origin.tool_use_id, server=self.name, progress=progress, total=total, message=message,
                    text=_progress_text(progress, total, message))))

        async with self._request(tool, origin) as client:
            result = await client.call_tool(tool, arguments, read_timeout_seconds=_NO_SDK_TIMEOUT, progress_callback=on_progress)
        if not self.links_seen and any(isinstance(item, types.ResourceLink) for item in result.content):
            self.links_seen = True
            self._host.server_changed(self, "resources")
        return result

    async def read_resource(self, uri: str, origin: CallOrigin | None = None) -> types.ReadResourceResult:
        async with self._request(f"read {uri}", origin) as client:
            return await client.read_resource(uri, cache_mode="refresh")

    async def refresh_resources(self) -> list[ResourceInfo]:
        async with self._request("list resources", None) as client:
            self.resources = await list_resources(client, self._optional)
        return self.resources

    async def get_prompt(self, name: str, arguments: dict[str, str]) -> types.GetPromptResult:
        async with self._request(f"prompt {name}", None) as client:
            return await client.get_prompt(name, arguments or None)

    def _log_hint(self) -> str:
        return f" (its stderr is in {self.log_path})" if self.log_path and self.transport == "stdio" else ""


# -- the connection's owner ------------------------------------------------------------------------
# What a connection hands on to whoever owns it (the manager): the server's requests, its log, its
# changes. A connection made on its own (tests, scripts) has a LoneHost, with nobody to ask.

Change = Literal["state", "tools", "prompts", "resources", "login"]


class ConnectionHost(Protocol):
    """What a connection hands on: the server's requests, its log, and changes of its state."""

    async def sample(self, request: SamplingRequest) -> SamplingResult: ...

    async def elicit(self, request: ElicitationRequest) -> ElicitationResponse: ...

    def roots(self, server: "ServerConnection | None" = None) -> list[Path]: ...

    def server_logged(self, server: ServerConnection, entry: LogEntry, origin: CallOrigin | None) -> None: ...

    def server_changed(self, server: ServerConnection, change: Change) -> None: ...

    def refusal(self, server: ServerConnection) -> str | None:
        """Why the server may not start (a project's server the person has not trusted), or None."""
        ...

    def project_env(self) -> dict[str, str]:
        """Variables the project's settings set for its servers (their own ``env`` wins)."""
        ...

    def policy_refusal(self, server: ServerConnection) -> str | None:
        """Why the MCP policy (allowedMcpServers, deniedMcpServers, managed-mcp.json) refuses it, or None."""
        ...


class LoneHost:
    """The host of a connection made on its own (tests, scripts): nobody to ask."""

    def __init__(self, project: Path) -> None:
        self.project = project

    async def sample(self, request: SamplingRequest) -> SamplingResult:
        raise SamplingDeclined("this client has nobody to approve sampling")

    async def elicit(self, request: ElicitationRequest) -> ElicitationResponse:
        return ElicitationResponse.decline("nobody can be asked")

    def roots(self, server: "ServerConnection | None" = None) -> list[Path]:
        return [self.project]

    def server_logged(self, server: ServerConnection, entry: LogEntry, origin: CallOrigin | None) -> None:
        pass

    def server_changed(self, server: ServerConnection, change: Change) -> None:
        pass

    def refusal(self, server: ServerConnection) -> str | None:
        return None

    def policy_refusal(self, server: ServerConnection) -> str | None:
        return None

    def project_env(self) -> dict[str, str]:
        return {}
