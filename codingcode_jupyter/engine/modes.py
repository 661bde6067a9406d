"""The permission mode of a turn, decided in one place.

In order, the first that says something wins: the cell's ``--mode``; the session's own mode
(``%agent mode NAME``, or the notebook's ``CodingCode.mode``); the settings files'
``permissions.defaultMode`` (the more specific file wins); ``default``. Bypass mode is
``default`` instead when a settings file sets ``permissions.disableBypassPermissionsMode`` (auto
with ``permissions.disableAutoMode``), and no mode may be looser than the managed settings'
``permissions.defaultMode`` (:mod:`.managed`): a looser one becomes that one.
An agent profile's ``permission_mode`` then tightens that mode; it loosens it only when the
profile's mode is trusted (the person's own file, or a trusted project), and never past the
cell's own ``--mode``: a profile file that comes with a project must not switch approval off
on its own.
"""

from __future__ import annotations

from dataclasses import dataclass

from .project_settings import EffectiveSettings
from .settings import MODE_STRICTNESS, PermissionMode, stricter_mode

__all__ = ["ModeChoice", "decide_mode", "forbidden_mode"]


@dataclass(frozen=True)
class ModeChoice:
    """The mode, and which setting decided it (for ``%agent status`` and the audit log)."""

    mode: PermissionMode
    source: str


def forbidden_mode(settings: EffectiveSettings | None, mode: PermissionMode) -> str | None:
    """Why ``mode`` may not be used under these settings (a lock, the managed policy), or None."""
    if settings is None:
        return None
    if mode == "bypass" and settings.bypass_disabled:
        return f"bypass mode is off (permissions.disableBypassPermissionsMode in {settings.bypass_disabled})"
    if mode == "auto" and settings.auto_disabled:
        return f"auto mode is off (permissions.disableAutoMode in {settings.auto_disabled})"
    ceiling = settings.policy.mode_ceiling
    if ceiling is not None and MODE_STRICTNESS[mode] < MODE_STRICTNESS[ceiling]:
        return (f"{mode} mode is looser than your organisation's managed settings allow "
                f"(no looser than {ceiling}: permissions.defaultMode in {settings.policy.mode_file})")
    return None


def _held(choice: ModeChoice, settings: EffectiveSettings | None) -> ModeChoice:
    """``choice``, or what the locks and the policy leave of it: the policy's mode, else default."""
    why = forbidden_mode(settings, choice.mode)
    if why is None or settings is None:
        return choice
    ceiling = settings.policy.mode_ceiling
    fallback: PermissionMode = ceiling if ceiling is not None and forbidden_mode(settings, ceiling) is None else "default"
    return ModeChoice(fallback, why)


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
    choice = _held(choice, settings)
    # A trusted profile's mode replaces the session's and the settings', not what this cell asked for.
    if profile is not None and profile_trusted and cell is None and forbidden_mode(settings, profile) is None:
        return ModeChoice(profile, f"profile {profile_name}" if profile_name else "the agent profile")
    tightened = stricter_mode(choice.mode, profile)
    if tightened != choice.mode:
        return ModeChoice(tightened, f"profile {profile_name}" if profile_name else "the agent profile")
    return choice
