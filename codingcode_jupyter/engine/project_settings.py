"""A project's settings files resolved once: the values, the rules, and where each came from.

Files, from the least to the most specific (:func:`~.settings.settings_sources`): the
person's ``~/.claude/settings.json`` ("claude-user") and ``~/.codingcode/settings.json``
("user"); the project's ``.claude/settings.json`` ("claude-project") and
``.codingcode/settings.json`` ("project"), shared; ``.claude/settings.local.json``
("claude-local") and ``.codingcode/settings.local.json`` ("local"; "Always allow" writes
here), personal. At each level our file is more specific than Claude Code's. For values the
more specific file wins; lists (rules, ``allowWrite``, hooks, ...) are unioned; ``env`` is
merged key by key; a deny rule anywhere wins over an allow rule. Every permission rule and
hook keeps the file it came from, for ``%agent rules``, ``%agent doctor`` and the reason a
decision gives.

The project's files (ours and Claude Code's) come with the project, maybe a cloned one:
what in them loosens the agent applies only once the person trusted it (:mod:`.trust`);
until then it is ignored and listed in ``ignored``. The person's own files always apply.

:class:`ProjectSettings` is the one live view every part reads (the approval pipeline,
hooks, the sandbox, web search, the context window, the model): it re-reads the files when
one of them changes, so an "Always allow" answer or an edit applies to the next call and
nothing keeps a copy frozen at session start.

Reading the files is most of what opening a session costs, so they can be read ahead of
time (:func:`preload`, on the notebook's background thread): the next :class:`ProjectSettings`
of that project takes what was read, if no file changed since, and only that one (a later
session reads its files afresh, as it always did).

The permission mode a file sets: ``permissions.defaultMode`` is where Claude Code puts it;
the top-level ``defaultMode`` is accepted as the same setting. A file that sets both to
different modes gets a warning and the stricter of the two applies.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .approval.rule_syntax import Rule, RuleError, parse_rule
from .hooks.runner import ConfiguredHook, configured_hooks
from .managed import MANAGED_PRIORITY, LayerView, ManagedPolicy, apply_policy, model_refusal
from .managed_paths import DROP_IN_DIR, MCP_FILE_NAME, claude_managed_dir, managed_dir
from .plugins.catalog import Plugin, PluginSet, discover_plugins, plugin_environ
from .settings import (
    MODE_STRICTNESS,
    Dialect,
    IgnoredSetting,
    PermissionMode,
    Settings,
    SettingsError,
    SettingsSource,
    read_hooks_value,
    read_settings_file,
    settings_paths,
    settings_sources,
)
from .trust.boundary import screen_settings
from .trust.items import (
    TrustItem,
    file_digest,
    make_item,
    mcp_items,
    plugin_items,
    profile_items,
    referenced_files,
    settings_items,
    tool_grant_items,
)
from .trust.store import TrustStore, listed_in, trusted_by_environment

if TYPE_CHECKING:
    from .mcp.policy import McpPolicy

__all__ = ["SettingsLayer", "EffectiveSettings", "ProjectSettings", "merge_settings", "directory_root", "preload",
           "active_plugins"]

_ACTIONS = ("deny", "ask", "allow")


@dataclass(frozen=True)
class SettingsLayer:
    """One settings file as read: its source name, its path, and what it holds."""

    source: str
    path: Path
    settings: Settings
    dialect: Dialect = "codingcode"
    # "user": the person's own; "project": comes with the project.
    level: str = "project"
    # What the file holds that has no effect here, and why.
    ignored: tuple[IgnoredSetting, ...] = ()

    @property
    def exists(self) -> bool:
        return self.path.exists()


def directory_root(entry: str, project: Path) -> Path:
    """An ``additionalDirectories`` entry as a real path: absolute, ``~/...``, or relative to the project."""
    path = Path(os.path.expanduser(entry))
    return Path(os.path.realpath(path if path.is_absolute() else Path(project) / path))


@dataclass(frozen=True)
class EffectiveSettings:
    """Every settings file of a project merged, with the source of each rule and of the mode."""

    layers: tuple[SettingsLayer, ...]
    merged: Settings
    rules: tuple[Rule, ...]
    default_mode: PermissionMode | None = None
    default_mode_source: str | None = None
    warnings: tuple[str, ...] = ()
    # Every loosening item the project's files ask for, and those not trusted (so not applied).
    items: tuple[TrustItem, ...] = ()
    ignored: tuple[TrustItem, ...] = ()
    # Why the project is trusted as a whole ("CODINGCODE_TRUST=1", "trustedProjects"), if it is.
    trusted_by: str | None = None
    # Keys of the files that have no effect here, with the reason (for %agent status and doctor).
    ignored_settings: tuple[IgnoredSetting, ...] = ()
    hooks: tuple[ConfiguredHook, ...] = ()
    # The organisation's managed settings in force, and what they override (:mod:`.managed`).
    policy: ManagedPolicy = field(default_factory=ManagedPolicy)
    # Every plugin the files name (enabled or not, usable or not, with why), and the marketplaces known.
    plugins: PluginSet = field(default_factory=PluginSet)

    @property
    def untrusted_plugins(self) -> frozenset[str]:
        """The plugins a project enables that the person has not trusted yet (nothing of them applies)."""
        return frozenset(item.detail["plugin"] for item in self.ignored if item.kind == "plugin")

    @property
    def active_plugins(self) -> tuple[Plugin, ...]:
        """The plugins whose commands, agents, skills, hooks and servers apply now."""
        untrusted = self.untrusted_plugins
        return tuple(plugin for plugin in self.plugins.plugins if plugin.usable and plugin.key not in untrusted)

    def hooks_for(self, event: str) -> list[ConfiguredHook]:
        """The hooks configured for ``event``, least specific file first (untrusted ones left out)."""
        return [hook for hook in self.hooks if hook.event == event]

    @property
    def bypass_disabled(self) -> str | None:
        """The file that sets ``permissions.disableBypassPermissionsMode`` (bypass mode is then off), if any."""
        for layer in self.layers:
            if layer.settings.permissions.disableBypassPermissionsMode == "disable":
                return str(layer.path)
        return None

    @property
    def auto_disabled(self) -> str | None:
        """The file that sets ``permissions.disableAutoMode`` (auto mode is then off), if any."""
        for layer in self.layers:
            if layer.settings.permissions.disableAutoMode == "disable":
                return str(layer.path)
        return None

    def model_refusal(self, model: str) -> str | None:
        """Why ``model`` may not be used (``availableModels``, ``deniedModels``), or None."""
        return model_refusal(model, [(str(layer.path), layer.settings) for layer in self.layers])

    @property
    def inert_rules(self) -> tuple[Rule, ...]:
        """Rules that name a tool we do not have (kept, they apply to nothing)."""
        return tuple(rule for rule in self.rules if rule.missing)

    @property
    def untrusted_profile_modes(self) -> frozenset[str]:
        """Project agent files whose permission mode may not loosen the session's until trusted."""
        return frozenset(str(item.path) for item in self.ignored if item.kind == "agentMode")

    @property
    def allowed_domains(self) -> tuple[str, ...]:
        """The one list of domains the person allowed: the sandbox's, and every ``domain:`` allow rule's."""
        domains = list(self.merged.sandbox.network.allowedDomains or [])
        for rule in self.rules:
            if rule.action == "allow" and rule.pattern and rule.pattern.startswith("domain:"):
                domain = rule.pattern[len("domain:"):]
                if domain not in domains:
                    domains.append(domain)
        return tuple(domains)

    def read_roots(self, project: Path) -> tuple[Path, ...]:
        """The directories outside ``project`` that read-only tools read without asking
        (``permissions.additionalDirectories`` of every file, trusted ones only), as real paths."""
        roots: list[Path] = []
        for layer in self.layers:
            for entry in layer.settings.permissions.additionalDirectories:
                root = directory_root(entry, project)
                if root not in roots:
                    roots.append(root)
        return tuple(roots)

    @property
    def ignored_rules(self) -> tuple[str, ...]:
        """The allow rules that do nothing until the project is trusted."""
        return tuple(item.detail["rule"] for item in self.ignored if item.kind == "allow")

    def layer(self, source: str) -> SettingsLayer | None:
        return next((layer for layer in self.layers if layer.source == source), None)

    def source_path(self, source: str) -> str:
        """The file a rule's source names, for messages (``.codingcode/settings.local.json``)."""
        layer = self.layer(source)
        return str(layer.path) if layer is not None else source

    @cached_property
    def mcp_policy(self) -> McpPolicy:
        """Which MCP servers may start (allowedMcpServers, deniedMcpServers, managed-mcp.json)."""
        from .mcp.policy import mcp_policy

        return mcp_policy(((layer.path, layer.level, layer.settings) for layer in self.layers), self.policy.mcp_files)

    @property
    def untrusted_servers(self) -> frozenset[str]:
        """The project's MCP servers that may not start until it is trusted."""
        return frozenset(item.detail["name"] for item in self.ignored if item.kind == "mcp")


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


def merge_settings(layers: list[Settings]) -> Settings:
    """Settings layered in order, later ones more specific (lists unioned)."""
    merged: dict[str, Any] = {}
    for settings in layers:
        merged = _deep_merge(merged, settings.model_dump(exclude_unset=True))
    return Settings.model_validate(merged)


def _file_mode(layer: SettingsLayer, warnings: list[str]) -> PermissionMode | None:
    settings = layer.settings
    nested, top = settings.permissions.defaultMode, settings.defaultMode
    if nested and top and nested != top:
        stricter = nested if MODE_STRICTNESS[nested] >= MODE_STRICTNESS[top] else top
        warnings.append(
            f"{layer.path}: sets the permission mode twice, permissions.defaultMode {nested!r} and defaultMode "
            f"{top!r}; the stricter, {stricter!r}, applies. Keep only permissions.defaultMode."
        )
        return stricter
    return nested or top


def _anchor(layer: SettingsLayer, project: Path | None) -> Path | None:
    """Where a Claude Code `/path` rule of ``layer`` starts: the project for a project file,
    the file's own directory for the person's (``~/.claude/``, as Claude Code reads it)."""
    if layer.level in ("user", "managed"):
        return layer.path.parent
    return project


def _rules(layers: tuple[SettingsLayer, ...], project: Path | None = None) -> tuple[Rule, ...]:
    rules: list[Rule] = []
    for layer in layers:
        anchor = _anchor(layer, project)
        for action in _ACTIONS:
            # The policy's deny and ask rules outrank the others'; its allow rules do not outrank a deny.
            priority = MANAGED_PRIORITY if layer.level == "managed" and action != "allow" else None
            for index, text in enumerate(getattr(layer.settings.permissions, action)):
                try:
                    rules.append(parse_rule(text, action, layer.source, priority,  # type: ignore[arg-type]
                                            anchor=anchor))
                except RuleError as error:
                    raise SettingsError(f"{layer.path}: entry 'permissions.{action}.{index}': {error}") from None
    return tuple(rules)


def _plugin_hooks(plugins: tuple[Plugin, ...], warnings: list[str], *,
                  managed_only: bool = False) -> tuple[list[ConfiguredHook], list[IgnoredSetting]]:
    """The hooks of the plugins that apply, read as Claude Code's, each with its plugin's variables.
    ``managed_only`` (allowManagedHooksOnly): only plugins the managed files enable keep theirs, as
    Claude Code keeps the hooks of plugins an organisation force-enables."""
    hooks: list[ConfiguredHook] = []
    ignored: list[IgnoredSetting] = []
    for plugin in plugins:
        assert plugin.content is not None
        if managed_only and not plugin.managed:
            ignored.extend(IgnoredSetting(found.path, f"hooks (plugin {plugin.key})",
                                          "your organisation's managed settings run only their own hooks and those "
                                          "of plugins they enable (allowManagedHooksOnly)")
                           for found in plugin.content.hooks)
            continue
        for found in plugin.content.hooks:
            read = read_hooks_value(found.hooks, found.path)
            warnings.extend(read.warnings)
            ignored.extend(read.ignored)
            hooks.extend(configured_hooks(read.settings.hooks, source=f"plugin {plugin.key}", path=found.path,
                                          dialect="claude", env=plugin_environ(plugin)))
    return hooks, ignored


def resolve(layers: tuple[SettingsLayer, ...], *, warnings: list[str] | None = None, items: tuple[TrustItem, ...] = (),
            ignored: tuple[TrustItem, ...] = (), trusted_by: str | None = None,
            project: Path | None = None, plugins: PluginSet | None = None,
            policy: ManagedPolicy | None = None) -> EffectiveSettings:
    """The effective settings of ``layers`` (least specific first, already screened for trust)."""
    warnings = list(warnings or [])
    hooks = tuple(hook for layer in layers for hook in configured_hooks(layer.settings.hooks, source=layer.source,
                                                                          path=layer.path, dialect=layer.dialect))
    plugins = plugins or PluginSet()
    untrusted = {item.detail["plugin"] for item in ignored if item.kind == "plugin"}
    extra_hooks, extra_ignored = _plugin_hooks(tuple(p for p in plugins.plugins if p.usable and p.key not in untrusted),
                                               warnings, managed_only=policy is not None and policy.hooks_only)
    hooks += tuple(extra_hooks)
    mode, mode_source = None, None
    for layer in reversed(layers):
        chosen = _file_mode(layer, warnings)
        if chosen is not None and mode is None:
            mode, mode_source = chosen, layer.source
    return EffectiveSettings(
        layers=layers,
        merged=merge_settings([layer.settings for layer in layers]),
        rules=_rules(layers, project),
        default_mode=mode,
        default_mode_source=mode_source,
        warnings=tuple(warnings),
        items=items,
        ignored=ignored,
        trusted_by=trusted_by,
        ignored_settings=tuple(entry for layer in layers for entry in layer.ignored) + tuple(extra_ignored),
        hooks=hooks,
        plugins=plugins,
        policy=policy or ManagedPolicy(),
    )


@dataclass
class ProjectSettings:
    """The live effective settings of one project (see the module docstring)."""

    project: Path
    store: TrustStore = field(default_factory=TrustStore)
    _stamps: tuple[int, ...] | None = field(default=None, init=False, repr=False)
    _current: EffectiveSettings | None = field(default=None, init=False, repr=False)
    # Project files hook commands run: a changed script changes what is trusted.
    _watched: tuple[Path, ...] = field(default=(), init=False, repr=False)
    _policy: ManagedPolicy = field(default_factory=ManagedPolicy, init=False, repr=False)

    def __post_init__(self) -> None:
        self.project = Path(os.path.realpath(self.project))

    def paths(self) -> list[tuple[str, Path]]:
        return settings_paths(self.project)

    def _stat(self) -> tuple[int, ...]:
        stamps: list[int] = [*self.store.stamp(), int(trusted_by_environment())]
        for path in [p for _, p in self.paths()] + list(self._watched):
            try:
                info = path.stat()
                stamps.extend((info.st_mtime_ns, info.st_size, info.st_ino))
            except FileNotFoundError:
                stamps.extend((-1, -1, -1))
        return tuple(stamps)

    def current(self) -> EffectiveSettings:
        """The settings as the files say now; SettingsError (naming file and entry) when one is broken."""
        if self._current is None and self._take_preloaded():
            return self._current  # type: ignore[return-value]
        stamps = self._stat()
        if self._current is None or stamps != self._stamps:
            self._current = self._load()
            self._stamps = self._stat()
        return self._current

    def _take_preloaded(self) -> bool:
        with _PRELOADED_LOCK:
            loaded = _PRELOADED.pop((self.project, self.store.path), None)
        if loaded is None:
            return False
        stamps, effective, watched = loaded
        self._watched = watched
        if self._stat() != stamps:
            self._watched = ()
            return False
        self._stamps, self._current = stamps, effective
        return True

    def _under_policy(self, raw: list[SettingsLayer]) -> list[SettingsLayer]:
        """The layers as the managed settings let them apply (:mod:`.managed`), the policy kept."""
        kept, self._policy = apply_policy([LayerView(layer.source, layer.path, layer.level, layer.settings)
                                           for layer in raw])
        return [SettingsLayer(layer.source, layer.path, settings, layer.dialect, layer.level,
                              (*layer.ignored, *(entry for entry in self._policy.misplaced if entry.path == layer.path)))
                for layer, settings in zip(raw, kept)]

    def _read(self, source: SettingsSource) -> tuple[SettingsLayer, list[str]]:
        read = read_settings_file(source.path, source.dialect)
        return (SettingsLayer(source.source, source.path, read.settings, source.dialect, source.level, read.ignored),
                list(read.warnings))

    def _load(self) -> EffectiveSettings:
        warnings: list[str] = []
        raw: list[SettingsLayer] = []
        for source in settings_sources(self.project):
            layer, notes = self._read(source)
            raw.append(layer)
            warnings.extend(notes)
        raw = self._under_policy(raw)
        own = [layer.settings.trustedProjects for layer in raw if layer.level == "user"]
        trusted_by = "CODINGCODE_TRUST=1" if trusted_by_environment() else (
            "trustedProjects in your user settings" if any(listed_in(p, self.project) for p in own) else None)
        fingerprints = self.store.project(self.project).fingerprints
        # The person's own mode: a project file may tighten it at once, loosen it only once trusted.
        floor: PermissionMode = "default"
        for layer in raw:
            chosen = _file_mode(layer, []) if layer.level in ("user", "managed") else None
            floor = chosen or floor
        layers: list[SettingsLayer] = []
        items: list[TrustItem] = []
        ignored: list[TrustItem] = []
        for layer in raw:
            if layer.level in ("user", "managed"):
                layers.append(layer)
                continue
            if layer.settings.trustedProjects:
                warnings.append(f"{layer.path}: trustedProjects is read from your user settings only; ignored here.")
            own_items = settings_items(self.project, layer.source, layer.path, layer.settings, floor)
            allowed = fingerprints if trusted_by is None else {item.fingerprint for item in own_items}
            screened = screen_settings(self.project, layer.source, layer.path, layer.settings, allowed, floor, own_items)
            items.extend(screened.items)
            ignored.extend(screened.ignored)
            layers.append(SettingsLayer(layer.source, layer.path, screened.settings, layer.dialect, layer.level,
                                        layer.ignored))
        plugins = discover_plugins(self.project, raw)
        warnings.extend(plugins.notes)
        # An enabled plugin that brings nothing is said with the next cell (one not fetched yet is fetched then).
        warnings.extend(f"{plugin.enabled_in}: enabledPlugins.{plugin.key} — {plugin.problem}" for plugin in plugins.plugins
                        if plugin.enabled and plugin.problem and "not fetched yet" not in plugin.problem)
        # What of an enabled plugin's files was left out is said as a settings file's is, once a session.
        warnings.extend(note for plugin in plugins.plugins if plugin.enabled for note in plugin.notes)
        others = [*mcp_items(self.project), *profile_items(self.project), *tool_grant_items(self.project),
                  *plugin_items(plugins)]
        items.extend(others)
        if trusted_by is None:
            ignored.extend(item for item in others if item.fingerprint not in fingerprints)
        # The drop-in directories too: a fragment added or removed changes the directory.
        self._watched = (self.project / ".mcp.json", claude_managed_dir() / MCP_FILE_NAME, managed_dir() / MCP_FILE_NAME,
                         claude_managed_dir() / DROP_IN_DIR, managed_dir() / DROP_IN_DIR,
                         *(self.project / name for item in items for name in item.files),
                         *(item.path for item in others if item.kind in ("agentMode", "toolGrant")),
                         *plugins.files, *_plugin_scripts(plugins))
        return resolve(tuple(layers), warnings=warnings, items=tuple(items), ignored=tuple(ignored),
                       trusted_by=trusted_by, project=self.project, plugins=plugins, policy=self._policy)

    def trust(self, items: list[TrustItem] | None = None) -> list[TrustItem]:
        """Trust ``items`` (default: every item now ignored); returns what was trusted."""
        chosen = list(self.current().ignored if items is None else items)
        if chosen:
            files = {str(item.path): file_digest(item.path) or "" for item in chosen}
            for item in chosen:
                files.update(item.files)
            self.store.grant(self.project, chosen, files)
        return chosen

    def active_plugins(self) -> tuple[Plugin, ...]:
        """The plugins that apply now (none while a settings file cannot be read)."""
        try:
            return self.current().active_plugins
        except (SettingsError, OSError):
            return ()

    def trust_rules(self, source: str, rules: list[str]) -> None:
        """Rules the person wrote through the card ("Always allow") are theirs: they stay trusted."""
        path = dict(self.paths())[source]
        self.store.grant(self.project, [make_item("allow", source, path, f"allow rule `{rule}`", {"rule": rule})
                                        for rule in rules], {})

    def revoke(self) -> None:
        """Forget the person's trust in this project."""
        self.store.revoke(self.project)


def _plugin_scripts(plugins: PluginSet) -> list[Path]:
    """The files a plugin's hooks and servers name (a script changed is a plugin changed: read again)."""
    found: list[Path] = []
    for plugin in plugins.plugins:
        if plugin.content is None or plugin.root is None:
            continue
        lines = [str(hook.get("command", "")) for hooks in plugin.content.hooks for groups in hooks.hooks.values()
                 for group in (groups if isinstance(groups, list) else []) if isinstance(group, dict)
                 for hook in group.get("hooks") or [] if isinstance(hook, dict)]
        lines += [" ".join([str(s.config.get("command", "")), *map(str, s.config.get("args") or [])])
                  for s in plugin.content.servers]
        for line in lines:
            found.extend(plugin.root / name for name in referenced_files(plugin.root, line.split()))
    return found


def active_plugins(project: Path) -> tuple[Plugin, ...]:
    """The plugins that apply in ``project`` now (none when its settings cannot be read), for readers
    that have no session at hand (the completer, ``%agent commands``)."""
    try:
        return ProjectSettings(project).current().active_plugins
    except (SettingsError, OSError):
        return ()


# What preload() read, by (project, trust file), until a ProjectSettings takes it.
_PRELOADED: dict[tuple[Path, Path], tuple[tuple[int, ...], EffectiveSettings, tuple[Path, ...]]] = {}
_PRELOADED_LOCK = threading.Lock()


def preload(project: Path | str) -> None:
    """Read ``project``'s settings now (any thread) for the next session there; a broken file
    raises SettingsError here and again, to be shown, when that session opens."""
    settings = ProjectSettings(Path(project))
    effective = settings.current()
    assert settings._stamps is not None
    with _PRELOADED_LOCK:
        _PRELOADED[(settings.project, settings.store.path)] = (settings._stamps, effective, settings._watched)
