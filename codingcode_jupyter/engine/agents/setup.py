"""The main agent of a session, plain or under a profile (``%%agent --agent NAME``).

``open_session`` calls :func:`main_agent_setup` once; what it returns is everything about
the main agent that a profile can change — its tools, its system prompt (which lists the
sub-agents it may dispatch), its model, its step limit — plus the :class:`DispatchEnv` that dispatch_agent reads from
the session's deps. The profile's permission mode tightens every turn's mode
(``modes.decide_mode``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from ..state import SessionState
from ..tools.registry import ToolRegistry
from ..tools.resolver import SessionToolResolver, ToolVisibilityPolicy
from .dispatch import profile_resolver, profile_system_prompt
from .env import DispatchEnv
from .profiles import AgentProfile, ProfileCatalog, load_profiles

if TYPE_CHECKING:
    from ..mcp.manager import McpManager
    from ..project_settings import ProjectSettings
    from ..tools.base import ToolDefinition

__all__ = ["AgentSetup", "main_agent_setup", "DEFAULT_MAIN_STEPS"]

DEFAULT_MAIN_STEPS = 100


@dataclass
class AgentSetup:
    """What the session's main agent runs with."""

    profile: AgentProfile | None
    resolver: SessionToolResolver
    dispatch: DispatchEnv
    system: Callable[[], str]
    # None: let the session pick (the configured or default model).
    model: str | None
    max_steps: int


def _skill_tools(project: Path, home: Path | None, settings: "ProjectSettings | None") -> list["ToolDefinition"]:
    """load_skill, when the person, the project or a plugin has a skill (a session without any is not
    offered it; a plugin enabled but not trusted yet counts, its skills arrive once it is)."""
    from ..skills import load_skills
    from ..tools.skill import load_skill_tool

    plugins = settings.active_plugins if settings is not None else tuple
    try:
        named = bool(settings is not None and settings.current().plugins.plugins)
    except ValueError:
        named = False
    has = named or bool(load_skills(project, home, plugins()).skills)
    return [load_skill_tool(project, home, plugins)] if has else []


def main_agent_setup(
    project: Path,
    *,
    registry: ToolRegistry,
    state: SessionState,
    mcp: "McpManager | None" = None,
    policy: ToolVisibilityPolicy | None = None,
    agent_profile: str | None = None,
    model: str | None = None,
    home: Path | None = None,
    settings: "ProjectSettings | None" = None,
) -> AgentSetup:
    """The main agent's setup; ProfileError (naming file and field) when ``agent_profile`` is unusable.

    ``settings`` says which project profiles' modes are trusted (None: none is).
    """

    plugins = settings.active_plugins if settings is not None else tuple

    def catalog() -> ProfileCatalog:
        untrusted = settings.current().untrusted_profile_modes if settings is not None else None
        return load_profiles(project, home=home, untrusted_modes=untrusted, plugins=plugins())

    profile = catalog().get(agent_profile) if agent_profile else None
    dispatch = DispatchEnv(project=project, registry=registry, catalog=catalog, mcp=mcp, policy=policy,
                           plugins=plugins)
    can_dispatch = bool(dispatch.dispatchable(catalog(), 0, profile))
    resolver = profile_resolver(registry, profile, state=state, mcp=mcp, policy=policy, can_dispatch=can_dispatch,
                                more_tools=_skill_tools(project, home, settings))

    def system() -> str:
        # Reloaded each turn: a profile file added mid-session is listed from the next turn.
        return profile_system_prompt(project, profile, dispatch.dispatchable(catalog(), 0, profile), plugins=plugins())

    return AgentSetup(
        profile=profile,
        resolver=resolver,
        dispatch=dispatch,
        system=system,
        model=model or (profile.model if profile else None),
        max_steps=(profile.max_steps if profile and profile.max_steps else DEFAULT_MAIN_STEPS),
    )
