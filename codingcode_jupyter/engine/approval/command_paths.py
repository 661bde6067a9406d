"""The paths a shell command can reach: its arguments, redirects, inline code and config writes.

Each simple command of the parsed line is read with what we know of the program: printers
name no file at all, readers only read what they name (some walk whole trees), git reads
or writes by subcommand, everything else may write whatever it names, including paths
inside longer words (`-c "Include /etc/shadow"`, `@file`, `file:///etc/shadow`, `host:path`).
Paths a command reaches beyond its words (wrapper options, sed's `w` file, inline code)
come with the command from the parser; symbolic links the line makes are followed.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from ..git_index import repository_top
from .path_refs import Access, PathRef, candidates, resolve_all
from .program_traits import PRINTERS
from .shell_parse import ParsedCommand, SimpleCommand

__all__ = ["command_paths"]

_READERS = frozenset({"cat", "head", "tail", "grep", "egrep", "fgrep", "rg", "ag", "ack", "wc", "diff",
                      "file", "bat", "batcat", "jq", "yq", "sort", "uniq", "cut", "nl", "od", "xxd", "hexdump",
                      "strings", "md5sum", "sha256sum", "sha1sum", "sha512sum", "b2sum", "cksum", "cmp", "tac",
                      "base64", "base32", "readlink", "realpath", "git", "cd", "pushd", "pwd", "zcat", "bzcat",
                      "xzcat", "zless", "column", "fold", "fmt", "pr", "expand", "unexpand", "paste", "join", "comm",
                      "rev", "tr", "awk", "gawk", "mawk", "source", "."})
# Programs that only list names: they print no file's content.
_LISTERS = frozenset({"ls", "tree", "du", "find", "stat", "exa", "eza", "lsd", "fd", "fdfind", "locate", "test", "["})
# git subcommands that only read the working tree and repository.
_GIT_READS = frozenset({"status", "log", "diff", "show", "blame", "grep", "ls-files", "ls-tree", "rev-parse", "describe",
                        "shortlog", "cat-file", "rev-list", "reflog", "whatchanged", "annotate", "", "help", "version",
                        "archive", "format-patch"})
_GIT_CONFIG_READS = frozenset({"--get", "--get-all", "--get-regexp", "--get-urlmatch", "--list", "-l", "get", "list"})
# Options whose value is a message, never a path.
_MESSAGE_OPTIONS = frozenset({"-m", "--message", "--grep", "--author", "--format", "--pretty", "-S", "-G"})
_WRITE_REDIRECTS = frozenset({">", ">>", ">|", "&>", "&>>", "<>", ">&"})
# Programs whose operands are read as whole trees (copies, archives, recursive searches).
_TREE_ALWAYS = frozenset({"rg", "ag", "ack", "tar", "bsdtar", "rsync", "cpio", "7z", "7za", "rclone", "restic", "borg"})


def _short_flag(args: list[str], letters: str, longs: tuple[str, ...] = ()) -> bool:
    return any((a.startswith("-") and not a.startswith("--") and any(ch in a[1:] for ch in letters))
               or any(a == long or a.startswith(long + "=") for long in longs) for a in args)


def _is_tree(name: str, args: list[str]) -> bool:
    """Commands that read everything under a directory operand."""
    if name in _TREE_ALWAYS:
        return True
    if name in ("grep", "egrep", "fgrep"):
        return _short_flag(args, "rR", ("--recursive", "--dereference-recursive", "--directories=recurse")) \
            or _grep_recurses(args)
    if name in ("cp", "scp", "zip", "chmod", "chown", "chgrp", "diff"):
        return _short_flag(args, "rRa", ("--recursive", "--archive"))
    return False


def _grep_recurses(args: list[str]) -> bool:
    """grep told to recurse in a form :func:`_short_flag` does not see: ``-d recurse``, ``-drecurse``,
    ``-id rec``, or a long option abbreviated (``--rec``, ``--dir=rec``); GNU grep takes each."""
    for index, arg in enumerate(args):
        if arg == "--":
            return False
        following = args[index + 1] if index + 1 < len(args) else ""
        if arg.startswith("--"):
            option, equals, value = arg[2:].partition("=")
            if len(option) >= 3 and ("recursive".startswith(option) or "dereference-recursive".startswith(option)):
                return True
            if len(option) >= 3 and "directories".startswith(option) and (value if equals else following).startswith("rec"):
                return True
        elif arg.startswith("-") and "d" in arg[1:]:
            # In a cluster of short options, -d takes the rest of the word (or the next word) as its value.
            value = arg[arg.index("d", 1) + 1:] or following
            if value.startswith("rec"):
                return True
    return False


def _sees_hidden(name: str, args: list[str]) -> bool:
    """Whether a tree walk reads dotfiles such as .env (rg and ag skip them unless told)."""
    if name in ("rg", "ag"):
        return _short_flag(args, ".", ("--hidden", "--unrestricted", "--no-ignore-dot")) or any(
            re.fullmatch(r"-u{2,}", a) or a == "-uu" for a in args)
    return True


def _git_access(args: list[str]) -> Access:
    sub = _git_subcommand(args)
    return "read" if sub in _GIT_READS else "unknown"


def _git_subcommand(args: list[str]) -> str:
    i = 0
    while i < len(args) and args[i].startswith("-"):
        i += 2 if args[i] in ("-C", "-c", "--git-dir", "--work-tree", "--namespace") else 1
    return args[i] if i < len(args) else ""


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


# git grep's and git archive's options that take the next word as their value.
_GIT_GREP_VALUED = frozenset({"-e", "-f", "-A", "-B", "-C", "-m", "--max-count", "--max-depth", "--threads",
                              "--context", "--after-context", "--before-context", "--open-files-in-pager"})
_GIT_ARCHIVE_VALUED = frozenset({"--format", "-o", "--output", "--prefix", "--remote", "--exec", "--add-file",
                                 "--add-virtual-file", "--mtime"})
_PATHSPEC_MAGIC = re.compile(r"[*?\[]|^:")


def _git_tree_reads(project: Path, command: SimpleCommand, links: list[tuple[str, str]]) -> list[PathRef]:
    """`git grep` and `git archive` print every file of the trees they are given (the working
    directory when none is): recursive reads. Without a
    revision, `git grep` reads only what the index tracks; a revision's tree is not read here, so
    then every file under the trees counts."""
    words = command.argv[1:]
    base = command.cwd if command.cwd is not None else str(project)
    index = 0
    # The parser has already moved the command's cwd by `git -C`.
    while index < len(words) and words[index].startswith("-"):
        index += 2 if words[index] in ("-C", "-c", "--git-dir", "--work-tree", "--namespace") else 1
    sub, rest = (words[index], words[index + 1:]) if index < len(words) else ("", [])
    if sub not in ("grep", "archive"):
        return []
    valued = _GIT_GREP_VALUED if sub == "grep" else _GIT_ARCHIVE_VALUED
    before, after = (rest[:rest.index("--")], rest[rest.index("--") + 1:]) if "--" in rest else (rest, [])
    positional: list[str] = []
    skip = False
    for word in before:
        if skip:
            skip = False
        elif word.startswith("-"):
            skip = word in valued
        else:
            positional.append(word)
    if sub == "grep" and not any(w in ("-e", "-f") or w.startswith(("-e", "-f")) for w in before
                                 if not w.startswith("--")):
        positional = positional[1:]  # the pattern
    revision = sub == "archive"
    if sub == "archive":
        positional = positional[1:]  # the tree-ish
    pathspecs = list(after)
    for word in positional:
        if os.path.lexists(os.path.join(base, os.path.expanduser(word))):
            pathspecs.append(word)
        else:
            revision = True
    # Another repository or index than the working tree's (`--git-dir`, GIT_INDEX_FILE=, a wrapper
    # that may set one): what the working tree's index tracks says nothing.
    elsewhere = command.wrappers or command.assignments or any(
        w.split("=", 1)[0] in ("--git-dir", "--work-tree") for w in words[:index])
    tracked = sub == "grep" and not revision and not elsewhere and not any(w in ("--no-index", "--untracked")
                                                                           for w in before)
    if not pathspecs or any(_PATHSPEC_MAGIC.search(p) for p in pathspecs):
        # No pathspec reads the working directory; a glob or magic pathspec matches at any depth
        # under it (`:/` from the repository's top).
        top = repository_top(Path(os.path.realpath(base))) if any(p.startswith(":") for p in pathspecs) else None
        pathspecs = [str(top) if top is not None else "."]
    refs: list[PathRef] = []
    for spec in pathspecs:
        for ref in resolve_all(project, spec, base, "tree", f"`git {sub}`", links):
            ref.recursive = True
            ref.tracked_only = tracked
            refs.append(ref)
    return refs


def _default_operand(name: str, args: list[str]) -> str | None:
    """The directory a recursive search walks when it names none: the working directory."""
    operands = [a for a in args if not a.startswith("-")]
    if name in ("rg", "ag", "ack") and len(operands) <= 1:
        return "."
    if name in ("grep", "egrep", "fgrep") and _is_tree(name, args) and len(operands) <= 1:
        return "."
    return None


def _argument_words(command: SimpleCommand) -> list[tuple[str, bool]]:
    """(word, dynamic) for the words that may name files: messages and printers' text excluded."""
    out: list[tuple[str, bool]] = []
    skip = False
    for index, word in enumerate(command.argv[1:], start=1):
        dynamic = command.dynamic[index] if index < len(command.dynamic) else False
        if skip:
            skip = False
            continue
        if command.name == "git" and (word in _MESSAGE_OPTIONS or word.split("=", 1)[0] in _MESSAGE_OPTIONS):
            skip = "=" not in word
            continue
        out.append((word, dynamic))
    return out


def command_paths(project: Path, parsed: ParsedCommand) -> list[PathRef]:
    """Every path the commands of ``parsed`` can reach, resolved from ``project``."""
    refs: list[PathRef] = []
    links = parsed.symlinks
    for command in parsed.commands:
        name = command.name
        args = command.argv[1:]
        tree = _is_tree(name, args)
        hidden = _sees_hidden(name, args)
        if name in _LISTERS:
            access: Access = "list"
        elif name in _READERS:
            access = "tree" if tree else "read"
        else:
            access = "unknown"
        if name == "git":
            access = _git_access(args)
            refs.extend(_git_config_target(project, command))
            refs.extend(_git_tree_reads(project, command, list(links)))
        start = len(refs)
        if name not in PRINTERS and command.argv:
            deep = name not in _READERS and name not in _LISTERS
            for word, dynamic in _argument_words(command):
                for piece in candidates(word, deep=deep):
                    if dynamic:
                        refs.append(PathRef(piece, None, access, f"`{name}` argument"))
                    else:
                        refs.extend(resolve_all(project, piece, command.cwd, access, f"`{name}` argument", links))
            default = _default_operand(name, args)
            if default is not None:
                refs.extend(resolve_all(project, default, command.cwd, "tree", f"`{name}` (no operand: the working "
                                        "directory)", links))
        if tree:
            for ref in refs[start:]:
                ref.recursive = True
                ref.hidden = hidden
        for reach in command.reached:
            for ref in resolve_all(project, reach.path, command.cwd, reach.access, reach.via, links):  # type: ignore[arg-type]
                ref.speculative = reach.speculative
                ref.recursive = reach.tree
                refs.append(ref)
        for text in command.inline_paths:
            refs.extend(resolve_all(project, text, command.cwd, "unknown", f"path in `{name}` code", links))
        for word in command.stdin_names:
            # xargs runs its command on the names an earlier stage prints: the files under them.
            for ref in resolve_all(project, word, command.cwd, "tree", f"`{name}` input from the pipe", links):
                ref.recursive = True
                refs.append(ref)
        for assignment in command.assignments:
            value = assignment.split("=", 1)[1] if "=" in assignment else ""
            if value:
                refs.extend(resolve_all(project, value, command.cwd, "unknown", "variable assignment", links))
        for redirect in command.redirects:
            if redirect.op in ("<<", "<<-", "<<<") or redirect.target.isdigit() or redirect.target == "-":
                continue
            kind: Access = "write" if redirect.op in _WRITE_REDIRECTS else "read"
            if redirect.dynamic:
                refs.append(PathRef(redirect.target, None, kind, f"redirect {redirect.op}"))
            else:
                refs.extend(resolve_all(project, redirect.target, command.cwd, kind, f"redirect {redirect.op}", links))
        if command.speculative:
            for ref in refs[start:]:
                ref.speculative = True
    # The place a link is made is written, whatever the link points at (paths through it follow it above):
    # `ln -s run.sh ~/.local/bin/ls` puts a program on the person's PATH.
    for link, _target in links:
        refs.extend(resolve_all(project, link, str(project), "write", "`ln` makes a link at"))
    return refs
