"""The organisation's managed settings: the policy an administrator installs, which nothing below loosens.

Two files, read as the other settings files are (:mod:`.settings`): Claude Code's
``/etc/claude-code/managed-settings.json`` ("claude-managed") and ours,
``/etc/codingcode/managed-settings.json`` ("managed"; ours wins where both set a value). The
directories can be moved with ``CODINGCODE_CLAUDE_MANAGED_DIR`` and ``CODINGCODE_MANAGED_DIR``
(tests, and images that keep their policy elsewhere). They are the most specific layers, so
their values win (the model, the mode, ``env``, the sandbox's switches), and beyond that:

- their deny and ask rules outrank every other file's rules and the session's (a higher
  priority, below only the built-in rules); their ask rules are forced: a reviewer never
  answers them and the card offers no "Always allow";
- ``allowManagedPermissionRulesOnly``: the other files' rules, the session's and a turn's are
  left out (the card offers no rule to save); ``allowManagedHooksOnly``: only their hooks run
  (hooks a person registers from a cell still do, as Claude Code keeps its SDK hooks);
- ``permissions.defaultMode`` is the loosest mode a turn may have (a cell may still tighten);
  ``disableBypassPermissionsMode``/``disableAutoMode`` turn those modes off (from any file);
- a sandbox list they set (``allowWrite``, ``allowRead``, ``network.allowedDomains``, ``env``)
  is the whole list: another file cannot add to it (deny lists still add up);
- ``availableModels`` narrows the models (every file's list narrows, none widens) and
  ``deniedModels`` adds to the refused ones;
- ``env`` is set in the kernel's own environment too (the provider, telemetry), and wins over
  every other file's for commands and hooks;
- ``allowedMcpServers``/``deniedMcpServers`` add up with every other file's, as Claude Code's do
  (:mod:`.mcp.policy` applies them); ``allowManagedMcpServersOnly`` leaves the other files'
  allowlists out; a ``managed-mcp.json`` beside a managed file is the only source of servers;
- ``apiKeyHelper`` and the ``allowManaged*`` switches are read from them (and ``apiKeyHelper``
  from the person's own files), never from a project's.

What a managed file overrides or leaves out of the others is kept (:class:`ManagedPolicy`) for
``%agent status`` and ``%agent doctor``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

from .managed_paths import MANAGED_SOURCES, managed_mcp_files
from .settings import IgnoredSetting, Settings

if TYPE_CHECKING:
    from .settings import PermissionMode

__all__ = ["MANAGED_SOURCES", "MANAGED_PRIORITY", "ManagedPolicy", "LayerView", "apply_policy", "model_refusal", "apply_env"]

# Above every file's and the session's rules (100), below the built-in rules (1000).
MANAGED_PRIORITY = 500
# Sandbox lists that widen what a command may do: a managed file that sets one sets all of it.
_WIDENING_LISTS: tuple[tuple[str, ...], ...] = (("filesystem", "allowWrite"), ("filesystem", "allowRead"), ("network", "allowedDomains"), ("env",))
_POLICY = "your organisation's managed settings"


@dataclass(frozen=True)
class LayerView:
    """What the policy needs of one settings layer (the layer type lives above this module)."""

    source: str
    path: Path
    level: str
    settings: Settings


@dataclass(frozen=True)
class ManagedPolicy:
    """What the managed files say, and what of the other files they override or leave out."""

    files: tuple[Path, ...] = ()
    rules_only: bool = False
    hooks_only: bool = False
    # allowManagedMcpServersOnly: only their allowedMcpServers applies.
    mcp_only: bool = False
    # The managed-mcp.json files: their servers are the only ones that start.
    mcp_files: tuple[Path, ...] = ()
    # The loosest mode a turn may have (the managed ``permissions.defaultMode``), and its file.
    mode_ceiling: "PermissionMode | None" = None
    mode_file: str = ""
    env: dict[str, str] = field(default_factory=dict)
    rules: int = 0
    # The other files' keys the policy left out or whose values it overrides, each with why.
    overrides: tuple[IgnoredSetting, ...] = ()
    # Keys a file may not set whatever the policy (managed-only keys, a project's apiKeyHelper): they
    # belong with that file's ignored keys, said even when there is no managed file.
    misplaced: tuple[IgnoredSetting, ...] = ()

    @property
    def active(self) -> bool:
        return bool(self.files or self.mcp_files)

    def lines(self) -> list[str]:
        """What is in force, one line each (``%agent status``, ``%agent doctor``)."""
        if not self.active:
            return []
        out = [f"{_POLICY}: {', '.join(str(path) for path in (*self.files, *self.mcp_files))}"]
        if self.rules:
            out.append(f"{self.rules} rule(s); their deny and ask rules outrank every other file's and the session's")
        if self.rules_only:
            out.append("only its permission rules apply (allowManagedPermissionRulesOnly); no rule is saved from a card")
        if self.hooks_only:
            out.append("only its hooks run (allowManagedHooksOnly)")
        if self.mcp_files:
            out.append(f"only the MCP servers of {', '.join(str(path) for path in self.mcp_files)} start "
                       "(it has exclusive control; %agent mcp add is refused)")
        if self.mcp_only:
            out.append("only its MCP allowlist applies (allowManagedMcpServersOnly)")
        if self.mode_ceiling:
            out.append(f"no mode looser than {self.mode_ceiling} (permissions.defaultMode in {self.mode_file})")
        if self.env:
            out.append(f"env {', '.join(sorted(self.env))} (set in the kernel too)")
        out.extend(f"overrides {entry.describe()}" for entry in self.overrides)
        return out


def _set_paths(data: Any, prefix: tuple[str, ...] = ()) -> Iterable[tuple[tuple[str, ...], Any]]:
    """Each scalar value of a settings dump with its path (lists are values, dicts are walked)."""
    if isinstance(data, dict):
        for key, value in data.items():
            yield from _set_paths(value, (*prefix, key))
    else:
        yield prefix, data


def _get(data: Any, path: tuple[str, ...]) -> Any:
    for part in path:
        if not isinstance(data, dict) or part not in data:
            return None
        data = data[part]
    return data


_LISTS_THAT_ADD = {("permissions", "allow"), ("permissions", "deny"), ("permissions", "ask"),
                   ("permissions", "additionalDirectories"), ("deniedModels",), ("availableModels",),
                   ("sandbox", "filesystem", "denyRead"), ("sandbox", "filesystem", "denyWrite"),
                   ("allowedMcpServers",), ("deniedMcpServers",)}


def _overridden_values(managed: list[LayerView], others: list[LayerView]) -> list[IgnoredSetting]:
    """The other files' values a managed value replaces (scalars and the sandbox's widening lists)."""
    out: list[IgnoredSetting] = []
    for top in managed:
        for path, value in _set_paths(top.settings.model_dump(exclude_unset=True)):
            if path in _LISTS_THAT_ADD or path[0] == "hooks":
                continue
            for layer in others:
                theirs = _get(layer.settings.model_dump(exclude_unset=True), path)
                if theirs is not None and theirs != value:
                    out.append(IgnoredSetting(layer.path, ".".join(path),
                                              f"{_POLICY} set it to {value!r} ({top.path})"))
    return out


def _strip(layer: LayerView, reasons: list[IgnoredSetting], misplaced: list[IgnoredSetting], *, rules: bool,
           hooks: bool, lists: set[tuple[str, ...]], mcp: bool = False) -> Settings:
    """``layer``'s settings without what the policy leaves out of it, each key left out recorded.

    Worked on the file's own keys (``exclude_unset``), so a key taken out is unset, not a value
    that would override a less specific file's."""
    data = layer.settings.model_dump(exclude_unset=True)
    dropped: list[tuple[tuple[str, ...], str]] = []
    anyway: list[tuple[tuple[str, ...], str]] = []
    if rules:
        why = f"{_POLICY} allow only their own rules (allowManagedPermissionRulesOnly)"
        dropped += [(("permissions", action), why) for action in ("allow", "deny", "ask")]
    if hooks:
        dropped.append((("hooks",), f"{_POLICY} run only their own hooks (allowManagedHooksOnly)"))
    dropped += [(("sandbox", *path), f"{_POLICY} set this list; another file cannot add to it") for path in lists]
    if mcp:
        dropped.append((("allowedMcpServers",), f"{_POLICY} allow only their own MCP allowlist "
                                                "(allowManagedMcpServersOnly)"))
    anyway += [((key,), "read from managed settings only")
               for key in ("allowManagedPermissionRulesOnly", "allowManagedHooksOnly", "allowManagedMcpServersOnly")]
    # An empty list here is the policy's "no marketplace at all", so it is a value, not an absence.
    anyway += [((key,), "read from managed settings only (the organisation's restriction on marketplaces)")
               for key in ("strictKnownMarketplaces", "blockedMarketplaces")]
    if layer.level == "project":
        anyway.append((("apiKeyHelper",), "read from your own settings and managed settings only: a project's "
                        "file must not run a command to get your key"))
    changed = False
    for path, why, into in [(path, why, reasons) for path, why in dropped] + \
            [(path, why, misplaced) for path, why in anyway]:
        parent = _get(data, path[:-1]) if len(path) > 1 else data
        value = parent.get(path[-1]) if isinstance(parent, dict) else None
        # An empty allowlist is "no server" (a value), left out under allowManagedMcpServersOnly too.
        if value is not None and (value not in ([], {}) or path[-1].endswith("Marketplaces")
                                  or path[-1] == "allowedMcpServers"):
            into.append(IgnoredSetting(layer.path, ".".join(path), why))
            del parent[path[-1]]
            changed = True
    return Settings.model_validate(data) if changed else layer.settings


def apply_policy(layers: list[LayerView]) -> tuple[list[Settings], ManagedPolicy]:
    """Each layer's settings as the policy lets them apply (same order), and the policy in force."""
    managed = [layer for layer in layers if layer.level == "managed" and layer.path.exists()]
    others = [layer for layer in layers if layer.level != "managed"]
    rules_only = any(layer.settings.allowManagedPermissionRulesOnly for layer in managed)
    hooks_only = any(layer.settings.allowManagedHooksOnly for layer in managed)
    mcp_only = any(layer.settings.allowManagedMcpServersOnly for layer in managed)
    lists = {path for layer in managed for path in _WIDENING_LISTS
             if _get(layer.settings.sandbox.model_dump(exclude_unset=True), path)}
    overrides = _overridden_values(managed, others)
    out: list[Settings] = []
    misplaced: list[IgnoredSetting] = []
    for layer in layers:
        if layer.level == "managed":
            out.append(layer.settings)
        else:
            out.append(_strip(layer, overrides, misplaced, rules=rules_only, hooks=hooks_only, lists=lists,
                              mcp=mcp_only))
    ceiling, mode_file = None, ""
    for layer in managed:
        mode = layer.settings.permissions.defaultMode or layer.settings.defaultMode
        if mode is not None:
            ceiling, mode_file = mode, str(layer.path)
    env: dict[str, str] = {}
    for layer in managed:
        env.update(layer.settings.env)
    rules = sum(len(getattr(layer.settings.permissions, action)) for layer in managed
                for action in ("allow", "deny", "ask"))
    return out, ManagedPolicy(files=tuple(layer.path for layer in managed), rules_only=rules_only,
                              hooks_only=hooks_only, mcp_only=mcp_only, mcp_files=tuple(managed_mcp_files()),
                              mode_ceiling=ceiling, mode_file=mode_file, env=env,
                              rules=rules, overrides=tuple(overrides), misplaced=tuple(misplaced))


# -- models -----------------------------------------------------------------------------------

_FAMILIES = ("opus", "sonnet", "haiku")


def _matches(model: str, entry: str) -> bool:
    """Claude Code's reading of an ``availableModels`` entry: a family alias (``opus``), a prefix
    of the id (``claude-opus-4``), or the id itself; a provider's spelling matches by its base."""
    model, entry = model.strip().lower(), entry.strip().lower()
    if not entry:
        return False
    if entry in _FAMILIES:
        return entry in model
    return model == entry or model.startswith(entry + "-") or model.startswith(entry + "@") or (
        f".{entry}" in model and "anthropic." in model)


def model_refusal(model: str, settings: Iterable[tuple[str, Settings]]) -> str | None:
    """Why ``model`` may not be used under these files ((file, settings) pairs), or None."""
    from .models.aliases import resolve_alias
    from .models.anthropic import DEFAULT_MODEL

    resolved = resolve_alias(model) or model
    if resolved == "demo":
        return None  # the offline demo sends nothing anywhere
    for where, layer in settings:
        for entry in layer.deniedModels:
            if _matches(resolved, entry) or _matches(resolved, resolve_alias(entry) or entry):
                return f"the model {model} is refused by deniedModels in {where}"
    for where, layer in settings:
        allowed = layer.availableModels
        if allowed == [] and resolved == DEFAULT_MODEL:
            continue  # an empty list leaves the default model only, as Claude Code reads it
        if allowed is not None and not any(_matches(resolved, entry) or _matches(resolved, resolve_alias(entry) or entry)
                                           for entry in allowed):
            return (f"the model {model} is not among the models allowed by availableModels in {where} "
                    f"({', '.join(allowed) or 'none: only the default model'})")
    return None


def apply_env(policy: ManagedPolicy | None) -> None:
    """Set the managed ``env`` in the kernel's own environment (the provider, telemetry, proxies)."""
    if policy is None:
        return
    for name, value in policy.env.items():
        if os.environ.get(name) != value:
            os.environ[name] = value
