"""One plugin's directory read as Claude Code reads it: ``.claude-plugin/plugin.json`` and its parts.

The parts are found where Claude Code looks by default — ``commands/*.md`` (subdirectories as
namespaces), ``agents/*.md``, ``skills/NAME/SKILL.md``, ``hooks/hooks.json``, ``.mcp.json`` —
and where ``plugin.json`` (or a marketplace entry) adds more: ``commands``, ``agents``,
``skills`` as a path or a list of paths (files or directories, relative to the plugin),
``hooks`` as a path, a list, or the hooks themselves, ``mcpServers`` likewise. A path leading
outside the plugin is refused. ``plugin.json`` is optional, as in Claude Code (the name is then
the directory's or the marketplace entry's).

``${CLAUDE_PLUGIN_ROOT}`` (the plugin's directory) and ``${CLAUDE_PLUGIN_DATA}`` (a directory it
may keep data in, which outlives updates) are filled in, in hook commands and MCP server entries,
as Claude Code fills them; command, skill and agent bodies get them when they are used.

Reading is lenient: a part that cannot be read is left out with one line naming the file, the key
and why, and the rest of the plugin applies.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from .marketplace import COMPONENT_KEYS

__all__ = ["PluginServer", "PluginHooks", "PluginContent", "read_plugin", "expand_plugin_vars", "ROOT_VAR",
           "DATA_VAR"]

ROOT_VAR = "CLAUDE_PLUGIN_ROOT"
DATA_VAR = "CLAUDE_PLUGIN_DATA"
_VARS = re.compile(r"\$\{(CLAUDE_PLUGIN_ROOT|CLAUDE_PLUGIN_DATA)\}|\$(CLAUDE_PLUGIN_ROOT|CLAUDE_PLUGIN_DATA)\b")
_MANIFEST_INFO = frozenset({"name", "version", "description", "author", "homepage", "repository", "license",
                            "keywords", "$schema", "displayName", "icon", "category", "tags", "dependencies"})
_UNUSED = {"lspServers": "language servers are not started here", "outputStyles": "answers are rendered as Markdown",
           "userConfig": "plugin options are not asked for here", "channels": "chat channels are not offered here",
           "monitors": "background monitors are not run here", "settings": "a plugin's default settings do not "
           "apply here; write them in your settings file"}
_MAX_FILES = 2000
# Files and folders Claude Code reads in a plugin that bring nothing here: said when present.
_UNUSED_FILES = {".lsp.json": "language servers are not started here",
                 "output-styles": "answers are rendered as Markdown; output styles do not apply",
                 "settings.json": "a plugin's default settings do not apply here; write them in your settings file",
                 "monitors": "background monitors are not run here",
                 "bin": "its programs are not put on the commands' PATH here; name them by ${CLAUDE_PLUGIN_ROOT}/bin"}


@dataclass(frozen=True)
class PluginServer:
    """One MCP server a plugin brings: its name in the plugin, its entry (variables filled in), its file."""

    name: str
    config: dict[str, Any]
    path: Path


@dataclass(frozen=True)
class PluginHooks:
    """The hooks of one hooks file (or of plugin.json's ``hooks``), variables filled in."""

    path: Path
    hooks: dict[str, Any]


@dataclass(frozen=True)
class PluginContent:
    """What a plugin's directory holds, and how it was read."""

    root: Path
    name: str
    description: str = ""
    version: str = ""
    # (name inside the plugin, `sub:cmd` for a subdirectory; file)
    commands: tuple[tuple[str, Path], ...] = ()
    agents: tuple[Path, ...] = ()
    skills: tuple[Path, ...] = ()
    hooks: tuple[PluginHooks, ...] = ()
    servers: tuple[PluginServer, ...] = ()
    # The files whose change changes what the plugin brings (plugin.json, hooks files, .mcp.json).
    manifests: tuple[Path, ...] = ()
    notes: tuple[str, ...] = field(default_factory=tuple)


def expand_plugin_vars(value: Any, root: Path, data: Path) -> Any:
    """``value`` (a string, or a list or object of them) with the plugin's variables filled in."""
    if isinstance(value, str):
        values = {ROOT_VAR: str(root), DATA_VAR: str(data)}
        return _VARS.sub(lambda m: values[m.group(1) or m.group(2)], value)
    if isinstance(value, list):
        return [expand_plugin_vars(item, root, data) for item in value]
    if isinstance(value, dict):
        return {key: expand_plugin_vars(item, root, data) for key, item in value.items()}
    return value


class _Reader:
    """Reads one plugin directory, collecting what was left out (``notes``)."""

    def __init__(self, root: Path, data: Path) -> None:
        self.root = root
        self.real_root = Path(os.path.realpath(root))
        self.data = data
        self.notes: list[str] = []
        self.manifests: list[Path] = []

    def inside(self, written: Any, where: str) -> Path | None:
        """The plugin path ``written`` names, when it is a string leading inside the plugin."""
        if not isinstance(written, str) or not written.strip():
            self.notes.append(f"{where}: {written!r} is not a path; left out")
            return None
        path = Path(os.path.realpath(self.root / expand_plugin_vars(written.strip(), self.root, self.data)))
        if path != self.real_root and self.real_root not in path.parents:
            self.notes.append(f"{where}: {written!r} leads outside the plugin; left out")
            return None
        if not path.exists():
            self.notes.append(f"{where}: {written!r} does not exist; left out")
            return None
        return path

    def json(self, path: Path) -> Any:
        from ..config_files import read_config_text

        self.manifests.append(path)
        try:
            return json.loads(read_config_text(path))
        except (OSError, UnicodeDecodeError) as error:
            self.notes.append(f"{path}: cannot be read ({error}); left out")
        except json.JSONDecodeError as error:
            self.notes.append(f"{path}: not valid JSON (line {error.lineno}, column {error.colno}): {error.msg}; "
                              "left out")
        return None

    def paths(self, value: Any, where: str) -> list[Path]:
        written = value if isinstance(value, list) else [value]
        return [path for index, item in enumerate(written)
                if (path := self.inside(item, f"{where}.{index}" if isinstance(value, list) else where)) is not None]


def _md_files(directory: Path) -> list[Path]:
    return sorted(path for path in directory.rglob("*.md") if path.is_file())[:_MAX_FILES]


def _commands(reader: _Reader, extra: list[Path]) -> list[tuple[str, Path]]:
    found: dict[str, Path] = {}
    for base in [reader.root / "commands", *extra]:
        if base.is_file():
            found.setdefault(base.stem, base)
        elif base.is_dir():
            for path in _md_files(base):
                found.setdefault(":".join(path.relative_to(base).with_suffix("").parts), path)
    return sorted(found.items())


def _agents(reader: _Reader, extra: list[Path]) -> list[Path]:
    found: list[Path] = []
    for base in [reader.root / "agents", *extra]:
        for path in ([base] if base.is_file() else _md_files(base) if base.is_dir() else []):
            if path not in found:
                found.append(path)
    return found


def _skills(reader: _Reader, extra: list[Path]) -> list[Path]:
    found: list[Path] = []
    for base in [reader.root / "skills", *extra]:
        candidates = [base] if (base / "SKILL.md").is_file() else sorted(base.iterdir()) if base.is_dir() else []
        for directory in candidates:
            skill = directory / "SKILL.md"
            if skill.is_file() and skill not in found:
                found.append(skill)
    return found


def _hooks(reader: _Reader, declared: list[tuple[Any, str]]) -> list[PluginHooks]:
    """The default hooks/hooks.json, then each declared value (a path, a list, or the hooks inline)."""
    out: list[PluginHooks] = []
    values: list[tuple[Any, str, Path | None]] = []
    default = reader.root / "hooks" / "hooks.json"
    if default.is_file():
        values.append((reader.json(default), str(default), default))
    for value, where in declared:
        for index, item in enumerate(value if isinstance(value, list) else [value]):
            if isinstance(item, str):
                path = reader.inside(item, f"{where}.{index}" if isinstance(value, list) else where)
                if path is not None and path != default:
                    values.append((reader.json(path), str(path), path))
            else:
                values.append((item, where, None))
    for raw, where, path in values:
        if raw is None:
            continue
        # A hooks file holds {"hooks": {EVENT: [...]}}; plugin.json's `hooks` may be {EVENT: [...]} itself.
        hooks = raw.get("hooks") if isinstance(raw, dict) and "hooks" in raw else raw
        if not isinstance(hooks, dict):
            shape = "a list" if isinstance(hooks, list) else type(hooks).__name__
            reader.notes.append(f"{where}: hooks — must be an object keyed by event name (PreToolUse, Stop, ...), "
                                f"not {shape}; its hooks are left out (Claude Code does not load them either)")
            continue
        out.append(PluginHooks(path or reader.root / ".claude-plugin" / "plugin.json",
                               expand_plugin_vars(hooks, reader.root, reader.data)))
    return out


def _server_map(raw: Any) -> dict[str, Any] | None:
    """The servers of an MCP file or value: under ``mcpServers``, or the object itself (Claude Code
    reads a plugin's ``.mcp.json`` either way)."""
    if not isinstance(raw, dict):
        return None
    inner = raw.get("mcpServers")
    return inner if isinstance(inner, dict) else raw


def _servers(reader: _Reader, declared: list[tuple[Any, str]]) -> list[PluginServer]:
    values: list[tuple[Any, Path]] = []
    default = reader.root / ".mcp.json"
    manifest = reader.root / ".claude-plugin" / "plugin.json"
    if default.is_file():
        values.append((reader.json(default), default))
    for value, where in declared:
        for index, item in enumerate(value if isinstance(value, list) else [value]):
            if isinstance(item, str):
                path = reader.inside(item, f"{where}.{index}" if isinstance(value, list) else where)
                if path is not None and path != default:
                    values.append((reader.json(path), path))
            else:
                values.append((item, manifest))
    out: dict[str, PluginServer] = {}
    for raw, path in values:
        servers = _server_map(raw) if raw is not None else {}
        if servers is None:
            reader.notes.append(f"{path}: MCP servers must be an object of name → entry; left out")
            continue
        for name, entry in servers.items():
            if not isinstance(entry, dict):
                reader.notes.append(f"{path}: server {name!r} is not an object; left out")
            elif name not in out:
                out[name] = PluginServer(name, expand_plugin_vars(entry, reader.root, reader.data), path)
    return list(out.values())


def _manifest(reader: _Reader) -> dict[str, Any]:
    path = reader.root / ".claude-plugin" / "plugin.json"
    if not path.is_file():
        return {}
    raw = reader.json(path)
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        reader.notes.append(f"{path}: the top level must be a JSON object; only the default folders are read")
        return {}
    for key in raw:
        if key in _UNUSED:
            reader.notes.append(f"{path}: {key} — {_UNUSED[key]}")
        elif key not in _MANIFEST_INFO and key not in COMPONENT_KEYS:
            reader.notes.append(f"{path}: {key} — not a plugin.json key codingcode knows; left out")
    return raw


def read_plugin(root: Path, *, name: str, data: Path, entry_components: dict[str, Any] | None = None,
                entry_description: str = "") -> PluginContent:
    """What the plugin at ``root`` brings (see the module docstring). ``entry_components`` are the
    parts its marketplace entry declares; ``data`` is its ``${CLAUDE_PLUGIN_DATA}``."""
    reader = _Reader(root, data)
    manifest = _manifest(reader)
    where = str(root / ".claude-plugin" / "plugin.json")
    declared: dict[str, list[tuple[Any, str]]] = {key: [] for key in COMPONENT_KEYS}
    for source, values in ((where, manifest), ("marketplace entry", entry_components or {})):
        for key in COMPONENT_KEYS:
            if key in values:
                declared[key].append((values[key], f"{source}: {key}"))

    def extra(key: str) -> list[Path]:
        return [path for value, at in declared[key] for path in reader.paths(value, at)]

    content = PluginContent(
        root=root,
        name=str(manifest.get("name") or name),
        description=str(manifest.get("description") or entry_description or ""),
        version=str(manifest.get("version") or ""),
        commands=tuple(_commands(reader, extra("commands"))),
        agents=tuple(_agents(reader, extra("agents"))),
        skills=tuple(_skills(reader, extra("skills"))),
        hooks=tuple(_hooks(reader, declared["hooks"])),
        servers=tuple(_servers(reader, declared["mcpServers"])),
    )
    unused = [f"{root / name}: {why}" for name, why in _UNUSED_FILES.items() if (root / name).exists()]
    return replace(content, manifests=tuple(dict.fromkeys(reader.manifests)), notes=(*reader.notes, *unused))
