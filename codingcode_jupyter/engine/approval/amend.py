"""Amending the settings from an answer: "Always allow" and "Never allow" save rules here.

The rules go to ``permissions.allow`` / ``permissions.deny`` of ``.codingcode/settings.local.json``
(the person's own, untracked file): deduplicated, written atomically, under a lock so two
kernels answering at once do not lose a rule. A file that cannot be read is never overwritten.
"""

from __future__ import annotations

import fcntl
import json
from pathlib import Path
from typing import Any, Callable, Literal

from ..atomic import atomic_write
from ..settings import SettingsError, settings_paths

__all__ = ["persist_rules", "amend_settings", "persist_plugin", "PLUGIN_SCOPES"]

# Where `%agent plugins enable --scope S` writes: the person's own file, the project's shared one, or its local one.
PLUGIN_SCOPES = {"user": "user", "project": "project", "local": "local"}


def persist_rules(project: Path, action: Literal["allow", "deny"], rules: list[str]) -> Path:
    """Add ``rules`` to ``permissions.<action>`` of settings.local.json: deduplicated, atomic, locked."""

    def change(data: dict[str, Any]) -> None:
        permissions = data.setdefault("permissions", {})
        if not isinstance(permissions, dict):
            raise SettingsError("entry 'permissions' must be an object, not overwriting it")
        entries = permissions.setdefault(action, [])
        for rule in rules:
            if rule not in entries:
                entries.append(rule)

    return amend_settings(dict(settings_paths(Path(project)))["local"], change)


def persist_plugin(project: Path, key: str, enabled: bool, scope: str = "user") -> Path:
    """Set ``enabledPlugins.<key>`` to ``enabled`` in the settings file of ``scope`` (user, project, local)."""

    def change(data: dict[str, Any]) -> None:
        plugins = data.setdefault("enabledPlugins", {})
        if not isinstance(plugins, dict):
            raise SettingsError("entry 'enabledPlugins' must be an object, not overwriting it")
        plugins[key] = enabled

    return amend_settings(dict(settings_paths(Path(project)))[PLUGIN_SCOPES[scope]], change)


def amend_settings(path: Path, change: Callable[[dict[str, Any]], None]) -> Path:
    """Apply ``change`` to the JSON object in ``path`` under a lock, written atomically; a file that
    cannot be read (or whose shape ``change`` refuses, with a SettingsError) is never overwritten."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lock_path = path.with_name(path.name + ".lock")
    with open(lock_path, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        data: dict[str, Any] = {}
        if path.exists():
            text = path.read_text(encoding="utf-8")
            try:
                data = json.loads(text) if text.strip() else {}
            except json.JSONDecodeError as error:
                raise SettingsError(f"{path}: not valid JSON (line {error.lineno}), not overwriting it") from None
            if not isinstance(data, dict):
                raise SettingsError(f"{path}: the top level must be a JSON object, not overwriting it")
        try:
            change(data)
        except SettingsError as error:
            raise SettingsError(f"{path}: {error}") from None
        atomic_write(path, (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode())
    return path
