"""The paths a shell command can reach: its arguments, redirects, inline code and config writes.

Each simple command of the parsed line is read with what we know of the program: readers
only read what they name (some walk whole trees), git reads or writes by subcommand,
everything else may write whatever it names.
"""

from __future__ import annotations

import os
from pathlib import Path

from .path_refs import Access, PathRef, candidates, resolve_all
from .shell_parse import ParsedCommand, SimpleCommand

__all__ = ["command_paths"]

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


def command_paths(project: Path, parsed: ParsedCommand) -> list[PathRef]:
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
            for piece in candidates(word):
                if dynamic:
                    refs.append(PathRef(piece, None, access, f"`{name}` argument"))
                else:
                    refs.extend(resolve_all(project, piece, command.cwd, access, f"`{name}` argument"))
        if _copies_tree(name, command.argv[1:]):
            for ref in refs[start:]:
                ref.recursive = True
        for text in command.inline_paths:
            refs.extend(resolve_all(project, text, command.cwd, "unknown", f"path in `{name}` code"))
        for assignment in command.assignments:
            value = assignment.split("=", 1)[1] if "=" in assignment else ""
            if value:
                refs.extend(resolve_all(project, value, command.cwd, "unknown", "variable assignment"))
        for redirect in command.redirects:
            if redirect.op in ("<<", "<<-", "<<<") or redirect.target.isdigit() or redirect.target == "-":
                continue
            kind: Access = "write" if redirect.op in _WRITE_REDIRECTS else "read"
            if redirect.dynamic:
                refs.append(PathRef(redirect.target, None, kind, f"redirect {redirect.op}"))
            else:
                refs.extend(resolve_all(project, redirect.target, command.cwd, kind, f"redirect {redirect.op}"))
    return refs
