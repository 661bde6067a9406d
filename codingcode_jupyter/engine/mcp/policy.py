"""Which MCP servers may start: Claude Code's ``allowedMcpServers``, ``deniedMcpServers`` and
``managed-mcp.json``, read as Claude Code reads them.

Each list entry has one key: ``serverName`` (the name the server is configured under, matched
exactly), ``serverCommand`` (a stdio server's command and arguments, all of them, in order) or
``serverUrl`` (a remote server's URL; ``*`` matches anything, anywhere, the host is matched
without regard to case or a trailing dot, and a pattern without a path matches every path).

A server is judged in this order, wherever it comes from (``.mcp.json``, a plugin, ``%agent mcp
add``, an editor's session):

1. ``managed-mcp.json`` (in either managed directory) has exclusive control: while one exists,
   only its servers are candidates; every other is refused.
2. A server matching any ``deniedMcpServers`` entry (of any file) is refused; nothing overrides that.
3. If some file sets ``allowedMcpServers`` (the lists add up; ``allowManagedMcpServersOnly``
   keeps the managed files' alone, :mod:`..managed`), a server must match it: a remote server a
   ``serverUrl`` entry, or its name when the list has no ``serverUrl`` entry at all; a stdio
   server a ``serverCommand`` entry, or its name when the list has no ``serverCommand`` entry.
   So a name never lets through a server whose command or URL the list pins down. ``[]``
   allows none. The servers of ``managed-mcp.json`` skip this step, unless their entry names a
   variable (what they run then depends on each person's environment).

Policy entries expand ``${VAR}`` from the kernel's environment (which the managed ``env`` is part
of), never from a project's files; an entry that cannot be read is left out with a note (from an
allowlist that leaves fewer servers allowed, never more).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Literal, Mapping
from urllib.parse import urlsplit

from .config import HttpServerConfig, SseServerConfig, StdioServerConfig, expand_vars

__all__ = ["McpEntry", "McpPolicy", "mcp_policy"]

_NAME = re.compile(r"^[A-Za-z0-9_-]+$")
AnyConfig = StdioServerConfig | HttpServerConfig | SseServerConfig


@dataclass(frozen=True)
class McpEntry:
    """One entry of an allow or deny list, with the file it is in."""

    kind: Literal["serverName", "serverCommand", "serverUrl"]
    value: str | tuple[str, ...]
    path: Path
    managed: bool

    def matches(self, name: str, config: AnyConfig) -> bool:
        if self.kind == "serverName":
            return name == self.value
        if self.kind == "serverCommand":
            return isinstance(config, StdioServerConfig) and (config.command, *config.args) == self.value
        return not isinstance(config, StdioServerConfig) and _url_matches(str(self.value), config.url)


def _split(url: str) -> tuple[str, str, str]:
    """Scheme, host[:port] (lower case, no trailing dot on the host) and the rest of a URL."""
    scheme, _, rest = url.partition("://")
    authority, slash, path = rest.partition("/")
    host, colon, port = authority.rpartition(":") if authority.count(":") == 1 else (authority, "", "")
    host = host.lower().rstrip(".")
    return scheme.lower(), host + colon + port, slash + path


def _glob(pattern: str) -> re.Pattern[str]:
    return re.compile(".*".join(re.escape(part) for part in pattern.split("*")), re.DOTALL)


def _url_matches(pattern: str, url: str) -> bool:
    p_scheme, p_authority, p_path = _split(pattern)
    parts = urlsplit(url)
    scheme, authority, path = _split(f"{parts.scheme}://{parts.netloc}{parts.path or '/'}"
                                     + (f"?{parts.query}" if parts.query else ""))
    if not p_path:
        p_path = "*"
    return bool(_glob(p_scheme).fullmatch(scheme) and _glob(p_authority).fullmatch(authority)
                and _glob(p_path).fullmatch(path))


def _entries(raw: Iterable[Any], path: Path, managed: bool, *, allow: bool, environ: Mapping[str, str],
             notes: list[str]) -> list[McpEntry]:
    key = "allowedMcpServers" if allow else "deniedMcpServers"
    out: list[McpEntry] = []
    for index, item in enumerate(raw):
        where = f"{path}: {key}.{index}"
        if not isinstance(item, dict) or len(item) != 1 or next(iter(item)) not in ("serverName", "serverCommand",
                                                                                      "serverUrl"):
            notes.append(f"{where} is left out: an entry has exactly one of serverName, serverCommand, serverUrl")
            continue
        kind, value = next(iter(item.items()))
        try:
            if kind == "serverName":
                # Names match as written: never expanded.
                if not isinstance(value, str) or not value or (allow and not _NAME.match(value)):
                    raise ValueError("serverName must be a name (letters, digits, '-' and '_' in an allowlist)")
                out.append(McpEntry("serverName", value, path, managed))
            elif kind == "serverCommand":
                if not isinstance(value, list) or not value or not all(isinstance(part, str) for part in value):
                    raise ValueError("serverCommand must be a list of strings: the command, then its arguments")
                expanded = expand_vars(value, environ, where=where)
                out.append(McpEntry("serverCommand", tuple(expanded), path, managed))
            else:
                if not isinstance(value, str) or "://" not in value:
                    raise ValueError("serverUrl must be a URL pattern (https://*.example.com/*)")
                out.append(McpEntry("serverUrl", str(expand_vars(value, environ, where=where)), path, managed))
        except ValueError as error:
            notes.append(f"{where} is left out: {error}")
    return out


@dataclass(frozen=True)
class McpPolicy:
    """The allow and deny lists in force and the ``managed-mcp.json`` files (see the module docstring)."""

    allowed: tuple[McpEntry, ...] | None = None
    denied: tuple[McpEntry, ...] = ()
    managed_files: tuple[Path, ...] = ()
    # The files that set allowedMcpServers (an empty list counts), and whether one is a managed file.
    allowed_in: tuple[Path, ...] = ()
    allowed_by_managed: bool = False
    # Entries that could not be read, one line each.
    notes: tuple[str, ...] = ()

    @property
    def exclusive(self) -> bool:
        return bool(self.managed_files)

    def refusal(self, name: str, config: AnyConfig, *, from_managed_file: bool = False,
                uses_variables: bool = False) -> str | None:
        """Why the server ``name`` (``config``) may not start, in one line; None if it may."""
        if self.exclusive and not from_managed_file:
            only = ", ".join(str(path) for path in self.managed_files)
            return f"refused by your organisation's policy: {only} has exclusive control of MCP servers"
        for entry in self.denied:
            if entry.matches(name, config):
                return f"{_whose(entry)} (deniedMcpServers in {entry.path}: {entry.kind} {_show(entry.value)})"
        if self.allowed is None or (from_managed_file and not uses_variables):
            return None
        remote = not isinstance(config, StdioServerConfig)
        pinned = "serverUrl" if remote else "serverCommand"
        kinds = {entry.kind for entry in self.allowed}
        for entry in self.allowed:
            if entry.kind == pinned or (entry.kind == "serverName" and pinned not in kinds):
                if entry.matches(name, config):
                    return None
        whose = "refused by your organisation's policy" if self.allowed_by_managed else "refused by your settings"
        what = f"its {'URL' if remote else 'command'} is not" if pinned in kinds else "it is not"
        return f"{whose}: {what} in allowedMcpServers ({', '.join(str(path) for path in self.allowed_in)})"


def _whose(entry: McpEntry) -> str:
    return "refused by your organisation's policy" if entry.managed else "refused by your settings"


def _show(value: str | tuple[str, ...]) -> str:
    return " ".join(value) if isinstance(value, tuple) else value


def mcp_policy(layers: Iterable[tuple[Path, str, Any]], managed_files: Iterable[Path] = (),
               environ: Mapping[str, str] | None = None) -> McpPolicy:
    """The policy of settings ``layers`` ((path, level, Settings), as the managed policy let them
    apply) and the ``managed-mcp.json`` files that exist."""
    env = os.environ if environ is None else environ
    notes: list[str] = []
    allowed: list[McpEntry] | None = None
    denied: list[McpEntry] = []
    allowed_in: list[tuple[Path, bool]] = []
    for path, level, settings in layers:
        managed = level == "managed"
        if settings.allowedMcpServers is not None:
            allowed_in.append((path, managed))
            allowed = (allowed or []) + _entries(settings.allowedMcpServers, path, managed, allow=True, environ=env,
                                                 notes=notes)
        denied += _entries(settings.deniedMcpServers, path, managed, allow=False, environ=env, notes=notes)
    return McpPolicy(allowed=tuple(allowed) if allowed is not None else None, denied=tuple(denied),
                     managed_files=tuple(managed_files), notes=tuple(notes),
                     allowed_in=tuple(path for path, _ in allowed_in),
                     allowed_by_managed=any(managed for _, managed in allowed_in))
