"""One tool call as the rules see it: its command parsed, its paths canonicalised.

Built once per call, so every layer and every built-in rule judges the same facts: the
simple commands bash will run, and each path the call can reach, resolved the way the
filesystem will resolve it (symlinks, ``..``, ``~``, globs, brace lists).
"""

from __future__ import annotations

import glob
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import unquote, urlparse

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
_READERS = frozenset({"cat", "less", "more", "head", "tail", "grep", "egrep", "fgrep", "rg", "ag", "wc", "diff", "file",
                      "stat", "ls", "bat", "batcat", "jq", "sort", "uniq", "cut", "nl", "od", "xxd", "hexdump", "strings",
                      "md5sum", "sha256sum", "sha1sum", "cmp", "tac", "base64", "readlink", "realpath", "du", "tree",
                      "echo", "printf", "test", "[", "pytest", "python", "python3", "git", "cd", "pwd", "which", "type"})
_TREE_READERS = frozenset({"rg", "ag", "tree", "du"})
# git subcommands that only read the working tree and repository.
_GIT_READS = frozenset({"status", "log", "diff", "show", "blame", "grep", "ls-files", "ls-tree", "rev-parse", "describe",
                        "shortlog", "cat-file", "rev-list", "reflog", "whatchanged", "annotate", "", "help", "version"})
_GIT_CONFIG_READS = frozenset({"--get", "--get-all", "--get-regexp", "--get-urlmatch", "--list", "-l", "get", "list"})
_WRITE_REDIRECTS = frozenset({">", ">>", ">|", "&>", "&>>", "<>", ">&"})
Access = Literal["read", "write", "tree", "list", "unknown"]


@dataclass
class PathRef:
    """A path a call can reach: as written, resolved (None when unknowable), and how."""

    raw: str
    resolved: Path | None
    access: Access
    via: str
    # The command walks the whole tree under the path (`cp -r`, `tar c`, `zip -r`).
    recursive: bool = False


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


_GLOB = re.compile(r"[*?\[]")


def _candidates(word: str) -> list[str]:
    """Path-like pieces of one argument: itself, the value of `--opt=value`, `-f/path`."""
    out = [word]
    if "=" in word:
        out.append(word.split("=", 1)[1])
    if word.startswith("-") and "/" in word:
        out.append(word[word.index("/"):])
    return [c for c in out if c]


def _resolve_all(project: Path, raw: str, cwd: str | None, access: Access, via: str) -> list[PathRef]:
    refs: list[PathRef] = []
    for word in expand_braces(raw):
        if not os.path.isabs(os.path.expanduser(word)) and cwd is None:
            refs.append(PathRef(word, None, access, via))
            continue
        try:
            resolved = canonical(project, word, cwd)
        except (OSError, ValueError):
            refs.append(PathRef(word, None, access, via))
            continue
        refs.append(PathRef(word, resolved, access, via))
        if _GLOB.search(word):
            base = cwd if cwd is not None else str(project)
            pattern = os.path.join(base, os.path.expanduser(word))
            for match in glob.glob(pattern)[:200]:
                refs.append(PathRef(match, canonical(project, match), access, via))
    return refs


def _short_flag(args: list[str], letters: str, longs: tuple[str, ...] = ()) -> bool:
    return any((a.startswith("-") and not a.startswith("--") and any(ch in a[1:] for ch in letters)) or a in longs
               for a in args)


def _copies_tree(name: str, args: list[str]) -> bool:
    """Commands that read everything under a directory argument (copies, archives)."""
    if name in ("tar", "bsdtar", "rsync", "cpio", "7z", "7za", "rclone", "restic", "borg"):
        return True
    if name in ("cp", "scp", "zip", "chmod", "chown", "chgrp"):
        return _short_flag(args, "rRa", ("--recursive", "--archive"))
    return False


def _git_access(args: list[str]) -> Access:
    sub = next((a for a in args if not a.startswith("-")), "")
    return "read" if sub in _GIT_READS else "unknown"


def _git_config_target(project: Path, command: SimpleCommand) -> list[PathRef]:
    """`git config key value` writes the repository's (or the user's) git configuration."""
    args = command.argv[1:]
    if "config" not in args or any(a in _GIT_CONFIG_READS for a in args):
        return []
    rest = args[args.index("config") + 1:]
    positional = [a for a in rest if not a.startswith("-")]
    writes = len(positional) >= 2 or any(a in ("--unset", "--unset-all", "--add", "--replace-all", "--edit", "-e",
                                               "--rename-section", "--remove-section", "set", "unset", "edit")
                                         for a in rest)
    if not writes:
        return []
    if "--global" in rest:
        target = Path(os.path.realpath(os.path.expanduser("~/.gitconfig")))
    elif "--system" in rest:
        target = Path("/etc/gitconfig")
    else:
        target = Path(os.path.realpath(project)) / ".git" / "config"
    return [PathRef(str(target), target, "write", "`git config`")]


def _command_paths(project: Path, parsed: ParsedCommand) -> list[PathRef]:
    refs: list[PathRef] = []
    for command in parsed.commands:
        name = command.name
        recursive = name in _TREE_READERS or (
            name in ("grep", "egrep", "fgrep") and any(a.startswith("-") and not a.startswith("--") and ("r" in a or "R" in a) or a in ("--recursive", "--dereference-recursive") for a in command.argv[1:])
        )
        access: Access = ("tree" if recursive else "read") if name in _READERS else "unknown"
        if name == "git":
            access = _git_access(command.argv[1:])
            refs.extend(_git_config_target(project, command))
        start = len(refs)
        for index, word in enumerate(command.argv[1:], start=1):
            dynamic = command.dynamic[index] if index < len(command.dynamic) else False
            for piece in _candidates(word):
                if dynamic:
                    refs.append(PathRef(piece, None, access, f"`{name}` argument"))
                else:
                    refs.extend(_resolve_all(project, piece, command.cwd, access, f"`{name}` argument"))
        if _copies_tree(name, command.argv[1:]):
            for ref in refs[start:]:
                ref.recursive = True
        for text in command.inline_paths:
            refs.extend(_resolve_all(project, text, command.cwd, "unknown", f"path in `{name}` code"))
        for assignment in command.assignments:
            value = assignment.split("=", 1)[1] if "=" in assignment else ""
            if value:
                refs.extend(_resolve_all(project, value, command.cwd, "unknown", "variable assignment"))
        for redirect in command.redirects:
            if redirect.op in ("<<", "<<-", "<<<") or redirect.target.isdigit() or redirect.target == "-":
                continue
            kind: Access = "write" if redirect.op in _WRITE_REDIRECTS else "read"
            if redirect.dynamic:
                refs.append(PathRef(redirect.target, None, kind, f"redirect {redirect.op}"))
            else:
                refs.extend(_resolve_all(project, redirect.target, command.cwd, kind, f"redirect {redirect.op}"))
    return refs


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
        subject.paths = _command_paths(project, subject.command)
        if isinstance(cwd_arg, str) and cwd_arg:
            subject.paths.extend(_resolve_all(project, cwd_arg, None if False else str(project), "read", "cwd"))
        return subject
    if source == "builtin" and name in _PATH_TOOL_ACCESS:
        access = _PATH_TOOL_ACCESS[name]
        path = raw_input.get("path", ".")
        if isinstance(path, str):
            subject.main = path
            subject.paths.extend(_resolve_all(project, path, str(project), access, f"{name} path"))
    elif source == "builtin" and name in _MAIN_ARG:
        value = raw_input.get(_MAIN_ARG[name])
        subject.main = value if isinstance(value, str) else None
        if name == "fetch_url" and isinstance(value, str) and value.lower().startswith("file:"):
            local = unquote(urlparse(value).path)
            subject.paths.extend(_resolve_all(project, local or "/", str(project), "read", "file URL"))
    seen = {ref.raw for ref in subject.paths}
    for key, value in raw_input.items():
        if key.lower() in _PATH_KEYS:
            for text in _walk_strings(value):
                if text not in seen:
                    seen.add(text)
                    access: Access = "write" if name in EDIT_TOOLS else "unknown"
                    subject.paths.extend(_resolve_all(project, text, str(project), access, f"{display} {key}"))
    if source != "builtin":
        # A tool we did not write can reach any path named in any argument.
        for text in _walk_strings(raw_input):
            # A whole argument may be a path; so may any word of a longer one (`{"cmd": "cat /etc/shadow"}`).
            words = [text] + (re.split(r"[\s'\"=,;:()<>|&]+", text)[:200] if len(text) < 100_000 else [])
            for word in words:
                if word not in seen and _path_like(word):
                    seen.add(word)
                    subject.paths.extend(_resolve_all(project, word, str(project), "unknown", f"{display} argument"))
    if subject.main is None and name not in _PATH_TOOL_ACCESS and name not in _MAIN_ARG:
        subject.main = json.dumps(raw_input, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return subject
