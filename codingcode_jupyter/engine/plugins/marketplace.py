"""A marketplace's ``.claude-plugin/marketplace.json``, read as Claude Code reads it.

``{"name", "owner", "metadata": {"pluginRoot"?}, "plugins": [{"name", "source", "description"?,
"version"?, "strict"?, "commands"?, "agents"?, "skills"?, "hooks"?, "mcpServers"?, ...}]}``.
The directory holding ``.claude-plugin/`` is the marketplace's root: relative plugin sources start
there. Claude Code ignores keys it does not know; so do we, and each entry that cannot be used is
left out with one line naming the file, the entry and why, the others still load.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["MarketEntry", "MarketplaceFile", "read_marketplace", "marketplace_file", "COMPONENT_KEYS"]

# What a marketplace entry (or a plugin.json) may declare of a plugin's parts.
COMPONENT_KEYS = ("commands", "agents", "skills", "hooks", "mcpServers")
# Informational keys of an entry (no effect), and those of Claude Code's that do nothing here.
_INFO_KEYS = frozenset({"name", "source", "description", "version", "author", "homepage", "repository", "license",
                        "keywords", "category", "tags", "strict", "$schema", "displayName", "icon"})
_UNUSED = {"lspServers": "language servers are not started here", "outputStyles": "answers are rendered as Markdown",
           "userConfig": "plugin options are not asked for here", "channels": "chat channels are not offered here",
           "monitors": "background monitors are not run here"}


@dataclass(frozen=True)
class MarketEntry:
    """One plugin a marketplace lists."""

    name: str
    source: Any
    description: str = ""
    version: str = ""
    # False: the entry is the whole manifest (no plugin.json needed).
    strict: bool = True
    # commands / agents / skills / hooks / mcpServers the entry declares, as written.
    components: dict[str, Any] = field(default_factory=dict)


@dataclass
class MarketplaceFile:
    """What a marketplace file holds: its name, its root, its plugins, and notes on what was left out."""

    path: Path
    root: Path
    name: str | None = None
    plugin_root: str | None = None
    entries: dict[str, MarketEntry] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    problem: str | None = None


def marketplace_file(tree: Path, inside: str | None = None) -> Path:
    """The marketplace file of a directory (``.claude-plugin/marketplace.json``), or the file or
    directory ``inside`` names within it (a source's ``path``)."""
    base = tree / inside if inside else tree
    if base.suffix == ".json":
        return base
    nested = base / ".claude-plugin" / "marketplace.json"
    return nested if nested.exists() or not (base / "marketplace.json").exists() else base / "marketplace.json"


def _entry(raw: Any, index: int, where: str, notes: list[str]) -> MarketEntry | None:
    if not isinstance(raw, dict):
        notes.append(f"{where}: plugins.{index} is not an object; left out")
        return None
    name = raw.get("name")
    if not isinstance(name, str) or not name.strip():
        notes.append(f"{where}: plugins.{index} has no `name`; left out")
        return None
    if "source" not in raw:
        notes.append(f"{where}: plugins.{index} ({name}) has no `source`; left out")
        return None
    for key in raw:
        if key in _UNUSED:
            notes.append(f"{where}: plugins.{index} ({name}).{key} — {_UNUSED[key]}")
        elif key not in _INFO_KEYS and key not in COMPONENT_KEYS:
            notes.append(f"{where}: plugins.{index} ({name}).{key} — not a marketplace entry key; left out")
    strict = raw.get("strict", True)
    return MarketEntry(name=name.strip(), source=raw["source"], description=str(raw.get("description") or ""),
                       version=str(raw.get("version") or ""), strict=strict is not False,
                       components={key: raw[key] for key in COMPONENT_KEYS if key in raw})


def read_marketplace(path: Path) -> MarketplaceFile:
    """The marketplace file at ``path`` (lenient: see the module docstring)."""
    from ..config_files import read_config_text

    root = path.parent.parent if path.parent.name == ".claude-plugin" else path.parent
    market = MarketplaceFile(path=path, root=root)
    try:
        data = json.loads(read_config_text(path))
    except FileNotFoundError:
        market.problem = f"{path} does not exist"
        return market
    except (OSError, UnicodeDecodeError) as error:
        market.problem = f"{path} cannot be read: {error}"
        return market
    except json.JSONDecodeError as error:
        market.problem = f"{path}: not valid JSON (line {error.lineno}, column {error.colno}): {error.msg}"
        return market
    if not isinstance(data, dict):
        market.problem = f"{path}: the top level must be a JSON object"
        return market
    market.name = data.get("name") if isinstance(data.get("name"), str) else None
    metadata = data.get("metadata")
    if isinstance(metadata, dict) and isinstance(metadata.get("pluginRoot"), str):
        market.plugin_root = metadata["pluginRoot"]
    plugins = data.get("plugins")
    if not isinstance(plugins, list):
        market.problem = f"{path}: `plugins` must be a list of entries"
        return market
    for index, raw in enumerate(plugins):
        entry = _entry(raw, index, str(path), market.notes)
        if entry is not None:
            if entry.name in market.entries:
                market.notes.append(f"{path}: plugins.{index} ({entry.name}) is listed twice; the first is used")
                continue
            market.entries[entry.name] = entry
    return market
