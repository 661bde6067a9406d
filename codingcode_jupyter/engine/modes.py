"""The permission mode of a turn, decided in one place.

In order, the first that says something wins: the cell's ``--mode``; the session's own mode
(``%agent mode NAME``, or the notebook's ``CodingCode.mode``); the settings files'
``permissions.defaultMode`` (the more specific file wins); ``default``. An agent profile's
``permission_mode`` then tightens that mode, never loosens it: a profile file comes with
the project and must not switch approval off.
"""

from __future__ import annotations

from dataclasses import dataclass

from .project_settings import EffectiveSettings
from .settings import PermissionMode, stricter_mode

__all__ = ["ModeChoice", "decide_mode"]


@dataclass(frozen=True)
class ModeChoice:
    """The mode, and which setting decided it (for ``%agent status`` and the audit log)."""

    mode: PermissionMode
    source: str


def decide_mode(
    *,
    cell: PermissionMode | None = None,
    session: PermissionMode | None = None,
    settings: EffectiveSettings | None = None,
    profile: PermissionMode | None = None,
    profile_name: str | None = None,
) -> ModeChoice:
    """The turn's permission mode (see the module docstring for the order)."""
    if cell is not None:
        choice = ModeChoice(cell, "the cell's --mode")
    elif session is not None:
        choice = ModeChoice(session, "the session (%agent mode)")
    elif settings is not None and settings.default_mode is not None:
        choice = ModeChoice(settings.default_mode, settings.source_path(settings.default_mode_source or ""))
    else:
        choice = ModeChoice("default", "the default")
    tightened = stricter_mode(choice.mode, profile)
    if tightened != choice.mode:
        return ModeChoice(tightened, f"profile {profile_name}" if profile_name else "the agent profile")
    return choice
