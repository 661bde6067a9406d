"""What ``%agent plugins`` and ``%agent doctor`` say of the plugins: each one named, whether it is on and
why, what it adds (or why it adds nothing), what of it was left out; and each marketplace known."""

from __future__ import annotations

from typing import Collection

from .catalog import Plugin, PluginSet, server_name
from .marketplace import read_marketplace

__all__ = ["plugin_lines", "marketplace_lines", "adds"]


def adds(plugin: Plugin) -> str:
    """What a plugin brings, in one line (``nothing`` when it brings nothing)."""
    content = plugin.content
    if content is None:
        return "nothing"
    parts = []
    if content.commands:
        parts.append("commands " + ", ".join(f"/{plugin.qualified(name)}" for name, _ in content.commands))
    if content.skills:
        parts.append("skills " + ", ".join(plugin.qualified(path.parent.name) for path in content.skills))
    if content.agents:
        parts.append("agents " + ", ".join(plugin.qualified(path.stem) for path in content.agents))
    events = sorted({event for hooks in content.hooks for event in hooks.hooks})
    if events:
        parts.append(f"hooks ({', '.join(events)})")
    if content.servers:
        parts.append("MCP servers " + ", ".join(server_name(plugin, s.name) for s in content.servers))
    return "; ".join(parts) or "nothing"


def _state(plugin: Plugin, untrusted: Collection[str]) -> str:
    if not plugin.enabled:
        return "off"
    if plugin.problem is not None:
        return f"on, but brings nothing: {plugin.problem}"
    if plugin.key in untrusted:
        return "on, waiting for your trust (%agent trust): none of it applies yet"
    return "on"


def plugin_lines(plugins: PluginSet, untrusted: Collection[str] = ()) -> list[str]:
    """One line per plugin the settings name, then what it adds and the notes on what was left out."""
    lines = []
    for plugin in plugins.plugins:
        whose = "your organisation's" if plugin.managed else "yours" if plugin.owned else "the project's"
        lines.append(f"{plugin.key}: {_state(plugin, untrusted)} ({whose}; enabledPlugins in {plugin.enabled_in})")
        if plugin.content is not None:
            version = f" {plugin.content.version}" if plugin.content.version else ""
            lines.append(f"    {plugin.content.name}{version} in {plugin.root}: adds {adds(plugin)}")
        lines.extend(f"    {note}" for note in plugin.notes)
    return lines


def marketplace_lines(plugins: PluginSet) -> list[str]:
    """Each marketplace known, where it comes from, and the plugins it lists that no file enables."""
    named = {plugin.key for plugin in plugins.plugins}
    lines = []
    for market in plugins.marketplaces:
        whose = {"user": "yours", "managed": "your organisation's"}.get(market.level, "the project's")
        lines.append(f"marketplace {market.name}: {market.source.describe()} ({whose}, {market.declared_in})")
        listing = read_marketplace(market.file)
        if listing.problem is not None:
            fetched = market.source.fetched and not market.tree.is_dir()
            lines.append("    not fetched yet (it is when a session starts, or with %agent plugins update)" if fetched
                         else f"    {listing.problem}")
            continue
        others = sorted(name for name in listing.entries if f"{name}@{market.name}" not in named)
        if others:
            lines.append(f"    also lists: {', '.join(others)} (%agent plugins enable NAME@{market.name})")
    # What of the settings' marketplaces and enabledPlugins was left out (a refused or malformed entry).
    lines.extend(f"left out: {note}" for note in plugins.notes)
    return lines
