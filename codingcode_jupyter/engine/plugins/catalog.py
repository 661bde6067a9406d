"""The plugins of a project: ``extraKnownMarketplaces`` and ``enabledPlugins`` of every settings file
resolved into marketplaces and plugins, each with what it brings or why it brings nothing.

Marketplaces are known by name from the organisation's managed settings, the person's own settings
(``~/.claude/settings.json``, ``~/.codingcode/settings.json``) and Claude Code's own record of the
marketplaces the person added (``~/.claude/plugins/known_marketplaces.json``), then from the
project's files — which may add a name but never redirect one the person already uses. The managed
files' ``blockedMarketplaces`` and ``strictKnownMarketplaces`` (source objects, or ``hostPattern`` /
``pathPattern`` regular expressions) refuse a marketplace before anything of it is read or fetched;
a marketplace the managed files declare themselves is not held to their allowlist. ``enabledPlugins`` (``"name@marketplace":
true``, or a list of versions, or ``false``) is read from every file, the more specific winning, as
Claude Code's user, project and local scopes do.

A plugin is the person's own when a file of theirs (or of the organisation's) enables it and its
marketplace is theirs (or the organisation's); any other enabled plugin came with the project, and what it brings is a trust item
(:mod:`..trust.items`): nothing of it applies until the person trusts it.

Nothing is fetched here (see :mod:`.sources`): a git marketplace not cloned yet is a plugin that
"is not fetched yet", and :func:`fetch_plugins` clones what the enabled plugins need.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Protocol

from .manifest import PluginContent, read_plugin
from .marketplace import MarketEntry, MarketplaceFile, marketplace_file, read_marketplace
from .sources import Source, cache_root, fetch_git, local_tree, marketplace_source, plugin_source

if TYPE_CHECKING:
    from ..settings import Settings

__all__ = ["Marketplace", "Plugin", "PluginSet", "SettingsSource", "discover_plugins", "fetch_plugins",
           "server_name", "plugin_environ", "KEY_FORM"]

KEY_FORM = re.compile(r"^([^@\s]+)@([^@\s]+)$")
_SAFE = re.compile(r"[^A-Za-z0-9_.-]+")


class SettingsSource(Protocol):
    """One settings file as the catalog needs it (a :class:`~..project_settings.SettingsLayer`)."""

    @property
    def path(self) -> Path: ...

    @property
    def level(self) -> str: ...

    @property
    def settings(self) -> "Settings": ...


@dataclass(frozen=True)
class Marketplace:
    """A marketplace known by name: where it comes from, who declared it, where it is read from."""

    name: str
    source: Source
    declared_in: Path
    # "user": the person declared it (or added it in Claude Code); "project": the project's files did;
    # "managed": the organisation's managed settings did.
    level: str
    tree: Path
    # Its settings' ``autoUpdate``: a git marketplace fetched again each time a session starts.
    auto_update: bool = False
    # Where Claude Code added it from, when it is read from Claude Code's copy (the policy judges both).
    origin: Source | None = None

    @property
    def trusted(self) -> bool:
        return self.level in ("user", "managed")

    @property
    def file(self) -> Path:
        return marketplace_file(self.tree, self.source.path if self.source.kind in ("git", "github") else None) \
            if self.source.kind != "file" else Path(self.source.location)


@dataclass(frozen=True)
class Plugin:
    """One plugin named by ``enabledPlugins``: whether it is on, whose it is, what it brings."""

    key: str
    name: str
    marketplace: str
    enabled: bool
    # The settings file whose value decides (the most specific that names it).
    enabled_in: Path | None
    # The person's own: a file of theirs enables it and the marketplace is theirs (no trust needed).
    owned: bool
    market: Marketplace | None = None
    source: Source | None = None
    root: Path | None = None
    content: PluginContent | None = None
    # Why it brings nothing (None when it brings what `content` says).
    problem: str | None = None
    notes: tuple[str, ...] = ()
    # Enabled by the organisation's managed settings: its hooks run even under allowManagedHooksOnly.
    managed: bool = False

    @property
    def usable(self) -> bool:
        return self.enabled and self.content is not None and self.problem is None

    @property
    def data_dir(self) -> Path:
        """Its ``${CLAUDE_PLUGIN_DATA}``: kept across updates, in the person's own directory."""
        return cache_root() / "data" / _SAFE.sub("_", f"{self.name}-{self.marketplace}")

    def qualified(self, name: str) -> str:
        """A part's name as the session knows it: ``plugin:part``."""
        return f"{self.name}:{name}"


@dataclass(frozen=True)
class PluginSet:
    """Every plugin the settings name, the marketplaces known, and notes on what was left out."""

    plugins: tuple[Plugin, ...] = ()
    marketplaces: tuple[Marketplace, ...] = ()
    notes: tuple[str, ...] = ()
    # Every file whose change changes this set (marketplace files, manifests, hooks files).
    files: tuple[Path, ...] = ()

    def get(self, key: str) -> Plugin | None:
        return next((plugin for plugin in self.plugins if plugin.key == key), None)


def server_name(plugin: Plugin, server: str) -> str:
    """A plugin's MCP server as the session names it: ``plugin_<plugin>_<server>``, whose tools rules and
    hooks call ``mcp__plugin_<plugin>_<server>__TOOL``, as in Claude Code."""
    return _SAFE.sub("_", f"plugin_{plugin.name}_{server}")[:64]


# -- marketplaces ---------------------------------------------------------------------------------------


def _known_to_claude(notes: list[str]) -> list[Marketplace]:
    """The marketplaces the person added in Claude Code (``/plugin marketplace add``), where it keeps them."""
    from ..claude.files import claude_dir

    path = claude_dir() / "plugins" / "known_marketplaces.json"
    if not path.is_file():
        return []
    try:
        from ..config_files import read_config_text

        data = json.loads(read_config_text(path))
    except (OSError, ValueError) as error:
        notes.append(f"{path}: cannot be read ({error}); the marketplaces added in Claude Code are not known here")
        return []
    out = []
    for name, raw in (data.items() if isinstance(data, dict) else []):
        location = raw.get("installLocation") if isinstance(raw, dict) else None
        if not isinstance(location, str):
            notes.append(f"{path}: {name} has no installLocation; left out")
            continue
        source = marketplace_source(raw.get("source"), Path(location)) if isinstance(raw, dict) else None
        kept = Source("directory", location) if source is None or source.problem else \
            Source("directory", location, path=source.path)
        out.append(Marketplace(name, kept, path, "user", Path(location),
                               origin=source if source is not None and source.problem is None else None))
    return out


def _declared(layer: SettingsSource, project: Path, notes: list[str]) -> list[Marketplace]:
    out = []
    for name, raw in layer.settings.extraKnownMarketplaces.items():
        where = f"{layer.path}: extraKnownMarketplaces.{name}"
        if not isinstance(raw, dict) or "source" not in raw:
            notes.append(f"{where} — needs a `source` object; left out")
            continue
        source = marketplace_source(raw["source"], project)
        if source.problem is not None:
            notes.append(f"{where} — {source.problem}; left out")
            continue
        for key in raw:
            if key == "installLocation":
                notes.append(f"{where}.installLocation — where Claude Code keeps its copy; the copy used here is "
                             "the source's own directory or a clone in ~/.codingcode/plugins")
            elif key not in ("source", "autoUpdate"):
                notes.append(f"{where}.{key} — not a marketplace key; left out")
        auto = raw.get("autoUpdate", False)
        if not isinstance(auto, bool):
            notes.append(f"{where}.autoUpdate — write true or false; left out")
            auto = False
        out.append(Marketplace(name, source, layer.path, layer.level, local_tree(source, name, "marketplaces"),
                               auto_update=auto is True))
    return out


_POLICY = "your organisation's managed settings"


@dataclass(frozen=True)
class _Restriction:
    """The managed files' ``blockedMarketplaces`` and ``strictKnownMarketplaces`` (None: no allowlist)."""

    blocked: tuple[tuple[dict[str, Any], Path], ...] = ()
    allowed: tuple[tuple[dict[str, Any], Path], ...] | None = None
    allowed_in: tuple[Path, ...] = ()

    def refusal(self, market: Marketplace) -> str | None:
        """Why ``market`` may not be used, or None."""
        sources = [market.source, *([market.origin] if market.origin is not None else [])]
        for entry, path in self.blocked:
            if any(_source_matches(entry, source, path) for source in sources):
                return f"{_POLICY} block it (blockedMarketplaces in {path})"
        if self.allowed is not None and market.level != "managed" and \
                not any(_source_matches(entry, source, path) for entry, path in self.allowed for source in sources):
            where = ", ".join(str(path) for path in self.allowed_in)
            return f"{_POLICY} allow only the marketplaces strictKnownMarketplaces lists ({where})"
        return None


def _normal(location: str) -> str:
    text = location.strip().rstrip("/")
    text = text[:-4] if text.endswith(".git") else text
    return text.lower() if _URLISH.match(text) else os.path.normpath(text)


_URLISH = re.compile(r"^([a-z][a-z0-9+.-]*://|[\w.+-]+@[\w.-]+:)", re.IGNORECASE)
_HOST = re.compile(r"^(?:[a-z][a-z0-9+.-]*://(?:[^@/]*@)?|[\w.+-]+@)([^/:]+)", re.IGNORECASE)


def _source_matches(entry: dict[str, Any], source: Source, policy_file: Path) -> bool:
    """Whether a policy entry names ``source``: the same place (and ref and path, when the entry gives
    them), or a host or path matched by the entry's regular expression."""
    kind = entry.get("source")
    if kind == "hostPattern":
        host = _HOST.match(source.location) if source.kind in ("git", "github", "url") else None
        return host is not None and re.search(str(entry.get("hostPattern", "")), host.group(1)) is not None
    if kind == "pathPattern":
        return source.kind in ("directory", "file") and \
            re.search(str(entry.get("pathPattern", "")), source.location) is not None
    named = marketplace_source(entry, policy_file.parent)
    if named.problem is not None and named.kind != "url":
        return False
    if _normal(named.location) != _normal(source.location):
        return False
    return all(getattr(named, key) in (None, getattr(source, key)) for key in ("ref", "path"))


def _restriction(layers: list[SettingsSource], notes: list[str]) -> _Restriction:
    blocked: list[tuple[dict[str, Any], Path]] = []
    allowed: list[tuple[dict[str, Any], Path]] | None = None
    allowed_in: list[Path] = []
    for layer in layers:
        if layer.level != "managed":
            continue
        for key in ("blockedMarketplaces", "strictKnownMarketplaces"):
            entries = getattr(layer.settings, key)
            if entries is None:
                continue
            kept: list[tuple[dict[str, Any], Path]] = []
            for index, entry in enumerate(entries):
                problem = _policy_entry_problem(entry)
                if problem is not None:
                    # An allowlist entry that cannot be read allows nothing; a blocklist entry that cannot
                    # be read blocks nothing — either way the administrator is told.
                    notes.append(f"{layer.path}: {key}[{index}] — {problem}; left out")
                    continue
                kept.append((entry, layer.path))
            if key == "blockedMarketplaces":
                blocked.extend(kept)
            else:
                allowed = (allowed or []) + kept
                allowed_in.append(layer.path)
    return _Restriction(tuple(blocked), None if allowed is None else tuple(allowed), tuple(allowed_in))


def _policy_entry_problem(entry: Any) -> str | None:
    if not isinstance(entry, dict):
        return 'write a source object such as {"source": "github", "repo": "owner/name"}'
    kind = entry.get("source")
    if kind in ("hostPattern", "pathPattern"):
        pattern = entry.get(kind)
        if not isinstance(pattern, str) or not pattern:
            return f"a {kind} entry needs `{kind}` (a regular expression)"
        try:
            re.compile(pattern)
        except re.error as error:
            return f"`{kind}` is not a regular expression ({error})"
        return None
    named = marketplace_source(entry, Path("/"))
    return named.problem if named.problem is not None and named.kind != "url" else None


def _marketplaces(project: Path, layers: list[SettingsSource], notes: list[str],
                  refused: dict[str, str] | None = None) -> dict[str, Marketplace]:
    """Every marketplace by name: the organisation's and the person's first (their files, then Claude
    Code's record), then the project's; those the managed files refuse go to ``refused`` with why."""
    known: dict[str, Marketplace] = {}
    restriction = _restriction(layers, notes)
    ordered = sorted((layer for layer in layers if layer.level in ("user", "managed")),
                     key=lambda layer: layer.level != "managed")
    own = [m for layer in ordered for m in _declared(layer, project, notes)]
    for market in [*own, *_known_to_claude(notes)]:
        known.setdefault(market.name, market)
    for layer in layers:
        if layer.level in ("user", "managed"):
            continue
        for market in _declared(layer, project, notes):
            mine = known.get(market.name)
            if mine is not None and mine.trusted:
                # Yours (or the organisation's) stays yours, so it needs no trust and no allowlist entry.
                if mine.source != market.source:
                    notes.append(f"{market.declared_in}: extraKnownMarketplaces.{market.name} — you already know a "
                                 f"marketplace of that name ({mine.declared_in}); a project cannot redirect it")
                continue
            known[market.name] = market
    for name, market in list(known.items()):
        why = restriction.refusal(market)
        if why is not None:
            del known[name]
            if refused is not None:
                refused[name] = why
            notes.append(f"{market.declared_in}: marketplace {name} ({market.source.describe()}) — {why}; "
                         "nothing of it is read or fetched")
    return known


# -- plugins --------------------------------------------------------------------------------------------


@dataclass
class _Choice:
    enabled: bool
    path: Path
    owned: bool = False
    managed: bool = False


def _choices(layers: list[SettingsSource], notes: list[str]) -> dict[str, _Choice]:
    """``enabledPlugins`` of every file, the more specific winning; whether a file of the person's enables it."""
    choices: dict[str, _Choice] = {}
    for layer in layers:
        for key, value in layer.settings.enabledPlugins.items():
            if not KEY_FORM.match(key):
                notes.append(f"{layer.path}: enabledPlugins.{key} — write PLUGIN@MARKETPLACE; left out")
                continue
            enabled = bool(value)
            if isinstance(value, list):
                notes.append(f"{layer.path}: enabledPlugins.{key} — a list of versions is read as "
                             f"{'on' if enabled else 'off'}; the version a marketplace lists is the one used")
            mine = layer.level in ("user", "managed")
            owned = (choices[key].owned if key in choices else False) or (enabled and mine)
            choices[key] = _Choice(enabled, layer.path, owned, managed=layer.level == "managed")
    return choices


def _installed_path(key: str) -> Path | None:
    """Where Claude Code installed ``key`` (``~/.claude/plugins/installed_plugins.json``), if it did."""
    from ..claude.files import claude_dir

    path = claude_dir() / "plugins" / "installed_plugins.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    except (OSError, ValueError):
        return None
    entry = data.get("plugins", {}).get(key) if isinstance(data, dict) else None
    for item in entry if isinstance(entry, list) else [entry]:
        if isinstance(item, dict) and isinstance(item.get("installPath"), str) and Path(item["installPath"]).is_dir():
            return Path(item["installPath"])
    return None


def _root(entry: MarketEntry, market: MarketplaceFile, key: str) -> tuple[Source, Path | None, str | None]:
    """Where an entry's plugin is read from, and why it cannot be, if it cannot."""
    source = plugin_source(entry.source, market.root, market.plugin_root)
    if source.problem is not None:
        return source, None, source.problem
    tree = local_tree(source, key, "plugins")
    root = tree / source.path if source.kind == "git-subdir" and source.path else tree
    if not root.is_dir():
        installed = _installed_path(key)
        if installed is not None:
            return source, installed, None
        why = ("it is not fetched yet (it is when a session starts, or with %agent plugins update)"
               if source.fetched else f"its directory {root} does not exist")
        return source, None, why
    return source, root, None


def _plugin(key: str, choice: _Choice, market: Marketplace | None, files: dict[Path, MarketplaceFile],
            refused: dict[str, str]) -> Plugin:
    name, market_name = KEY_FORM.match(key).groups()  # type: ignore[union-attr]
    base = Plugin(key, name, market_name, choice.enabled, choice.path, owned=False, market=market,
                  managed=choice.managed)
    if market_name in refused:
        return _with(base, problem=f"its marketplace {market_name!r} is refused: {refused[market_name]}")
    if market is None:
        return _with(base, problem=f"the marketplace {market_name!r} is not known (add it to extraKnownMarketplaces)")
    owned = choice.owned and market.trusted
    path = market.file
    if path not in files:
        files[path] = read_marketplace(path)
    listing = files[path]
    if listing.problem is not None:
        why = "the marketplace is not fetched yet (it is when a session starts, or with %agent plugins update)" \
            if market.source.fetched and not market.tree.is_dir() else listing.problem
        return _with(base, owned=owned, problem=why)
    entry = listing.entries.get(name)
    if entry is None:
        return _with(base, owned=owned, problem=f"the marketplace {market_name!r} ({path}) lists no plugin {name!r}")
    # Claude Code wants the two names equal; the settings' name is the one plugins are enabled by, so it is used.
    renamed = (f"{path}: name — {listing.name!r}, while the settings call this marketplace {market_name!r}; "
               f"read as {market_name!r}",) if listing.name and listing.name != market_name else ()
    source, root, missing = _root(entry, listing, key)
    if root is None:
        return _with(base, owned=owned, source=source, problem=missing)
    probe = _with(base, owned=owned)
    content = read_plugin(root, name=name, data=probe.data_dir,
                          entry_components=entry.components if entry.components else None,
                          entry_description=entry.description)
    return _with(base, owned=owned, source=source, root=root, content=content, notes=(*renamed, *content.notes))


def _with(plugin: Plugin, **changes: Any) -> Plugin:
    from dataclasses import replace

    return replace(plugin, **changes)


def discover_plugins(project: Path, layers: Iterable[SettingsSource]) -> PluginSet:
    """The plugins ``layers`` (least specific first) name (see the module docstring)."""
    layers = list(layers)
    notes: list[str] = []
    refused: dict[str, str] = {}
    markets = _marketplaces(Path(project), layers, notes, refused)
    choices = _choices(layers, notes)
    files: dict[Path, MarketplaceFile] = {}
    plugins = [_plugin(key, choice, markets.get(KEY_FORM.match(key).group(2)), files,  # type: ignore[union-attr]
                       refused)
               for key, choice in choices.items()]
    for listing in files.values():
        notes.extend(listing.notes)
    watched = [*files, *(path for plugin in plugins if plugin.content for path in plugin.content.manifests)]
    return PluginSet(tuple(plugins), tuple(markets.values()), tuple(notes), tuple(dict.fromkeys(watched)))


def fetch_plugins(project: Path, layers: Iterable[SettingsSource], *, update: bool = False,
                  only: str | None = None) -> list[str]:
    """Clone what the enabled plugins need (their git marketplaces, then their git sources); one line
    for each that could not be. ``update``: fetch again what is already there. ``only``: one
    marketplace or plugin key."""
    layers = list(layers)
    notes: list[str] = []
    markets = _marketplaces(Path(project), layers, [])
    problems: list[str] = []
    for key, choice in _choices(layers, notes).items():
        market = markets.get(key.split("@", 1)[1])
        if not choice.enabled or market is None or (only is not None and only not in (key, market.name)):
            continue
        problem = fetch_git(market.source, market.name, "marketplaces", update=update) if market.source.fetched \
            else None
        if problem is not None:
            problems.append(f"marketplace {market.name}: {problem}")
            continue
        listing = read_marketplace(market.file)
        entry = listing.entries.get(key.split("@", 1)[0])
        if entry is None:
            continue
        source = plugin_source(entry.source, listing.root, listing.plugin_root)
        if source.fetched:
            problem = fetch_git(source, key, "plugins", update=update)
            if problem is not None:
                problems.append(f"plugin {key}: {problem}")
    return problems


def plugin_environ(plugin: Plugin) -> dict[str, str]:
    """The variables a plugin's hooks and servers run with (its root and its data directory)."""
    if plugin.root is None:
        return {}
    os.makedirs(plugin.data_dir, exist_ok=True)
    return {"CLAUDE_PLUGIN_ROOT": str(plugin.root), "CLAUDE_PLUGIN_DATA": str(plugin.data_dir)}
