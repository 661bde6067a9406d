"""One tool call as the rules see it: its command parsed, its paths canonicalised.

Built once per call, so every layer and every built-in rule judges the same facts: the
simple commands bash will run, and each path the call can reach, resolved the way the
filesystem will resolve it (symlinks, ``..``, ``~``, globs, brace lists).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from .command_paths import command_paths
from .path_refs import Access, PathRef, resolve_all
from .paths import canonical
from .shell_parse import ParsedCommand, SimpleCommand, expand_braces, parse_command

__all__ = ["PathRef", "Subject", "build_subject", "READ_ONLY_TOOLS", "EDIT_TOOLS", "COMMAND_TOOLS", "expand_braces"]

READ_ONLY_TOOLS = frozenset(
    {"read_file", "search_code", "search_files", "fetch_url", "web_search", "dispatch_agent", "todo_write"}
)
EDIT_TOOLS = frozenset({"write_file", "edit_file"})
COMMAND_TOOLS = frozenset({"execute_command"})
# How each built-in file tool touches its `path`.
_PATH_TOOL_ACCESS = {"read_file": "read", "write_file": "write", "edit_file": "write", "search_code": "tree",
                     "search_files": "list"}
_PATH_KEYS = frozenset({"path", "file_path", "filepath", "filename", "file", "dir", "directory", "cwd", "source",
                        "destination", "dest", "target", "paths", "files", "root", "src", "dst", "notebook_path"})
_MAIN_ARG = {"fetch_url": "url", "web_search": "query", "dispatch_agent": "agent"}
# Commands whose path arguments are only read; anything else may write what it names.

@dataclass
class Subject:
    """Everything the layers judge about one call."""

    tool: str
    name: str
    input: dict[str, Any]
    project: Path
    read_only: bool
    source: str
    command: ParsedCommand | None = None
    paths: list[PathRef] = field(default_factory=list)
    main: str | None = None

    @property
    def is_command(self) -> bool:
        return self.command is not None

    @property
    def judged_commands(self) -> list[SimpleCommand]:
        """Simple commands an allow rule must cover (`bash -c` shells are covered by their script)."""
        return [c for c in self.command.commands if not c.container] if self.command else []


def _path_like(value: str) -> bool:
    return 0 < len(value) < 4096 and "\n" not in value and (
        "/" in value or value.startswith("~") or value.startswith(".")
    )


def _walk_strings(value: Any, depth: int = 0):
    if depth > 6:
        return
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _walk_strings(item, depth + 1)
    elif isinstance(value, list):
        for item in value[:200]:
            yield from _walk_strings(item, depth + 1)


def build_subject(tool: Any, raw_input: dict[str, Any], project: Path) -> Subject:
    """The facts about calling ``tool`` (a ToolDefinition) with ``raw_input`` in ``project``."""
    project = Path(os.path.realpath(project))
    name = getattr(tool, "name", str(tool))
    display = getattr(tool, "display_name", None) or name
    source = getattr(tool, "source", "builtin")
    subject = Subject(
        tool=display, name=name, input=dict(raw_input), project=project,
        read_only=bool(getattr(tool, "read_only", False)), source=source,
    )
    if source == "builtin" and name in COMMAND_TOOLS:
        command = raw_input.get("command")
        text = command if isinstance(command, str) else ""
        cwd_arg = raw_input.get("cwd")
        cwd = str(canonical(project, cwd_arg)) if isinstance(cwd_arg, str) and cwd_arg else str(project)
        subject.command = parse_command(text, cwd=cwd)
        if not isinstance(command, str):
            subject.command.unresolved.append("the command is missing or not a string")
        subject.paths = command_paths(project, subject.command)
        if isinstance(cwd_arg, str) and cwd_arg:
            subject.paths.extend(resolve_all(project, cwd_arg, None if False else str(project), "read", "cwd"))
        return subject
    if source == "builtin" and name in _PATH_TOOL_ACCESS:
        access = _PATH_TOOL_ACCESS[name]
        path = raw_input.get("path", ".")
        if isinstance(path, str):
            subject.main = path
            subject.paths.extend(resolve_all(project, path, str(project), access, f"{name} path"))
    elif source == "builtin" and name in _MAIN_ARG:
        value = raw_input.get(_MAIN_ARG[name])
        subject.main = value if isinstance(value, str) else None
        if name == "fetch_url" and isinstance(value, str) and value.lower().startswith("file:"):
            local = unquote(urlparse(value).path)
            subject.paths.extend(resolve_all(project, local or "/", str(project), "read", "file URL"))
    seen = {ref.raw for ref in subject.paths}
    for key, value in raw_input.items():
        if key.lower() in _PATH_KEYS:
            for text in _walk_strings(value):
                if text not in seen:
                    seen.add(text)
                    access: Access = "write" if name in EDIT_TOOLS else "unknown"
                    subject.paths.extend(resolve_all(project, text, str(project), access, f"{display} {key}"))
    if source != "builtin":
        # A tool we did not write can reach any path named in any argument.
        for text in _walk_strings(raw_input):
            # A whole argument may be a path; so may any word of a longer one (`{"cmd": "cat /etc/shadow"}`).
            words = [text] + (re.split(r"[\s'\"=,;:()<>|&]+", text)[:200] if len(text) < 100_000 else [])
            for word in words:
                if word not in seen and _path_like(word):
                    seen.add(word)
                    subject.paths.extend(resolve_all(project, word, str(project), "unknown", f"{display} argument"))
    if subject.main is None and name not in _PATH_TOOL_ACCESS and name not in _MAIN_ARG:
        subject.main = json.dumps(raw_input, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return subject
