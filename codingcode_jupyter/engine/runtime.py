"""Assembling a working session: tools, resolver, approval pipeline, sandbox, MCP, prompt.

This is the one place that knows every engine part; the notebook front (and the console,
and tests) ask it for a :class:`~.session.Session` and never wire parts themselves.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import threading
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from . import telemetry
from .agents.dispatch import dispatch_agent_tool
from .agents.setup import main_agent_setup
from .approval.audit import AuditLog
from .approval.audit_records import NetworkRecord
from .approval.pipeline import ApprovalPipeline
from .checkpoints import CheckpointStore
from .context.session_window import compact, keep_in_window
from .deps import SessionDeps
from .managed import apply_env
from .mcp.config import CONFIG_FILE as MCP_CONFIG_FILE
from .mcp.manager import McpManager, PluginServerEntry
from .mcp.startup import StartupWait, startup_wait
from .project_settings import ProjectSettings, preload as preload_settings
from .sandbox import CommandSandbox, probe_bwrap
from .secret_values import KnownSecrets
from .session import Session, new_session_id
from .settings import PermissionMode, SandboxSettings, SettingsError
from .state import SessionState
from .tools.builtin import global_registry
from .tools.registry import ToolRegistry
from .tools.resolver import ToolVisibilityPolicy
from .tools.tool_search import make_tool_search
from .transcript import sessions_dir

if TYPE_CHECKING:
    from .project_settings import EffectiveSettings
    from .sandbox.proxy import ProxyDecision

__all__ = ["open_session", "sandbox_factory", "compact", "warm_up", "start_servers_early",
           "close_early_servers"]

# Imported on first use by a session and its first turn: where the settings files are, the
# prompt's hooks, the instruction files of the system prompt.
_FIRST_TURN_MODULES = ("claude.files", "hooks.lifecycle", "claude.instructions", "config_files", "commands", "skills",
                       "tools.skill", "approval.unconfined_choice")


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
    deps = SessionDeps(project=project, settings=settings, registry=registry, sandbox_factory=sandbox_factory(project),
                       checkpoints=CheckpointStore(project))
    deps.mcp = McpManager(project, log_dir=project / ".codingcode" / "logs", sandbox=deps.sandbox,
                          admit=_server_admission(settings), env=lambda: dict(settings.current().merged.env),
                          wait=_startup_wait(settings), plugin_servers=_plugin_servers(settings),
                          policy=lambda: settings.current().mcp_policy)
    deps.secrets = KnownSecrets(deps.project, settings_env=lambda: settings.current().merged.env)
    deps.secrets.add_token_dir(deps.mcp.token_dir)
    return deps


def _plugin_servers(settings: ProjectSettings) -> Callable[[], list[PluginServerEntry]]:
    """The MCP servers of the plugins that apply now, named as Claude Code names them (``plugin_P_S``)."""

    def servers() -> list[PluginServerEntry]:
        from .plugins.catalog import plugin_environ, server_name

        out: list[PluginServerEntry] = []
        for plugin in settings.active_plugins():
            assert plugin.content is not None
            variables = plugin_environ(plugin)
            out.extend((server_name(plugin, server.name), server.config, str(server.path), variables)
                       for server in plugin.content.servers)
        return out

    return servers


def _network_auditor(project: Path) -> Callable[["ProxyDecision"], None]:
    """Each connection a sandboxed command asked the allowlist proxy for, in the audit log."""
    audit = AuditLog(project)

    def record(decision: "ProxyDecision") -> None:
        audit.append(NetworkRecord(method=decision.method, host=decision.host, port=decision.port,
                                   decision="allow" if decision.allowed else "deny", by="sandbox.network.allowedDomains"))

    return record


def sandbox_factory(project: Path) -> Callable[[SandboxSettings, list[str]], CommandSandbox]:
    """How a session in ``project`` makes its command sandbox, each connection its commands ask
    the allowlist proxy for audited. Public because ``python -m codingcode_jupyter`` (``permissions
    check``, ``sandbox check``) judges and probes with the sandbox a session there would use."""
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


def _skill_notices(project: Path) -> list[str]:
    """A project's skill named like one of the person's is not used: the person hears it at the first
    turn, not only from `%agent skills`, since a cloned repository may have put it there."""
    from .skills import load_skills

    return load_skills(project).notices


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
) -> Session:
    """A new session in ``project`` (or the saved one ``session_id`` when ``resume``), owning its parts
    (close it with :meth:`Session.aclose`).

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
    apply_env(effective.policy)  # the organisation's env before anything reads it (telemetry's session count)
    if deps is None:
        deps = _session_deps(project, settings, registry)
    state = SessionState()
    sandbox = deps.sandbox()
    assert deps.mcp is not None
    # All at once, now (when an event loop runs; else Session.start asks); started early, a no-op.
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
        profile=profile,
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
    session.shown_warnings.update(effective.warnings)
    session.pending_notices.extend(_ignored_summary(effective))
    session.pending_notices.extend(_skill_notices(project))
    # Told at once: a server the organisation refuses would otherwise just be missing.
    session.pending_notices.extend([*effective.mcp_policy.notes, *deps.mcp.refused()])
    session.on_first_answer.append(session.snapshot_soon)
    telemetry.session_started(session.id)
    return session
