"""Applying trust to a settings file: what is not trusted is taken out, and listed as ignored.

A file's loosening items (:mod:`.items`) apply only when the person trusted them; the rest
of the file — deny and ask rules, stricter modes, a stricter sandbox — always applies.
Screening works on what the file itself sets, so a value it does not set still comes from
a less specific file.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from ..settings import PermissionMode, Settings
from .items import TrustItem, settings_items

__all__ = ["Screened", "screen_settings"]


@dataclass(frozen=True)
class Screened:
    """A settings file with its untrusted loosening removed, and what was removed."""

    settings: Settings
    ignored: tuple[TrustItem, ...]
    items: tuple[TrustItem, ...]


def _drop(data: dict[str, Any], item: TrustItem) -> None:
    detail = item.detail
    if item.kind == "allow":
        allow = data.get("permissions", {}).get("allow", [])
        data["permissions"]["allow"] = [rule for rule in allow if rule != detail["rule"]]
    elif item.kind == "directory":
        permissions = data.get("permissions", {})
        permissions["additionalDirectories"] = [e for e in permissions.get("additionalDirectories", []) if e != detail["value"]]
    elif item.kind == "mode":
        owner = data.get("permissions", {}) if detail["key"] == "permissions.defaultMode" else data
        owner.pop("defaultMode", None)
    elif item.kind == "hook":
        for matcher in data.get("hooks", {}).get(detail["event"], []):
            if matcher.get("matcher", "*") == detail["matcher"]:
                matcher["hooks"] = [h for h in matcher.get("hooks", []) if not _same_hook(h, detail)]
    elif item.kind == "sandbox":
        sandbox = data.get("sandbox", {})
        if detail["key"] in ("enabled", "autoAllow", "confineKernelCode"):
            sandbox.pop(detail["key"], None)
        elif detail["key"] == "allowWrite":
            fs = sandbox.get("filesystem", {})
            fs["allowWrite"] = [e for e in fs.get("allowWrite", []) if e != detail["value"]]
        elif detail["key"] == "env":
            sandbox["env"] = [name for name in sandbox.get("env", []) if name != detail["value"]]
        elif detail["key"] == "allowedDomains":
            network = sandbox.get("network", {})
            network["allowedDomains"] = [d for d in network.get("allowedDomains") or [] if d != detail["value"]]
    elif item.kind == "env":
        data.get("env", {}).pop(detail["name"], None)
    elif item.kind == "webSearch":
        data.pop("webSearch", None)


def _same_hook(hook: dict[str, Any], detail: dict[str, Any]) -> bool:
    """Whether ``hook`` (as dumped) is the one a hook item names: same type and same command, URL or prompt."""
    kind = hook.get("type", "command")
    return kind == detail.get("type", "command") and all(
        hook.get(key, "") == detail.get(key, "") for key in ("command", "url", "prompt"))


def _tidy(data: dict[str, Any]) -> None:
    """Hook matchers left without commands, and an emptied domain list, are as if never written."""
    for event, matchers in list(data.get("hooks", {}).items()):
        data["hooks"][event] = [m for m in matchers if m.get("hooks")]
    network = data.get("sandbox", {}).get("network", {})
    if network.get("allowedDomains") == []:
        network.pop("allowedDomains")


def screen_settings(project: Path, source: str, path: Path, settings: Settings, trusted: Iterable[str],
                    floor: PermissionMode = "default", items: Iterable[TrustItem] | None = None) -> Screened:
    """``settings`` without the loosening items whose fingerprints are not in ``trusted``
    (``floor``: the mode a file may set untrusted, see :func:`.items.settings_items`;
    ``items``: those items, when the caller already listed them)."""
    trusted = set(trusted)
    items = tuple(settings_items(project, source, path, settings, floor) if items is None else items)
    ignored = tuple(item for item in items if item.fingerprint not in trusted)
    if not ignored:
        return Screened(settings, (), items)
    data = settings.model_dump(exclude_unset=True)
    for item in ignored:
        _drop(data, item)
    _tidy(data)
    return Screened(Settings.model_validate(data), ignored, items)
