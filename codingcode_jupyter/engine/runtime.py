"""Assembling a working session: tools, resolver, approval pipeline, sandbox, MCP, prompt.

This is the one place that knows every engine part; the notebook front (and the console,
and tests) ask it for a :class:`~.session.Session` and never wire parts themselves.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from .agents.setup import main_agent_setup
from .approval.audit import AuditLog
from .approval.pipeline import ApprovalPipeline
from .approval.rules import RuleError, parse_rule
from .checkpoints import CheckpointStore
from .context.compaction import attach_compactor, compact
from .mcp.manager import McpManager
from .sandbox import CommandSandbox
from .session import Session, Transcript, sessions_dir
from .settings import PermissionMode, Settings, load_settings
from .state import SessionState
from .tools.builtin import builtin_tools
from .tools.registry import ToolRegistry
from .tools.resolver import SessionToolResolver, ToolVisibilityPolicy

__all__ = ["global_registry", "merged_settings", "SessionParts", "open_session", "compact"]

_REGISTRY: ToolRegistry | None = None


def global_registry() -> ToolRegistry:
    """The process's tools: the built-ins, then custom tools registered from cells."""
    global _REGISTRY
    if _REGISTRY is None:
        _REGISTRY = ToolRegistry(builtin_tools())
    return _REGISTRY


def _deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _deep_merge(out[key], value)
        elif isinstance(value, list) and isinstance(out.get(key), list):
            out[key] = out[key] + [v for v in value if v not in out[key]]
        else:
            out[key] = value
    return out


def merged_settings(project: Path) -> Settings:
    """Project settings with the local file layered on top (lists are unioned)."""
    merged: dict[str, Any] = {}
    for settings in load_settings(project).values():
        merged = _deep_merge(merged, settings.model_dump(exclude_unset=True))
    return Settings.model_validate(merged)


def allowed_env_files(settings: Settings) -> list[str]:
    """The `.env` files a person allowed with a rule (``read_file(.env.example)``).

    The sandbox hides every other `.env*` file of the project from commands.
    """
    allowed = []
    for text in settings.permissions.allow:
        try:
            rule = parse_rule(text)
        except RuleError:
            continue  # the settings loader reports bad rules; this only reads good ones
        if rule.tool == "read_file" and rule.pattern:
            pattern = rule.pattern.replace("\\", "")
            if pattern.rsplit("/", 1)[-1].startswith(".env"):
                allowed.append(pattern)
    return allowed


def _network_auditor(project: Path) -> Callable[[Any], None]:
    """Each connection a sandboxed command asked the allowlist proxy for, in the audit log."""
    audit = AuditLog(project)

    def record(decision: Any) -> None:
        audit.append({"event": "network", "method": decision.method, "host": decision.host,
                      "port": decision.port, "decision": "allow" if decision.allowed else "deny",
                      "by": "sandbox.network.allowedDomains"})

    return record


@dataclass
class SessionParts:
    """The long-lived parts a session runs with, kept so the front can show and change them."""

    settings: Settings
    registry: ToolRegistry
    resolver: SessionToolResolver
    pipeline: ApprovalPipeline
    sandbox: CommandSandbox
    mcp: McpManager
    started: bool = False
    extra: dict[str, Any] = field(default_factory=dict)

    async def start(self) -> None:
        """Start what needs the event loop: MCP servers, in the background (nobody waits for them)."""
        if not self.started:
            self.started = True
            self.mcp.start_background()

    async def aclose(self) -> None:
        await self.mcp.aclose()
        await self.sandbox.aclose()


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

    ``agent_profile`` runs the main agent under that profile (``%%agent --agent NAME``): its
    prompt, tools, model and step limit; an unusable profile raises ProfileError.
    """
    project = Path(project).resolve()
    if resume:
        if not session_id or not (sessions_dir(project) / f"{session_id}.jsonl").exists():
            raise FileNotFoundError(f"No saved session '{session_id}' in {sessions_dir(project)}")
    settings = merged_settings(project)
    registry = registry or global_registry()
    state = SessionState()
    sandbox = CommandSandbox.create(project, settings.sandbox, allowed_env_files=allowed_env_files(settings))
    sandbox.on_network = _network_auditor(project)
    mcp = McpManager(project, log_dir=project / ".codingcode" / "logs", sandbox=sandbox)
    # All at once, as the session opens (when an event loop runs; else SessionParts.start does it).
    mcp.start_background()
    agent = main_agent_setup(
        project, settings=settings, registry=registry, state=state, mcp=mcp, policy=policy,
        agent_profile=agent_profile, model=model, mode=mode,
    )
    resolver = agent.resolver
    # The pipeline reads the settings' defaultMode itself when no mode is given.
    pipeline = ApprovalPipeline(project, mode=agent.mode, approval_timeout=approval_timeout)
    parts = SessionParts(settings, registry, resolver, pipeline, sandbox, mcp)
    parts.extra["agent_profile"] = agent.profile
    services = {
        "settings": settings, "sandbox": sandbox, "mcp": mcp, "registry": registry, "parts": parts,
        "dispatch": agent.dispatch,
        # File tools snapshot what a turn changes here, for `%agent undo`.
        "checkpoints": CheckpointStore(project),
    }

    kwargs: dict[str, Any] = dict(
        project=project, tools=resolver, approver=pipeline, model_name=agent.model, system=agent.system,
        state=state, services=services, max_steps=agent.max_steps,
    )
    if session_id:
        kwargs["id"] = session_id
    session = Session(**kwargs)
    # What is sent is kept inside the window; `%agent compact` calls context.compact(session).
    attach_compactor(session, settings.contextWindow)
    if resume:
        session.load()
    if sandbox.enabled and not sandbox.active:
        # Said once, at the session's first turn; the pipeline then asks for every command.
        session.pending_notices.append(f"Command sandbox {sandbox.describe()}")
    return session, parts


def session_header(project: Path, session_id: str) -> dict[str, Any]:
    records = Transcript(sessions_dir(project) / f"{session_id}.jsonl").records()
    return next((r for r in records if r.get("type") == "session"), {})
