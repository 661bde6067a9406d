"""What dispatch_agent needs from the session that assembled it: the session's parts hold one
(:attr:`~..deps.SessionDeps.dispatch`); :mod:`.dispatch` runs the sub-agents with it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Sequence

from ..models import Model, make_model
from ..tools.registry import ToolRegistry
from ..tools.resolver import ToolVisibilityPolicy
from .profiles import AgentProfile, ProfileCatalog

if TYPE_CHECKING:
    from ..mcp.manager import McpManager
    from ..plugins.catalog import Plugin

__all__ = ["DispatchEnv", "MAX_DEPTH"]

# How deep sub-agents may nest: main → explore → plan.
MAX_DEPTH = 2


@dataclass
class DispatchEnv:
    """What dispatch_agent needs from the session that assembled it (``ctx.deps.dispatch``)."""

    project: Path
    registry: ToolRegistry
    # Loaded for every dispatch, so a profile file added or fixed mid-session is used at once.
    catalog: Callable[[], ProfileCatalog]
    mcp: "McpManager | None" = None
    policy: ToolVisibilityPolicy | None = None
    # Called with a model name; tests substitute a factory, the session uses make_model.
    model_factory: Callable[[str], Model] = make_model
    # Keep a JSONL transcript of every sub-agent's conversation next to the session's.
    keep_transcripts: bool = True
    # The plugins that apply now (their skills go into a sub-agent's prompt).
    plugins: Callable[[], Sequence["Plugin"]] = tuple
    _counters: dict[str, int] = field(default_factory=dict, init=False, repr=False)

    def child_name(self, parent: str, profile: str) -> str:
        """A session-unique label: ``main/explore#1``, ``main/explore#2``, ``main/plan#1/explore#1``."""
        key = f"{parent}/{profile}"
        self._counters[key] = self._counters.get(key, 0) + 1
        return f"{key}#{self._counters[key]}"

    def dispatchable(self, catalog: ProfileCatalog, depth: int, profile: AgentProfile | None) -> list[AgentProfile]:
        """The profiles an agent at ``depth`` under ``profile`` may dispatch (empty if none)."""
        if depth >= MAX_DEPTH:
            return []
        if profile is not None and profile.tools is not None:
            allowed = profile.allows_dispatch()
        else:
            # No tool list: the main agent gets every tool; a sub-agent must name dispatch_agent.
            allowed = depth == 0
        return catalog.available() if allowed else []
