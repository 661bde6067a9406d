"""What a project's own files ask for that loosens the agent, item by item.

Only a project the person trusted may loosen: allow rules, directories outside the project
read without asking (``additionalDirectories``), a default mode looser than ``default``, hook commands, MCP servers, settings that widen the sandbox (``allowWrite``,
``allowedDomains``, ``enabled: false``, ``env``), ``env`` for commands and hooks, a
web-search backend (it receives queries and maybe a key), an agent profile's permission
mode looser than ``plan`` (it could loosen the mode of the session that runs it), and a plugin the
project enables (its commands, agents, skills, hooks and MCP servers, as a whole). Claude
Code's project files (``.claude/``) are project files like ours. Everything that only tightens
(deny and ask rules, stricter modes, a stricter sandbox) applies at once.

Each item has a fingerprint over exactly what would run — for a hook or a stdio server that
includes the contents of the project files its command line names — so a changed hook
script is a new item, asked about again, while the others stay trusted.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ..approval.display import escape_unicode
from ..settings import MODE_STRICTNESS, PermissionMode, Settings

__all__ = ["TrustItem", "ItemKind", "settings_items", "file_digest", "referenced_files", "mcp_items", "profile_items",
           "tool_grant_items", "plugin_items", "plugin_summary", "plugin_digest"]

ItemKind = Literal["allow", "directory", "mode", "hook", "mcp", "sandbox", "env", "webSearch", "agentMode", "toolGrant",
                   "plugin"]


@dataclass(frozen=True)
class TrustItem:
    """One thing a project asks for: what, from which file, exactly as it would run."""

    kind: ItemKind
    source: str
    path: Path
    summary: str
    detail: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)
    # Project files the item runs (hook scripts, server programs): relative path -> sha256.
    files: dict[str, str] = field(default_factory=dict, compare=False, hash=False)
    fingerprint: str = ""


def file_digest(path: Path) -> str | None:
    try:
        with open(path, "rb") as handle:
            return hashlib.file_digest(handle, "sha256").hexdigest()
    except OSError:
        return None


# How Claude Code's documentation names a hook script: through the project directory's variable.
_PROJECT_DIR_VAR = re.compile(r"\$\{CLAUDE_PROJECT_DIR\}|\$CLAUDE_PROJECT_DIR\b")
# A missing file a command line names is recorded as such: a script added later is a change.
ABSENT = "absent"
_PATH_LIKE = re.compile(r"[\w.~+@][\w./~+@-]*")


def referenced_files(project: Path, words: list[str], cwd: Path | None = None) -> dict[str, str]:
    """The project files named by ``words`` (a command line split), with their contents' hashes.

    A word is read as a path from the project (or ``cwd``, where the command runs), with
    ``$CLAUDE_PROJECT_DIR`` standing for the project; a path-like word (with a ``/`` or a
    suffix) naming no file yet is recorded as absent, so the file appearing later changes
    what was trusted.
    """
    root = Path(os.path.realpath(project))
    bases = [root] if cwd is None else [Path(os.path.realpath(root / cwd)), root]
    found: dict[str, str] = {}
    for word in words:
        word = _PROJECT_DIR_VAR.sub(lambda _: str(root), word)
        for piece in dict.fromkeys((word, word.split("=", 1)[-1])):
            expanded = os.path.expanduser(piece)
            for base in bases:
                try:
                    resolved = Path(os.path.realpath(Path(base) / expanded))
                except (OSError, ValueError):
                    continue
                if resolved != root and root not in resolved.parents:
                    continue
                name = resolved.relative_to(root).as_posix()
                if resolved.is_file():
                    digest = file_digest(resolved)
                    if digest is not None:
                        found[name] = digest
                elif not resolved.exists() and _PATH_LIKE.fullmatch(piece) and ("/" in piece or Path(piece).suffix):
                    found.setdefault(name, ABSENT)
    return found


def _split(command: str) -> list[str]:
    try:
        return shlex.split(command)
    except ValueError:
        return command.split()


def card_text(text: str) -> str:
    """``text`` as the trust card shows it: one line, every invisible or look-alike character escaped.

    What the card lists is what the person agrees to run; a carriage return, an escape
    sequence, a right-to-left override or a Cyrillic letter must not make it read as
    something else.
    """
    return escape_unicode(text).replace("\n", "\\n").replace("\t", "\\t")


def make_item(kind: ItemKind, source: str, path: Path, summary: str, detail: dict[str, Any],
              files: dict[str, str] | None = None) -> TrustItem:
    files = dict(files or {})
    summary = card_text(summary)
    payload = json.dumps([kind, source, detail, files], sort_keys=True, ensure_ascii=False, default=str)
    return TrustItem(kind, source, path, summary, detail, files, hashlib.sha256(payload.encode()).hexdigest())


def _hook_items(project: Path, source: str, path: Path, settings: Settings) -> list[TrustItem]:
    items = []
    for event in type(settings.hooks).model_fields:
        for matcher in getattr(settings.hooks, event):
            for hook in matcher.hooks:
                if hook.type not in ("command", "http", "prompt"):
                    continue  # runs nothing here
                detail: dict[str, Any] = {"event": event, "matcher": matcher.matcher, "command": hook.command}
                if hook.type != "command":  # (a command hook's detail is as it always was: trusted ones stay so)
                    detail.update(type=hook.type, url=hook.url, headers=sorted(hook.headers),
                                  env=hook.allowedEnvVars, prompt=hook.prompt, model=hook.model)
                files = referenced_files(project, _split(hook.command)) if hook.type == "command" else {}
                items.append(make_item("hook", source, path, f"{event} hook (tools {matcher.matcher or '*'}): "
                                       f"{_hook_action(hook)}", detail, files))
    return items


def _hook_action(hook: Any) -> str:
    """What a hook does, as the card says it: the command line, where it sends the event, what it asks."""
    if hook.type == "http":
        sends = f"; with your {', '.join('$' + v for v in hook.allowedEnvVars)}" if hook.allowedEnvVars else ""
        return f"sends each event to {hook.url} (headers: {', '.join(sorted(hook.headers)) or 'none'}{sends})"
    if hook.type == "prompt":
        return f"asks a model ({hook.model or 'haiku'}) about each event: `{hook.prompt}`"
    return f"runs `{hook.command}`"


def settings_items(project: Path, source: str, path: Path, settings: Settings,
                   floor: PermissionMode = "default") -> list[TrustItem]:
    """The loosening items of one settings file (see the module docstring).

    ``floor`` is the mode a project file may set without trust: ``default``, or the
    person's own stricter one (their ``plan`` is not undone by a cloned project's ``default``).
    """
    items: list[TrustItem] = []
    for rule in settings.permissions.allow:
        items.append(make_item("allow", source, path, f"allow rule `{rule}`", {"rule": rule}))
    for entry in settings.permissions.additionalDirectories:
        items.append(make_item("directory", source, path, f"let the agent read `{entry}`, outside the project, without "
                               "asking (permissions.additionalDirectories)", {"value": entry}))
    for key, mode in (("permissions.defaultMode", settings.permissions.defaultMode), ("defaultMode", settings.defaultMode)):
        if mode is not None and MODE_STRICTNESS[mode] < max(MODE_STRICTNESS["default"], MODE_STRICTNESS[floor]):
            items.append(make_item("mode", source, path, f"default permission mode `{mode}` ({key})",
                                   {"key": key, "mode": mode}))
    items.extend(_hook_items(project, source, path, settings))
    sandbox = settings.sandbox
    if sandbox.autoAllow:
        items.append(make_item("sandbox", source, path, "run sandboxed commands without asking (sandbox.autoAllow)",
                               {"key": "autoAllow", "value": True}))
    if not sandbox.enabled:
        items.append(make_item("sandbox", source, path, "turn the command sandbox off (sandbox.enabled: false)",
                               {"key": "enabled", "value": False}))
    if not sandbox.confineKernelCode:
        items.append(make_item("sandbox", source, path, "run the agent's code in the kernel itself, unconfined "
                               "(sandbox.confineKernelCode: false)", {"key": "confineKernelCode", "value": False}))
    for entry in sandbox.filesystem.allowWrite:
        items.append(make_item("sandbox", source, path, f"let sandboxed commands write `{entry}` (sandbox.filesystem.allowWrite)",
                               {"key": "allowWrite", "value": entry}))
    for domain in sandbox.network.allowedDomains or []:
        items.append(make_item("sandbox", source, path, f"let sandboxed commands reach `{domain}` (sandbox.network.allowedDomains)",
                               {"key": "allowedDomains", "value": domain}))
    for name in sandbox.env:
        items.append(make_item("sandbox", source, path, f"pass the kernel's `{name}` into sandboxed commands (sandbox.env)",
                               {"key": "env", "value": name}))
    for name, value in settings.env.items():
        items.append(make_item("env", source, path, f"set `{name}` for commands and hooks (env)", {"name": name, "value": value}))
    search = settings.webSearch
    if search.backend not in (None, "anthropic"):
        where = search.url or "its default address"
        key = f", with the key in ${search.apiKeyEnv}" if search.apiKeyEnv else ""
        items.append(make_item("webSearch", source, path, f"send web searches to the {search.backend} backend at {where}{key}",
                               search.model_dump()))
    return items


def _variables_used(config: Any) -> list[str]:
    """The person's environment variables a server entry expands (``${VAR}``), in its URL, headers,
    command, args or env: their values go to the server, so the card names them."""
    from ..mcp.config import variables_named

    return sorted(set(variables_named(config)) - {"CLAUDE_PROJECT_DIR"})


def mcp_items(project: Path) -> list[TrustItem]:
    """The servers the project's ``.mcp.json`` would start or connect to, as written there."""
    path = Path(project) / ".mcp.json"
    from ..config_files import read_config_text

    try:
        data = json.loads(read_config_text(path))
    except (OSError, ValueError):
        return []  # a missing or broken file starts nothing (the MCP manager reports a broken one)
    from ..mcp.config import safe_server_name

    servers = data.get("mcpServers") if isinstance(data, dict) else None
    items = []
    for raw_name, config in (servers or {}).items() if isinstance(servers, dict) else []:
        if not isinstance(config, dict) or not isinstance(raw_name, str):
            continue
        name = safe_server_name(raw_name) or raw_name
        uses = _variables_used(config)
        sends = f"; with your {', '.join('$' + v for v in uses)}" if uses else ""
        if "url" in config:
            headers = ", ".join(sorted(config.get("headers") or {})) or "none"
            summary = f"MCP server `{name}`: connects to {config['url']} (headers: {headers}{sends})"
            files: dict[str, str] = {}
        else:
            words = [str(config.get("command", "")), *[str(a) for a in config.get("args") or []]]
            env = ", ".join(sorted(config.get("env") or {})) or "none"
            where = f" in {config['cwd']}" if config.get("cwd") else ""
            summary = f"MCP server `{name}`: runs `{shlex.join(words)}`{where} (env: {env}{sends})"
            cwd = config.get("cwd") if isinstance(config.get("cwd"), str) else None
            files = referenced_files(project, words, Path(_PROJECT_DIR_VAR.sub(lambda _: str(project), cwd))
                                     if cwd else None)
        items.append(make_item("mcp", ".mcp.json", path, summary, {"name": name, "config": config}, files))
    return items


def _relative(project: Path, path: Path) -> str:
    try:
        return Path(path).relative_to(project).as_posix()
    except ValueError:
        return str(path)


def profile_items(project: Path) -> list[TrustItem]:
    """The project's agent profiles whose permission mode is looser than ``plan``.

    Such a mode could loosen the session that runs the profile, so it applies only once
    trusted; until then the profile's mode only tightens. A stricter mode needs no trust.
    """
    from ..agents.profiles import ProfileError, load_profile_file, profile_files, project_profile_dirs

    items = []
    for source, directory in project_profile_dirs(project):
        for path in profile_files(directory):
            try:
                profile = load_profile_file(path, source)
            except ProfileError:
                continue  # a broken profile runs nothing (asking for it reports the error)
            mode = profile.permission_mode
            if mode is None or MODE_STRICTNESS[mode] >= MODE_STRICTNESS["plan"]:
                continue
            summary = f"agent profile `{profile.name}` runs in permission mode `{mode}`, even when the session is stricter"
            # The whole file is what runs in that mode: a new tool or prompt is asked about again.
            digest = file_digest(path) or ""
            items.append(make_item("agentMode", source, path, summary, {"profile": profile.name, "mode": mode,
                                                                        "file": str(path)}, {_relative(project, path): digest}))
    return items


def tool_grant_items(project: Path) -> list[TrustItem]:
    """The project's slash commands and skills whose ``allowed-tools`` allow tools for a turn.

    Like an allow rule in a settings file, they loosen the agent, so they apply only once trusted.
    """
    kinds = ("commands", "skills")
    if not any((Path(project) / base / kind).is_dir() for base in (".claude", ".codingcode") for kind in kinds):
        return []  # nothing to read: the readers are not even imported (settings load on every change)
    from ..commands import load_commands
    from ..skills import load_skills

    items = []
    grants = [(c.source, c.path, f"/{c.name}", c.allowed_tools) for c in load_commands(project, skills=False).listed()
              if c.from_project]
    grants += [(s.source, s.path, f"skill {s.name}", s.allowed_tools) for s in load_skills(project).listed()
               if s.from_project]
    for source, path, label, rules in grants:
        if not rules:
            continue
        summary = f"{label} allows {', '.join(f'`{rule}`' for rule in rules)} without asking, for the turn it runs in"
        items.append(make_item("toolGrant", source, path, summary, {"rules": list(rules), "file": str(path)},
                               {_relative(project, path): file_digest(path) or ""}))
    return items


# -- plugins a project enables ----------------------------------------------------------------------------

_PLUGIN_FILES = 2000
_PLUGIN_BYTES = 64 << 20


def plugin_digest(root: Path) -> str:
    """One hash over every file of a plugin's directory (names and contents, `.git` left out): a
    changed command, hook script or server is a changed plugin, asked about again."""
    digest = hashlib.sha256()
    seen, size = 0, 0
    for base, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != ".git")
        for name in sorted(names):
            path = Path(base) / name
            seen += 1
            try:
                size += path.stat().st_size
            except OSError:
                continue
            if seen > _PLUGIN_FILES or size > _PLUGIN_BYTES:
                digest.update(b"\0too large\0")
                return digest.hexdigest()
            digest.update(path.relative_to(root).as_posix().encode() + b"\0" + (file_digest(path) or "").encode())
    return digest.hexdigest()


def _server_line(name: str, config: dict[str, Any]) -> str:
    if "url" in config:
        headers = ", ".join(sorted(config.get("headers") or {})) or "none"
        return f"MCP server `{name}` connects to {config['url']} (headers: {headers})"
    words = [str(config.get("command", "")), *[str(a) for a in config.get("args") or []]]
    env = ", ".join(sorted(config.get("env") or {})) or "none"
    uses = _variables_used(config)
    sends = f"; with your {', '.join('$' + v for v in uses)}" if uses else ""
    return f"MCP server `{name}` runs `{shlex.join(words)}` (env: {env}{sends})"


def plugin_summary(plugin: Any) -> str:
    """What a plugin brings, on one line: its commands, agents, skills, hooks (each command line) and
    MCP servers (each command line or URL), exactly as they would run."""
    from ..plugins.catalog import server_name

    content = plugin.content
    market = plugin.market.source.describe() if plugin.market is not None else "?"
    parts = [f"plugin `{plugin.key}` (marketplace {market}, in {plugin.root})"]
    if content.commands:
        parts.append("commands " + ", ".join(f"/{plugin.qualified(name)}" for name, _ in content.commands))
    if content.skills:
        parts.append("skills " + ", ".join(plugin.qualified(path.parent.name) for path in content.skills))
    if content.agents:
        parts.append("agents " + ", ".join(plugin.qualified(path.stem) for path in content.agents))
    for hooks in content.hooks:
        for event, groups in hooks.hooks.items():
            for group in groups if isinstance(groups, list) else []:
                matcher = group.get("matcher") or "*" if isinstance(group, dict) else "*"
                for hook in group.get("hooks") or [] if isinstance(group, dict) else []:
                    if isinstance(hook, dict):
                        what = f"runs `{hook.get('command', '')}`" if hook.get("type", "command") == "command" else \
                            f"a {hook.get('type')} hook ({hook.get('url') or hook.get('prompt', '')!s:.80})"
                        parts.append(f"{event} hook (tools {matcher}) {what}")
    for server in content.servers:
        parts.append(_server_line(server_name(plugin, server.name), server.config))
    return "; ".join(parts)


def plugin_items(plugins: Any) -> list[TrustItem]:
    """The plugins a project's files enable (or whose marketplace the project names): everything such a
    plugin brings applies only once trusted, as a whole, asked about again when any file of it changes."""
    items = []
    for plugin in plugins.plugins:
        if not plugin.usable or plugin.owned:
            continue
        detail = {"plugin": plugin.key, "root": str(plugin.root), "enabled_in": str(plugin.enabled_in)}
        items.append(make_item("plugin", "plugin", Path(plugin.enabled_in or plugin.root), plugin_summary(plugin),
                               detail, {f"plugin:{plugin.key}": plugin_digest(plugin.root)}))
    return items
