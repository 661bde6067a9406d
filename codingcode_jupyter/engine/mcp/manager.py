"""The MCP servers of a session: known from ``.mcp.json`` at once, started in the background,
added and removed at will, their tools offered as :class:`ToolDefinition` s.

Servers start all at once, as early as can be: in a notebook with the session's loading
after ``%load_ext`` (see ``runtime.start_servers_early``), elsewhere when the session opens;
the MCP client is imported off the event loop (a worker thread, or the loading's thread). A
turn's request waits for the servers still starting, up to a bound (:mod:`.startup`; a line
in the cell names them), so the tools the person configured are in the model's first
request; a server not ready by then joins when it is (the model is told in its next request,
the person by a notice). A server that fails to start, crashes or times out never stops the
session: its status says what happened and a call to it returns a clear ``is_error`` result.

The manager is the connections' host: what servers ask of the client — a message from the
model (sampling), input from the person (elicitation), the roots — is answered here, by
callbacks the session and the front provide (``sampler``, ``elicitor``, :meth:`attach_front`).
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import time
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from pydantic import BaseModel

from ..deadline import within
from ..events import McpLog, McpLoginRequired, McpServerChanged, McpWaiting, Notice
from ..later import defer
from ..tools.base import ToolDefinition
from .common import McpCallError, default_token_dir
from .config import (
    CONFIG_FILE,
    HttpServerConfig,
    McpConfigError,
    SseServerConfig,
    StdioServerConfig,
    expansion_environ,
    load_mcp_config_partial,
    parse_server,
    read_mcp_file,
)
from .elicitation import ElicitationRequest, ElicitationResponse, Elicitor
from .naming import assign_wire_names, display_name
from .origin import CallOrigin
from .policy import McpPolicy
from .prompts import PromptError, check_arguments, parse_invocation, prompt_content
from .resources import LIST_TOOL, READ_TOOL, resource_tools
from .sampling import Sampler, SamplingRequest, SamplingResult, TurnSampler
from .server_log import LogEntry, is_alarming
from .startup import StartupWait, startup_wait
from .status import ServerStatus, describe_log, describe_status, describe_tools
from .tool_defs import argument_directories, tool_definition

if TYPE_CHECKING:
    from ..front import Front
    from ..messages import ContentBlockParam

    # The client half imports the mcp SDK: it is loaded when a server is first registered.
    from .client import ServerConnection

__all__ = ["McpManager", "ServerStatus"]

log = logging.getLogger(__name__)

# The module that imports the mcp SDK (see _connection).
_CLIENT = f"{__package__}.client"
_VALIDATION = "jsonschema.validators"

AnyConfig = StdioServerConfig | HttpServerConfig | SseServerConfig
# A plugin's server as the settings give it: (session name, entry as written, its file, the plugin's variables).
PluginServerEntry = tuple[str, dict[str, Any], str, dict[str, str]]
# Events kept for a front that is not attached yet; older ones are dropped.
_MAX_PENDING = 50
# A turn's wait shorter than this gets no line in the cell (nobody would notice the wait).
QUIET_WAIT_S = 0.1


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
        sampler: Sampler | None = None,
        elicitor: Elicitor | None = None,
        token_dir: Path | None = None,
        admit: Callable[[str], str | None] | None = None,
        env: Callable[[], dict[str, str]] | None = None,
        wait: Callable[[], StartupWait] | None = None,
        plugin_servers: Callable[[], list[PluginServerEntry]] | None = None,
        policy: Callable[[], McpPolicy] | None = None,
    ) -> None:
        self.project = Path(project)
        self.sandbox = sandbox
        # Why a server of the project's .mcp.json may not start yet (not trusted), or None.
        self.admit = admit
        self._env = env
        # The servers of the plugins that apply: (name, entry, file, the plugin's variables); read with .mcp.json.
        self._plugin_servers = plugin_servers
        self._plugin_names: set[str] = set()
        # Which servers the organisation's policy (or the person's deny list) lets start, as it is now.
        self._policy = policy
        # The servers the policy refuses (never connections: nothing of them runs), each with why.
        self._refused: dict[str, str] = {}
        # The servers of managed-mcp.json, and those of them whose entry names a variable.
        self._managed_names: set[str] = set()
        self._managed_variables: set[str] = set()
        self._stopping: set[asyncio.Task[Any]] = set()
        # How long a turn waits for servers still starting (the settings', see .startup).
        self._wait = wait or (lambda: startup_wait(None, {}, os.environ))
        # Servers the person added themselves (`%agent mcp add`): theirs, so never refused.
        self._added: set[str] = set()
        self.log_dir = Path(log_dir) if log_dir is not None else self.project / ".codingcode" / "logs"
        self.call_timeout = call_timeout
        self.max_concurrency = max_concurrency
        self.start_timeout = start_timeout
        self.token_dir = Path(token_dir) if token_dir is not None else default_token_dir()
        # Answers a server's sampling request; by default the turn's own model, after asking.
        self.sampler: Sampler = sampler or TurnSampler(self.project)
        # Answers a server's request for input; None: the attached front's, else declined.
        self.elicitor: Elicitor | None = elicitor
        # Wire names MCP tools must not take (the built-ins'), asked for at naming time.
        self._name_providers: list[Callable[[], set[str]]] = [reserved_names] if reserved_names else []
        self._servers: dict[str, ServerConnection] = {}
        # .mcp.json as read (without the SDK), and whether its servers became connections.
        self._configs: dict[str, AnyConfig] = {}
        self._config_errors: dict[str, str] = {}
        self._config_loaded = False
        self._connected = False
        # start_background() was asked for (the servers of .mcp.json are wanted running).
        self._start_asked = False
        # Servers a turn stopped waiting for, with the start (started_at; None: before it began)
        # it gave up on: the next turns do not wait for that start again.
        self._gave_up: dict[str, float | None] = {}
        self._wait_problem_told = False
        self._changed: asyncio.Event | None = None
        self._loading: asyncio.Future[None] | None = None
        self._validation_asked = False
        self._front: Front | None = None
        self._pending: list[Notice] = []
        # What the model was last told about each server ("starting", "running", "failed").
        self._told: dict[str, str] = {}
        self._notes: list[str] = []
        # Bumped whenever the set of tools may have changed; a cheap "look again" signal.
        self.tools_version = 0

    # -- configuration -----------------------------------------------------------------

    def load_config(self) -> dict[str, AnyConfig]:
        """Read ``.mcp.json`` and register its usable servers (not started).

        Raises McpConfigError naming every unusable entry, after registering the good ones;
        the errors also show in :meth:`status`.
        """
        self._read_config()
        self._connected = True
        for name, config in self._configs.items():
            if name not in self._servers:
                self._servers[name] = self._connection(name, config)
        if self._config_errors:
            raise McpConfigError("\n".join(self._config_errors.values()))
        return dict(self._configs)

    def _read_config(self) -> None:
        """``.mcp.json`` and the plugins' servers into ``_configs`` and ``_config_errors``; needs no
        part of the mcp SDK."""
        self._config_loaded = True
        self._config_errors.clear()
        try:
            configs, errors = load_mcp_config_partial(self.project)
        except McpConfigError as error:
            configs, errors = {}, {CONFIG_FILE: str(error)}
        self._configs = configs
        self._config_errors.update(errors)
        self._plugin_names = set()
        for name, raw, where, variables in self._plugin_servers() if self._plugin_servers is not None else []:
            entry = {**raw, "env": {**variables, **(raw.get("env") or {})}} if "url" not in raw else raw
            try:
                self._configs[name] = parse_server(name, entry, environ={**expansion_environ(self.project), **variables},
                                                   source=where, notes=[])
                self._plugin_names.add(name)
            except McpConfigError as error:
                self._config_errors[name] = str(error)
        self._apply_policy()

    def _policy_now(self) -> McpPolicy | str:
        """The policy in force, or why it cannot be known (then no server starts: it might be refused)."""
        if self._policy is None:
            return McpPolicy()
        try:
            return self._policy()
        except ValueError as error:
            return f"not started: the settings cannot be read ({error})"

    def _apply_policy(self) -> None:
        """Leave out of ``_configs`` the servers the policy refuses (kept in ``_refused`` with why); with a
        managed-mcp.json, its servers replace every other."""
        policy = self._policy_now()
        self._refused = {}
        self._managed_names, self._managed_variables = set(), set()
        if isinstance(policy, str):
            self._refused = dict.fromkeys(self._configs, policy)
            self._configs, self._plugin_names = {}, set()
            return
        if policy.exclusive:
            others, self._configs = self._configs, {}
            self._config_errors.clear()
            for path in policy.managed_files:  # Claude Code's first: ours wins a name both use
                try:
                    managed = read_mcp_file(path, self.project)
                except McpConfigError as error:
                    self._config_errors[str(path)] = str(error)
                    continue
                self._configs.update(managed.servers)
                self._config_errors.update({f"{path}: {name}": error for name, error in managed.errors.items()})
                self._managed_names |= set(managed.servers)
                self._managed_variables |= managed.uses_variables
            self._refused = {name: policy.refusal(name, config) or "" for name, config in others.items()
                             if name not in self._configs}
        for name, config in list(self._configs.items()):
            why = policy.refusal(name, config, from_managed_file=name in self._managed_names,
                                 uses_variables=name in self._managed_variables)
            if why is not None:
                self._refused[name] = why
                del self._configs[name]
        self._plugin_names &= set(self._configs)

    def policy_refusal(self, server: ServerConnection) -> str | None:
        """Why the policy, as it is now, refuses ``server`` (at each start and restart), or None."""
        return self._policy_refusal(server.name, server.config)

    def _policy_refusal(self, name: str, config: AnyConfig) -> str | None:
        policy = self._policy_now()
        if isinstance(policy, str):
            return policy
        return policy.refusal(name, config, from_managed_file=name in self._managed_names,
                              uses_variables=name in self._managed_variables)

    def refused(self) -> list[str]:
        """One line per server the policy refuses (``%agent mcp``, the session's first notices)."""
        self._configured()
        return [f"MCP server {name} is not started: {why}" for name, why in sorted(self._refused.items())]

    def refresh_plugins(self) -> None:
        """Read the plugins' servers again (a plugin enabled, disabled or trusted mid-session): new ones are
        added (and started, when servers were asked to start), those gone are stopped."""
        before = set(self._plugin_names)
        self._read_config()
        if not self._connected:
            return
        for name in sorted(self._plugin_names - set(self._servers)):
            self._servers[name] = self._connection(name, self._configs[name])
            if self._start_asked and _CLIENT in sys.modules:
                self._servers[name].start_background()
        for name in sorted(before - self._plugin_names):
            server = self._servers.pop(name, None)
            if server is not None:
                self._background_stop(server)
        self._tools_changed()

    def _background_stop(self, server: "ServerConnection") -> None:
        try:
            task = asyncio.get_running_loop().create_task(server.stop())
        except RuntimeError:
            return
        self._stopping.add(task)
        task.add_done_callback(self._stopping.discard)

    def _ensure_config(self) -> None:
        # Reading .mcp.json starts nothing, so status can list servers before any cell ran.
        if not self._connected:
            try:
                self.load_config()
            except McpConfigError:
                pass  # recorded for status(); the valid servers still count

    def _configured(self) -> list[str]:
        """The names of the servers, known without making connections (so without the SDK)."""
        if self._connected:
            return sorted(self._servers)
        if not self._config_loaded:
            self._read_config()
        return sorted(set(self._servers) | set(self._configs))

    def _connection(self, name: str, config: AnyConfig) -> ServerConnection:
        from .client import ServerConnection

        return ServerConnection(
            name=name,
            config=config,
            project=self.project,
            log_path=self.log_dir / f"mcp-{name}.log",
            call_timeout=self.call_timeout,
            # A turn that waits longer than the start timeout (MCP_TIMEOUT=60000) must not see it fail first.
            start_timeout=max(self.start_timeout, self._wait().seconds),
            max_concurrency=self.max_concurrency,
            on_tools_changed=self._tools_changed,
            sandbox=self.sandbox,
            host=self,
            token_dir=self.token_dir,
        )

    def reserve_names(self, provider: Callable[[], set[str]]) -> None:
        """Add a source of wire names MCP tools must not take (a resolver's built-ins)."""
        if provider not in self._name_providers:
            self._name_providers.append(provider)

    def _reserved(self) -> set[str]:
        names: set[str] = {LIST_TOOL, READ_TOOL}
        for provider in self._name_providers:
            names |= provider()
        return names

    def _tools_changed(self) -> None:
        self.tools_version += 1
        if self._changed is not None:
            self._changed.set()  # a turn waiting for servers looks again

    # -- lifecycle ---------------------------------------------------------------------

    async def start(self) -> None:
        """Start every configured server at once and wait for each to answer or fail."""
        self._start_asked = True
        await self._client_loaded()
        self._ensure_config()
        await asyncio.gather(*(server.start() for server in self._servers.values() if server.state != "running"))
        self._tools_changed()

    def start_background(self) -> bool:
        """Start every configured server at once without waiting; False when no event loop runs."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return False
        self._start_asked = True
        if _CLIENT in sys.modules:
            self._start_connections()
        elif self._configured() and (self._loading is None or self._loading.done()):
            self._loading = asyncio.ensure_future(self._load_then_start())
        return True

    async def start_now(self) -> None:
        """Start every server now without waiting for them (their client loaded off the loop)."""
        self._start_asked = True
        await self._client_loaded()
        self._start_connections()

    def _start_connections(self) -> None:
        self._ensure_config()
        for server in self._servers.values():
            if server.state in ("stopped", "untrusted", "refused"):  # a failed one is restarted by a call or %agent mcp restart
                server.start_background()

    async def _client_loaded(self) -> None:
        # On a worker thread: imports are thread-safe, and the event loop (the cell's stream,
        # its widgets) keeps running meanwhile instead of stopping for the SDK's ~0.8 s.
        if _CLIENT not in sys.modules:
            await asyncio.to_thread(import_module, _CLIENT)

    def _warm_validation(self) -> None:
        # The SDK checks a structured result with jsonschema, imported at the first such result:
        # 1 to 2 s of CPU (it builds its URI parsers) that would freeze that call's cell. Loaded
        # ahead once a running server has a tool with an output schema, but as later work: on a
        # thread beside the kernel's loading it took the interpreter from the SDK's import, and a
        # first cell 2 s after %load_ext waited 2 to 3 times as long for it.
        if _VALIDATION in sys.modules or self._validation_asked:
            return
        self._validation_asked = True
        defer("jsonschema", lambda: import_module(_VALIDATION))

    async def _load_then_start(self) -> None:
        try:
            await self._client_loaded()
        except Exception as error:  # noqa: BLE001 -- a broken install must not end the session
            log.exception("the MCP client cannot be loaded")
            self._config_errors["mcp client"] = f"the MCP client cannot be loaded: {type(error).__name__}: {error}"
            self._show(Notice(text=f"MCP servers cannot start: {self._config_errors['mcp client']}"))
            return
        self._start_connections()

    async def wait_ready(self, timeout: float | None = None) -> None:
        """Start what was asked for and wait until no server is starting (tests, scripts)."""
        async def settled() -> None:
            if self._loading is not None:
                await self._loading
            while any(s.state == "starting" for s in self._servers.values()):
                await asyncio.sleep(0.05)

        await within(settled(), timeout)

    # -- a turn's wait -----------------------------------------------------------------

    def _still_starting(self) -> list[str]:
        """The non-deferred servers whose tools a request could soon carry, not given up on."""
        names: list[str] = []
        if self._loading is not None and not self._loading.done():
            # The client is loading: every server of .mcp.json that may start is on its way.
            for name, config in self._configs.items():
                if name not in self._gave_up and not config.deferred and self._refusal(name) is None:
                    names.append(name)
        for name, server in self._servers.items():
            if server.state != "starting" or server.config.deferred or name in names:
                continue
            if name in self._gave_up and self._gave_up[name] in (None, server.started_at):
                continue
            names.append(name)
        return sorted(names)

    async def wait_for_starting(self, show: Callable[[Notice], None]) -> list[str]:
        """Before a turn's request: wait for the servers still starting, up to the bound (:mod:`.startup`).

        A wait that lasts is shown (``show``) as a line naming the servers; one not ready by the
        bound is said so, and is not waited for again (it joins the turn when it is ready). A
        server that failed is not waited for: its notice is already in the cell. Returns the
        servers the request goes without.
        """
        bound = self._wait()
        if bound.problem and not self._wait_problem_told:
            self._wait_problem_told = True
            show(Notice(text=bound.problem))
        waiting = self._still_starting()
        if not waiting:
            return []
        loop = asyncio.get_running_loop()
        began = loop.time()
        deadline = began + bound.seconds
        self._changed = self._changed or asyncio.Event()
        shown = False
        try:
            while waiting and loop.time() < deadline:
                if not shown and loop.time() - began >= QUIET_WAIT_S:
                    shown = True
                    names = ", ".join(waiting)
                    show(McpWaiting(servers=waiting, seconds=bound.seconds,
                                    text=f"Waiting for MCP server{'s' if len(waiting) > 1 else ''} {names} to start "
                                         f"(up to {bound.seconds:g} s, {_source(bound)})…"))
                self._changed.clear()
                pause = min(deadline - loop.time(), QUIET_WAIT_S if not shown else 0.5)
                try:
                    await within(self._changed.wait(), max(pause, 0))
                except asyncio.TimeoutError:
                    pass
                waiting = self._still_starting()
        finally:
            self._changed = None
        for name in waiting:
            server = self._servers.get(name)
            self._gave_up[name] = server.started_at if server is not None else None
        if waiting:
            names = ", ".join(waiting)
            show(McpWaiting(servers=waiting, seconds=bound.seconds, done=True,
                            text=f"MCP server{'s' if len(waiting) > 1 else ''} {names} not ready after "
                                 f"{bound.seconds:g} s: the request goes without {'their' if len(waiting) > 1 else 'its'} "
                                 f"tools, which join when ready."))
        return waiting

    async def add(self, name: str, config: dict[str, Any] | AnyConfig) -> ServerStatus:
        """Add (or replace) a server for this session and start it; McpConfigError if the entry is invalid."""
        parsed = config if isinstance(config, BaseModel) else parse_server(name, config, source="%agent mcp add")
        self._ensure_config()
        why = self._policy_refusal(name, parsed)
        if why is not None:
            raise McpConfigError(f"cannot add MCP server {name!r}: {why}")
        if name in self._servers:
            await self.remove(name)
        self._added.add(name)
        server = self._servers[name] = self._connection(name, parsed)
        await server.start()
        self._tools_changed()
        return self._status(server)

    async def remove(self, name: str) -> bool:
        """Stop and forget a server; False if there was none by that name."""
        self._ensure_config()
        server = self._servers.pop(name, None)
        if server is None:
            return False
        await server.stop()
        self._told.pop(name, None)
        self._tools_changed()
        return True

    async def restart(self, name: str) -> ServerStatus:
        """Stop and start one server, waiting for the outcome; KeyError if unknown."""
        server = self._get(name)
        await server.restart()
        self._tools_changed()
        return self._status(server)

    def complete_login(self, name: str, address: str) -> None:
        """Finish a waiting OAuth login with the address the browser ended on (LoginError if it is not that)."""
        self._get(name).complete_login(address)

    async def aclose(self) -> None:
        """Stop every server."""
        await asyncio.gather(*(server.stop() for server in self._servers.values()), return_exceptions=True)

    def project_env(self) -> dict[str, str]:
        """The settings' ``env``, as they are now, for the servers this manager starts."""
        return dict(self._env()) if self._env is not None else {}

    def refusal(self, server: ServerConnection) -> str | None:
        """Why ``server`` may not start: a project server the person has not trusted (see ``admit``)."""
        return self._refusal(server.name)

    def _refusal(self, name: str) -> str | None:
        # The organisation's servers are not the project's: no trust is asked for them.
        if name in self._added or name in self._managed_names or self.admit is None:
            return None
        return self.admit(name)

    def _get(self, name: str) -> ServerConnection:
        self._ensure_config()
        server = self._servers.get(name)
        if server is None:
            known = ", ".join(sorted(self._servers)) or "none"
            raise KeyError(f"no MCP server named {name!r} (configured: {known})")
        return server

    # -- the front ---------------------------------------------------------------------

    def attach_front(self, front: Front) -> None:
        """Events outside any tool call (a server became ready, needs a login) go to this cell from now on.

        What happened while no front was attached is shown in it first.
        """
        self._front = front
        pending, self._pending = self._pending, []
        for event in pending:
            self._show(event)

    def detach_front(self, front: Front) -> None:
        if self._front is front:
            self._front = None

    def take_events(self) -> list[Notice]:
        """The events kept for a front, cleared (a front that shows them another way)."""
        pending, self._pending = self._pending, []
        return pending

    def _show(self, event: Notice, origin: CallOrigin | None = None) -> None:
        if origin is not None:
            origin.emit(origin.stamp(event))
            return
        front = self._front
        if front is not None:
            try:
                front(event)
                return
            except Exception:
                pass  # a broken front must not lose the notice
        self._pending = (self._pending + [event])[-_MAX_PENDING:]

    def take_model_notes(self) -> list[str]:
        """Lines for the model's next prompt: servers still starting, ready since, or failed.

        The tools block already changes when a server's tools join; these lines say why,
        so the model neither gives up on a tool that is on its way nor calls a dead one.
        """
        notes, self._notes = self._notes, []
        for name in self._configured():
            server = self._servers.get(name)
            told = self._told.get(name)
            if server is None:  # not a connection yet: its client is loading
                wanted = self._start_asked or self._loading is not None
                state = "stopped" if not wanted else "untrusted" if self._refusal(name) else "starting"
            else:
                state = "starting" if server.state == "needs_login" else server.state
            if state == told or state == "stopped":
                continue
            if state == "starting":
                notes.append(f"(Note: MCP server {name} is still starting; its tools will be offered when it is ready.)")
            elif state == "running" and told is not None and server is not None:
                names = ", ".join(display_name(name, tool.name) for tool in server.tools[:20])
                notes.append(f"(Note: MCP server {name} is now running; its tools are offered: {names or 'none'}.)")
            elif state == "failed" and server is not None:
                notes.append(f"(Note: MCP server {name} is not running: {server.error}.)")
            self._told[name] = state
        return notes

    # -- the host of the connections ------------------------------------------------------

    async def sample(self, request: SamplingRequest) -> SamplingResult:
        return await self.sampler(request)

    async def elicit(self, request: ElicitationRequest) -> ElicitationResponse:
        if self.elicitor is not None:
            return await self.elicitor(request)
        if self._front is not None:
            return await self._front.elicit(request)
        self._show(Notice(text=f"Declined MCP server {request.server}'s request for input "
                               f"({request.message!r}): nobody can answer it here."))
        return ElicitationResponse.decline("no front to ask in")

    def roots(self, server: ServerConnection | None = None) -> list[Path]:
        """What a server may work in: the project, and the directories its own ``.mcp.json``
        arguments name (a filesystem server's roots replace its arguments, so these would be lost)."""
        roots = [self.project.resolve()]
        if server is not None:
            roots += [path for path in argument_directories(server.config, self.project) if path not in roots]
        return roots

    def server_logged(self, server: ServerConnection, entry: LogEntry, origin: CallOrigin | None) -> None:
        if is_alarming(entry.level):
            self._show(McpLog(text=f"MCP server {server.name} ({entry.level}): {entry.text}", server=server.name,
                              level=entry.level, logger=entry.logger), origin)

    def server_changed(self, server: ServerConnection, change: str) -> None:
        self._tools_changed()
        if self._servers.get(server.name) is not server:
            return  # a removed or replaced server's last words
        if change == "login" and server.login is not None:
            login = server.login
            self._show(McpLoginRequired(
                server=server.name, url=login.url, redirect_uri=login.redirect_uri,
                text=f"MCP server {server.name} needs you to log in: open {login.url} . If the page you land on "
                     f"afterwards does not load (the browser runs elsewhere), copy its address into "
                     f"%agent mcp login {server.name} ADDRESS"))
        if server.state in ("running", "failed"):
            self._gave_up.pop(server.name, None)  # that start is over: a later one is waited for again
        if change == "state" and server.state == "running":
            if any(tool.has_output_schema for tool in server.tools):
                self._warm_validation()
            self._show(McpServerChanged(server=server.name, state="running", tool_count=len(server.tools),
                                        text=f"MCP server {server.name} is ready: {len(server.tools)} tool(s)."))
        elif change == "state" and server.state == "failed":
            self._show(McpServerChanged(server=server.name, state="failed",
                                        text=f"MCP server {server.name} is not running: {server.error}"))

    # -- what is known -----------------------------------------------------------------

    def servers(self) -> list[str]:
        """The configured server names, sorted."""
        return self._configured()

    def connection(self, name: str) -> ServerConnection | None:
        """The connection of one server (for status and tests)."""
        self._ensure_config()
        return self._servers.get(name)

    def resource_servers(self) -> list[ServerConnection]:
        return [self._servers[name] for name in sorted(self._servers) if self._servers[name].has_resources]

    def _status(self, server: ServerConnection) -> ServerStatus:
        started_at = server.started_at if server.state in ("starting", "needs_login") else None
        return ServerStatus(
            name=server.name,
            transport=server.transport,
            state=server.state,
            error=server.error,
            tool_count=len(server.tools),
            log_path=server.log_path if server.transport == "stdio" else None,
            deferred=server.config.deferred,
            tools=tuple(tool.name for tool in server.tools),
            prompts=tuple(prompt.usage(server.name) for prompt in server.prompts),
            resource_count=len(server.resources),
            skipped=tuple(server.skipped_tools),
            log_count=len(server.log),
            login_url=server.login.url if server.login else None,
            trust_annotations=server.config.trust_annotations,
            starting_for=time.monotonic() - started_at if started_at is not None else None,
            argument_roots=tuple(str(path) for path in self.roots(server)[1:]),
        )

    def status(self) -> list[ServerStatus]:
        """One line per server, sorted by name (plus a config error, if ``.mcp.json`` is invalid)."""
        self._ensure_config()
        statuses = [self._status(self._servers[name]) for name in sorted(self._servers)]
        for source, error in sorted(self._config_errors.items()):
            statuses.append(ServerStatus(source, "config", "failed", error, 0, None))
        for name, why in sorted(self._refused.items()):
            if name not in self._servers:
                statuses.append(ServerStatus(name, "policy", "refused", why, 0, None))
        return statuses

    def describe(self) -> str:
        """Plain text for ``%agent mcp``: each server, its state, its tools and prompts."""
        statuses = self.status()
        if not statuses:
            return f"no MCP servers (add them to {self.project / '.mcp.json'} or with %agent mcp add)"
        return "\n".join(self.describe_status(status) for status in statuses)

    def describe_status(self, status: ServerStatus) -> str:
        """The lines of one server in :meth:`describe`."""
        return describe_status(status, self.project)

    def describe_tools(self, name: str) -> str:
        """One server's tools with their annotations and whether approval counts them read-only."""
        return describe_tools(self._get(name))

    def describe_log(self, name: str, count: int = 50) -> str:
        return describe_log(self._get(name), count)

    # -- prompts ------------------------------------------------------------------------

    async def expand_prompt(self, text: str) -> "list[ContentBlockParam] | None":
        """The content of a request that starts with ``/server:prompt arg=value``; None if it does not.

        PromptError says what is wrong (no such server or prompt, a missing or unknown argument).
        """
        invocation = parse_invocation(text)
        if invocation is None:
            return None
        self._ensure_config()
        server = self._servers.get(invocation.server)
        if server is None:
            with_prompts = [s.name for s in self._servers.values() if s.prompts] or ["none"]
            raise PromptError(f"no MCP server named {invocation.server!r} (servers with prompts: {', '.join(with_prompts)})")
        if server.state in ("stopped", "starting"):
            await server.start()
        if server.state != "running":
            raise PromptError(f"MCP server {invocation.server!r} is not running: {server.error or server.state}")
        info = next((p for p in server.prompts if p.name == invocation.prompt), None)
        if info is None:
            names = ", ".join(p.usage(server.name) for p in server.prompts) or "none"
            raise PromptError(f"MCP server {invocation.server!r} has no prompt {invocation.prompt!r} (its prompts: {names})")
        arguments = check_arguments(server.name, info, invocation)
        try:
            result = await server.get_prompt(info.name, arguments)
        except McpCallError as error:
            raise PromptError(str(error)) from None
        return prompt_content(server.name, info.name, result, invocation.extra)

    # -- tools --------------------------------------------------------------------------

    def tools(self) -> list[ToolDefinition]:
        """The tools of every server whose tool list is known, sorted by server then tool,
        and the two resource tools while a running server has resources.

        A server that crashed keeps its last tool list, so the model's tools block does not
        flicker; a call to one of them says what happened and restarts the server.
        """
        pairs = [(server.name, tool.name) for server in self._servers.values() for tool in server.tools]
        names = assign_wire_names(pairs, reserved=self._reserved())
        definitions = resource_tools(self) if self.resource_servers() else []
        for server_name in sorted(self._servers):
            server = self._servers[server_name]
            for info in sorted(server.tools, key=lambda tool: tool.name):
                definitions.append(tool_definition(server, info, names[(server.name, info.name)]))
        return definitions


def _source(bound: StartupWait) -> str:
    """Where a wait's bound comes from, for the line that shows it."""
    if bound.source == "default":
        return "mcpStartupWaitSeconds in the settings changes it"
    return f"set by {bound.source}"


