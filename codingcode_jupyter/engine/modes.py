"""The permission mode of a turn, decided in one place.

In order, the first that says something wins: the cell's ``--mode``; the session's own mode
(``%agent mode NAME``, or the notebook's ``CodingCode.mode``); the settings files'
``permissions.defaultMode`` (the more specific file wins); ``default``. Bypass mode is
``default`` instead when a settings file sets ``permissions.disableBypassPermissionsMode``.
An agent profile's ``permission_mode`` then tightens that mode; it loosens it only when the
profile's mode is trusted (the person's own file, or a trusted project), and never past the
cell's own ``--mode``: a profile file that comes with a project must not switch approval off
on its own.
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
    profile_trusted: bool = False,
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
    locked = settings.bypass_disabled if settings is not None else None
    if choice.mode == "bypass" and locked:
        choice = ModeChoice("default", f"permissions.disableBypassPermissionsMode in {locked} (bypass is off)")
    # A trusted profile's mode replaces the session's and the settings', not what this cell asked for.
    if profile is not None and profile_trusted and cell is None and not (profile == "bypass" and locked):
        return ModeChoice(profile, f"profile {profile_name}" if profile_name else "the agent profile")
    tightened = stricter_mode(choice.mode, profile)
    if tightened != choice.mode:
        return ModeChoice(tightened, f"profile {profile_name}" if profile_name else "the agent profile")
    return choice
