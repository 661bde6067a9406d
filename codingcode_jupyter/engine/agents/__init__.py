"""Agent profiles and sub-agents: who an agent is, and dispatch_agent to run one for another."""

from .dispatch import (
    DispatchEnv,
    dispatch_agent_tool,
    profile_resolver,
    profile_system_prompt,
)
from .profiles import (
    AgentProfile,
    ProfileCatalog,
    ProfileError,
    builtin_profiles,
    load_profiles,
)

__all__ = [
    "AgentProfile",
    "DispatchEnv",
    "ProfileCatalog",
    "ProfileError",
    "builtin_profiles",
    "dispatch_agent_tool",
    "load_profiles",
    "profile_resolver",
    "profile_system_prompt",
]
