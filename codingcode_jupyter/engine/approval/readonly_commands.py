"""Commands that only read inside the project, allowed by the read-only layer as read_file is.

A command line is read-only when every simple command in it is a program of the table below
used without the options that make it write, run something or reach the network; nothing is
known only at run time; no redirect writes anywhere but /dev/null; and every path it reaches
is read (or walked) inside the project. Secrets inside the project are still the built-in
rules' business: they ask, and that ask outranks this layer.

Each entry carries examples that must and must not be read-only; they are checked before the
table first judges anything (see :mod:`.examples`), so an entry that stops working fails by name.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from .examples import CheckedOnce
from .paths import relative_to_project
from .shell_parse import SimpleCommand, parse_command
from .subject import Subject

__all__ = ["ReadOnlyProgram", "READ_ONLY_PROGRAMS", "read_only_command", "reads_only", "ReadOnlyTableError"]


@dataclass(frozen=True)
class ReadOnlyProgram:
    """A program that only reads, unless given one of ``forbidden`` options (prefix match)."""

    name: str
    forbidden: tuple[str, ...] = ()
    # For programs with subcommands (git): the ones that only read.
    subcommands: frozenset[str] | None = None
    # At most this many operands (``uniq IN OUT`` writes OUT).
    max_operands: int | None = None
    must: tuple[str, ...] = field(default=())
    must_not: tuple[str, ...] = field(default=())


_GIT_READS = frozenset({"status", "diff", "log", "show", "blame", "ls-files", "ls-tree", "rev-parse", "describe",
                        "shortlog", "cat-file", "rev-list", "grep", "whatchanged", "annotate"})

READ_ONLY_PROGRAMS: tuple[ReadOnlyProgram, ...] = (
    ReadOnlyProgram("ls", must=("ls", "ls -la src"), must_not=("ls /etc",)),
    ReadOnlyProgram("cat", must=("cat README.md",), must_not=("cat /etc/hosts", "cat README.md > copy.md")),
    ReadOnlyProgram("head", must=("head -n 20 src/app.py",)),
    ReadOnlyProgram("tail", must=("tail -n 5 README.md",)),
    ReadOnlyProgram("wc", must=("wc -l src/app.py",), must_not=("wc --files0-from=/etc/passwd",)),
    ReadOnlyProgram("grep", forbidden=("--exclude-from", "--include-from"), must=("grep -rn TODO src",),
                    must_not=("grep -r TODO /etc",)),
    ReadOnlyProgram("egrep"), ReadOnlyProgram("fgrep"),
    ReadOnlyProgram("rg", forbidden=("--pre", "--search-zip", "-z"), must=("rg TODO src",),
                    must_not=("rg --pre ./x TODO",)),
    ReadOnlyProgram("find", forbidden=("-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fls", "-fprintf"),
                    must=("find src -name '*.py'",), must_not=("find . -delete", "find . -exec rm {} +")),
    ReadOnlyProgram("tree", forbidden=("-o",), must=("tree src",)),
    ReadOnlyProgram("du", must=("du -sh src",)),
    ReadOnlyProgram("file", forbidden=("-f", "--files-from", "-m", "--magic-file"), must=("file src/app.py",)),
    ReadOnlyProgram("stat", must=("stat README.md",)),
    ReadOnlyProgram("diff", forbidden=("--to-file", "--from-file"), must=("diff README.md src/app.py",)),
    ReadOnlyProgram("cmp"),
    ReadOnlyProgram("sort", forbidden=("-o", "--output", "--compress-program", "-T", "--temporary-directory"),
                    must=("sort README.md",), must_not=("sort -o out.txt README.md",)),
    ReadOnlyProgram("uniq", max_operands=1, must=("uniq README.md",), must_not=("uniq README.md out.txt",)),
    ReadOnlyProgram("cut"), ReadOnlyProgram("nl"), ReadOnlyProgram("tac"), ReadOnlyProgram("basename"),
    ReadOnlyProgram("dirname"), ReadOnlyProgram("realpath"), ReadOnlyProgram("readlink"), ReadOnlyProgram("pwd"),
    ReadOnlyProgram("md5sum", forbidden=("-c", "--check")), ReadOnlyProgram("sha256sum", forbidden=("-c", "--check")),
    ReadOnlyProgram("sha1sum", forbidden=("-c", "--check")),
    ReadOnlyProgram("echo", must=("echo hello",)), ReadOnlyProgram("printf"), ReadOnlyProgram("true"),
    ReadOnlyProgram("which"), ReadOnlyProgram("type"),
    ReadOnlyProgram("git", forbidden=("--output", "--ext-diff", "--textconv", "-c", "--exec-path", "--git-dir",
                                      "--work-tree", "-C", "--open-files-in-pager", "-O", "--no-index"),
                    subcommands=_GIT_READS,
                    must=("git status", "git diff", "git log --oneline -5", "git diff src/app.py"),
                    must_not=("git commit -m x", "git log --output=/tmp/x", "git -c core.pager=evil log", "git push",
                              "git diff --ext-diff", "git diff --no-index /etc/hosts x")),
)

_BY_NAME = {entry.name: entry for entry in READ_ONLY_PROGRAMS}
_HARMLESS_SINKS = frozenset({"/dev/null"})


class ReadOnlyTableError(RuntimeError):
    """An entry disagrees with one of its own examples."""


def _operands(argv: list[str]) -> list[str]:
    out, options_done = [], False
    for word in argv[1:]:
        if not options_done and word == "--":
            options_done = True
        elif options_done or not word.startswith("-") or word == "-":
            out.append(word)
    return out


def _program_reads_only(command: SimpleCommand) -> bool:
    entry = _BY_NAME.get(os.path.basename(command.name))
    if entry is None or command.name != entry.name:
        return False  # `./ls`, `/tmp/cat`: not the program the table knows
    args = command.argv[1:]
    if any(arg == bad or arg.startswith(bad + "=") or (len(bad) == 2 and bad[0] == "-" and bad[1] != "-"
                                                      and arg.startswith(bad)) for arg in args for bad in entry.forbidden):
        return False
    if entry.subcommands is not None:
        sub = next((arg for arg in args if not arg.startswith("-")), "")
        if sub not in entry.subcommands:
            return False
    if entry.max_operands is not None and len(_operands(command.argv)) > entry.max_operands:
        return False
    return True


def _plain(command: SimpleCommand) -> bool:
    """Nothing the table cannot vouch for: no wrappers, variables, inline code, reached paths or run-time words."""
    return not (command.wrappers or command.assignments or command.inline_paths or command.reached or command.container
                or command.substituted or any(command.dynamic) or command.dynamic_tail)


def _redirects_read(command: SimpleCommand) -> bool:
    for redirect in command.redirects:
        if redirect.op in ("<", "<<", "<<<", "<<-") or redirect.target.isdigit():
            continue
        if redirect.target not in _HARMLESS_SINKS:
            return False
    return True


def reads_only(command: SimpleCommand) -> bool:
    """One simple command that only reads: a plain use of a program of the table, no writing redirect
    (where it reads is the caller's business)."""
    examples_checked()
    return _plain(command) and _program_reads_only(command) and _redirects_read(command)


def read_only_command(subject: Subject) -> str | None:
    """Why the call's command only reads inside the project, or None when it may do more."""
    examples_checked()
    return _read_only(subject)


def _read_only(subject: Subject) -> str | None:
    parsed = subject.command
    if parsed is None or parsed.unresolved or not parsed.commands:
        return None
    for command in parsed.commands:
        if not (_plain(command) and _program_reads_only(command) and _redirects_read(command)):
            return None
    for ref in subject.paths:
        if ref.access not in ("read", "tree", "list") or ref.resolved is None:
            return None
        if relative_to_project(subject.project, ref.resolved) is None and str(ref.resolved) not in _HARMLESS_SINKS:
            return None
    names = ", ".join(dict.fromkeys(c.name for c in parsed.commands))
    return f"only reads inside the project ({names})"


def _check_examples() -> None:
    from ..tools.shell import execute_command_tool
    from .subject import build_subject

    tool = execute_command_tool()
    project = Path("/nonexistent/codingcode-example-project")
    for entry in READ_ONLY_PROGRAMS:
        for expected, examples in ((True, entry.must), (False, entry.must_not)):
            for text in examples:
                found = _read_only(build_subject(tool, {"command": text}, project)) is not None
                if found != expected:
                    verb = "must" if expected else "must not"
                    raise ReadOnlyTableError(f"read-only command {entry.name!r}: {text!r} {verb} be read-only")
    # The parser is what the table relies on: a compound of readers stays read-only, a write does not.
    assert parse_command("ls && cat README.md", cwd=str(project)).commands


examples_checked = CheckedOnce(_check_examples)
