"""Assembling a working session: tools, resolver, approval pipeline, sandbox, MCP, prompt.

This is the one place that knows every engine part; the notebook front (and the console,
and tests) ask it for a :class:`~.session.Session` and never wire parts themselves.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import threading
from dataclasses import dataclass, field
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from .agents.dispatch import dispatch_agent_tool
from .agents.profiles import AgentProfile
from .agents.setup import main_agent_setup
from .approval.audit import AuditLog
from .approval.pipeline import ApprovalPipeline
from .checkpoints import CheckpointStore
from .context import compact, keep_in_window
from .deps import SessionDeps
from .mcp.config import CONFIG_FILE as MCP_CONFIG_FILE
from .mcp.manager import McpManager
from .mcp.startup import StartupWait, startup_wait
from .project_settings import ProjectSettings, preload as preload_settings
from .sandbox import CommandSandbox, probe_bwrap
from .session import Session, new_session_id, sessions_dir
from .settings import PermissionMode, SandboxSettings, SettingsError
from .state import SessionState
from .tools.builtin import builtin_tools
from .tools.registry import ToolRegistry
from .tools.resolver import SessionToolResolver, ToolVisibilityPolicy
from .tools.tool_search import make_tool_search
from .trust import TrustItem, record_trust

if TYPE_CHECKING:
    from .project_settings import EffectiveSettings
    from .sandbox.proxy import ProxyDecision

__all__ = ["global_registry", "SessionParts", "open_session", "compact", "warm_up", "start_servers_early",
           "close_early_servers"]

_REGISTRY: ToolRegistry | None = None
# warm_up() may build the registry on another thread while a cell registers a custom tool.
_REGISTRY_LOCK = threading.Lock()


def global_registry() -> ToolRegistry:
    """The process's tools: the built-ins, then custom tools registered from cells."""
    global _REGISTRY
    if _REGISTRY is None:
        with _REGISTRY_LOCK:
            if _REGISTRY is None:
                _REGISTRY = ToolRegistry(builtin_tools())
    return _REGISTRY


# Imported on first use by a session and its first turn: where the settings files are, the
# prompt's hooks, the instruction files of the system prompt.
_FIRST_TURN_MODULES = ("claude.files", "hooks.lifecycle", "claude.instructions", "config_files", "commands", "skills")


def warm_up(project: Path | str | None = None) -> None:
    """Do ahead, on any thread, what the first session of the process would: build the built-in
    tools' schemas (and those of the tools each session makes), probe bubblewrap (a subprocess;
    both are kept for the process), import what its first turn imports, read ``project``'s settings
    for its first session. Not the MCP client: :func:`start_servers_early` loads it, for a
    project that configures servers."""
    global_registry()
    # Tools each session makes anew: their schemas are built once, here.
    dispatch_agent_tool()
    make_tool_search(list)
    import_module("concurrent.futures.thread")  # asyncio.to_thread's pool, which the session's start uses
    for name in _FIRST_TURN_MODULES:
        import_module(f"{__package__}.{name}")
    path = shutil.which("bwrap")
    if path is not None:
        probe_bwrap(path)
    if project is not None:
        try:
            preload_settings(project)
        except (SettingsError, OSError):
            pass  # the session that opens there says what is wrong with the file


# The project's first snapshot starts this long after the model's first answer arrived: its
# first text is shown at once, the next update one display interval (50 ms) later, and the
# snapshot's git processes in between would hold that first text back.
AFTER_FIRST_ANSWER_S = 0.05


# -- MCP servers started before the first session (the notebook's background loading) ----------

# By project: the parts a session there will be opened with, their servers already starting.
_EARLY: dict[Path, SessionDeps] = {}
_EARLY_LOCK = threading.Lock()


def start_servers_early(project: Path | str, loop: asyncio.AbstractEventLoop) -> bool:
    """Start ``project``'s MCP servers on ``loop`` now, for the first session opened there.

    Called on any thread but ``loop``'s (the notebook's background loading): the MCP client is
    imported here, off the event loop; the servers are spawned (or connected) on it. What the
    person has not trusted does not start (the manager asks the settings, as a session's does),
    and starts once they trust the project. False when there is nothing to start (no
    ``.mcp.json``, a settings file that the session will report as broken).
    """
    project = Path(project).resolve()
    if not (project / MCP_CONFIG_FILE).is_file() or loop.is_closed():
        return False
    settings = ProjectSettings(project)
    try:
        settings.current()
    except (SettingsError, OSError):
        return False  # the session that opens there says what is wrong
    import_module(f"{__package__}.mcp.client")
    deps = _session_deps(project, settings, global_registry())
    with _EARLY_LOCK:
        if project in _EARLY:
            return False
        _EARLY[project] = deps
    assert deps.mcp is not None
    loop.call_soon_threadsafe(deps.mcp.start_background)
    return True


def _take_early(project: Path) -> SessionDeps | None:
    with _EARLY_LOCK:
        return _EARLY.pop(project, None)


async def close_early_servers() -> None:
    """Stop the servers started early that no session took (``%unload_ext``)."""
    with _EARLY_LOCK:
        left = list(_EARLY.values())
        _EARLY.clear()
    for deps in left:
        if deps.mcp is not None:
            await deps.mcp.aclose()
        await deps.aclose()


def _startup_wait(settings: ProjectSettings) -> Callable[[], StartupWait]:
    """The bound a turn waits for servers still starting, as the settings say now (see mcp.startup)."""

    def bound() -> StartupWait:
        try:
            merged = settings.current().merged
        except SettingsError:
            return startup_wait(None, {}, os.environ)
        return startup_wait(merged.mcpStartupWaitSeconds, merged.env, os.environ)

    return bound


def _session_deps(project: Path, settings: ProjectSettings, registry: ToolRegistry) -> SessionDeps:
    """The parts of a session in ``project``, its MCP manager made (not started)."""
    deps = SessionDeps(project=project, settings=settings, registry=registry, sandbox_factory=_sandbox_factory(project),
                       checkpoints=CheckpointStore(project))
    deps.mcp = McpManager(project, log_dir=project / ".codingcode" / "logs", sandbox=deps.sandbox,
                          admit=_server_admission(settings), env=lambda: dict(settings.current().merged.env),
                          wait=_startup_wait(settings))
    return deps


def _network_auditor(project: Path) -> Callable[["ProxyDecision"], None]:
    """Each connection a sandboxed command asked the allowlist proxy for, in the audit log."""
    audit = AuditLog(project)

    def record(decision: "ProxyDecision") -> None:
        audit.append({"event": "network", "method": decision.method, "host": decision.host,
                      "port": decision.port, "decision": "allow" if decision.allowed else "deny",
                      "by": "sandbox.network.allowedDomains"})

    return record


def _sandbox_factory(project: Path) -> Callable[[SandboxSettings, list[str]], CommandSandbox]:
    on_network = _network_auditor(project)

    def make(settings: SandboxSettings, allowed_env_files: list[str]) -> CommandSandbox:
        sandbox = CommandSandbox.create(project, settings, allowed_env_files=allowed_env_files)
        sandbox.on_network = on_network
        return sandbox

    return make


def _ignored_summary(effective: "EffectiveSettings") -> list[str]:
    """One line at the first turn when the settings hold what has no effect here (doctor lists it)."""
    count = len(effective.ignored_settings)
    if not count:
        return []
    files = sorted({str(entry.path) for entry in effective.ignored_settings})
    return [f"{count} setting(s) in {', '.join(files)} have no effect here; %agent doctor lists each with the reason."]


def _server_admission(settings: ProjectSettings) -> Callable[[str], str | None]:
    """A project's MCP server starts only once the person trusted it (as written in .mcp.json)."""

    def refusal(name: str) -> str | None:
        try:
            untrusted = settings.current().untrusted_servers
        except SettingsError as error:
            return f"the settings cannot be read ({error})"
        if name in untrusted:
            return "the project's .mcp.json is not trusted yet (%agent trust shows what it asks for)"
        return None

    return refusal


@dataclass
class SessionParts:
    """The long-lived parts a session runs with, kept so the front can show and change them."""

    deps: SessionDeps
    resolver: SessionToolResolver
    pipeline: ApprovalPipeline
    profile: AgentProfile | None = None
    started: bool = False
    # Fingerprints the person answered "Not now" to in this kernel session.
    declined: set[str] = field(default_factory=set)
    # The session these parts run, for its SessionEnd hooks.
    session_id: str = ""
    _warming: "asyncio.Future[None] | None" = field(default=None, init=False, repr=False)
    _warm_timer: "asyncio.TimerHandle | None" = field(default=None, init=False, repr=False)

    @property
    def settings(self) -> ProjectSettings:
        return self.deps.settings

    @property
    def mcp(self) -> McpManager:
        assert self.deps.mcp is not None
        return self.deps.mcp

    def sandbox(self) -> CommandSandbox:
        sandbox = self.deps.sandbox()
        assert sandbox is not None
        return sandbox

    # -- trust ---------------------------------------------------------------------------

    def pending_trust(self) -> list[TrustItem]:
        """What the project's files ask for that is not trusted (so ignored), not yet declined here."""
        return [item for item in self.settings.current().ignored if item.fingerprint not in self.declined]

    def trust(self, items: list[TrustItem] | None = None, *, by: str = "user", session_id: str = "") -> list[TrustItem]:
        """Trust ``items`` (default: all pending), remembered per content, and audit it."""
        granted = self.settings.trust(items if items is not None else self.pending_trust())
        if granted:
            record_trust(self.deps.project, "trust", granted, by=by, session_id=session_id)
            if any(item.kind == "mcp" for item in granted):
                self.mcp.start_background()  # the servers just trusted start now
        return granted

    def decline(self, *, by: str = "user", session_id: str = "") -> list[TrustItem]:
        """"Not now": the session runs untrusted and is not asked again until ``%agent trust``."""
        pending = self.pending_trust()
        self.declined.update(item.fingerprint for item in pending)
        if pending:
            record_trust(self.deps.project, "not now", pending, by=by, session_id=session_id)
        return pending

    def revoke_trust(self, *, by: str = "user", session_id: str = "") -> None:
        """Forget every trust decision about the project (asked again at the next cell)."""
        trusted = [item for item in self.settings.current().items if item not in self.settings.current().ignored]
        self.settings.revoke()
        self.declined.clear()
        record_trust(self.deps.project, "revoke", trusted, by=by, session_id=session_id)

    async def start(self) -> None:
        """Ask for what needs the event loop: MCP servers, in the background (a turn waits for
        them briefly, see mcp.startup)."""
        if not self.started:
            self.started = True
            self.mcp.start_background()

    def first_answer(self) -> None:
        """The model answered for the first time: the project's first snapshot, which waited so as
        not to compete with its first request, starts (see :data:`AFTER_FIRST_ANSWER_S`)."""
        if self.deps.checkpoints is not None and self._warm_timer is None:
            # The first snapshot of a project takes seconds when it is big (git processes, a worker
            # thread): taken now, the turn's own snapshot before its first edit is quick.
            self._warm_timer = asyncio.get_running_loop().call_later(AFTER_FIRST_ANSWER_S, self._warm)

    def _warm(self) -> None:
        if self.deps.checkpoints is not None:
            self._warming = asyncio.ensure_future(asyncio.to_thread(self.deps.checkpoints.warm))

    async def aclose(self, reason: str = "other") -> None:
        """Close the session: its SessionEnd hooks (``reason``: "clear" for a new session, else "other"), its parts."""
        try:
            if self.session_id:
                await self.deps.hooks.session_end(session_id=self.session_id, reason=reason)
        finally:
            if self._warm_timer is not None:
                self._warm_timer.cancel()
            if self._warming is not None:
                await asyncio.gather(self._warming, return_exceptions=True)
            await self.mcp.aclose()
            await self.deps.aclose()


def open_session(
    project: Path | str,
    *,
    session_id: str | None = None,
    resume: bool = False,
    model: str | None = None,
    mode: PermissionMode | None = None,
    approval_timeout: float | None = None,
    registry: ToolRegistry | None = None,
    policy: ToolVisibilityPolicy | None = None,
    agent_profile: str | None = None,
) -> tuple[Session, SessionParts]:
    """A new session in ``project`` (or the saved one ``session_id`` when ``resume``).

    ``mode`` is the session's own permission mode (None: the settings'); ``agent_profile``
    runs the main agent under that profile (``%%agent --agent NAME``): its prompt, tools,
    model and step limit, its mode tightening every turn's; an unusable profile raises
    ProfileError, a broken settings file SettingsError.
    """
    project = Path(project).resolve()
    if resume:
        if not session_id or not (sessions_dir(project) / f"{session_id}.jsonl").exists():
            raise FileNotFoundError(f"No saved session '{session_id}' in {sessions_dir(project)}")
    registry = registry or global_registry()
    # The first session in the project takes the parts whose servers the loading started.
    deps = _take_early(project)
    if deps is not None:
        deps.registry = registry
        settings = deps.settings
    else:
        settings = ProjectSettings(project)
    effective = settings.current()  # a broken file is an error now, not at the first call
    if deps is None:
        deps = _session_deps(project, settings, registry)
    state = SessionState()
    sandbox = deps.sandbox()
    assert deps.mcp is not None
    # All at once, now (when an event loop runs; else SessionParts.start asks); started early, a no-op.
    deps.mcp.start_background()
    agent = main_agent_setup(project, registry=registry, state=state, mcp=deps.mcp, policy=policy,
                             agent_profile=agent_profile, model=model, settings=settings)
    deps.dispatch = agent.dispatch
    pipeline = ApprovalPipeline(project, settings=settings)
    profile = agent.profile
    session = Session(
        deps=deps, tools=agent.resolver, approver=pipeline, id=session_id or new_session_id(),
        model_name=agent.model, system=agent.system, state=state, max_steps=agent.max_steps, mode=mode,
        approval_timeout=approval_timeout, profile_mode=profile.permission_mode if profile else None,
        profile_name=profile.name if profile else None, profile_mode_trusted=bool(profile and profile.mode_trusted),
    )
    keep_in_window(session)
    if resume:
        session.load()
    if sandbox is not None and sandbox.enabled and not sandbox.active:
        # Said once, at the session's first turn; the first command that would run unconfined then
        # brings the session's one card (approval/unconfined.py).
        session.pending_notices.append(f"Command sandbox {sandbox.describe()}")
    elif sandbox is not None and sandbox.active and sandbox.backend == "landlock":
        # Said once: the weaker of the two backends is in force, and why (%agent doctor lists its limits).
        session.pending_notices.append(f"Command sandbox {sandbox.describe()} (%agent doctor: what it does not cover)")
    session.pending_notices.extend(effective.warnings)
    session.pending_notices.extend(_ignored_summary(effective))
    parts = SessionParts(deps, agent.resolver, pipeline, profile, session_id=session.id)
    session.on_first_answer.append(parts.first_answer)
    return session, parts
