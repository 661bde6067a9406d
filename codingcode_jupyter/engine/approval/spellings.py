"""Every spelling of one simple command that a deny or ask rule is matched against.

A model writes the same command many ways: ``FOO=1 git push``, ``env -i git push``,
``git -C . push``, ``/usr/bin/git push``, ``timeout 60 nice git push``. A deny rule written
for ``git push`` must hold on all of them, so it is matched against each spelling here and
denies when any matches. (The parser already splits ``cd X && ...``, ``bash -c`` and ``eval``
bodies into their own commands, and peels the wrappers.) Allow rules never use these: an
allow rule covers what it says and nothing a normalisation would add.
"""

from __future__ import annotations

import itertools
import os

from .program_traits import COMMAND_WRAPPERS as _SUBCOMMAND_WRAPPERS
from .shell_command import SimpleCommand
from .shell_words import quote_word
from .shell_wrappers import WRAPPERS

__all__ = ["deny_spellings", "git_plain"]

# git's global options that take the next word as their value.
_GIT_VALUED = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--config-env", "--super-prefix",
                         "--exec-path", "--list-cmds", "--attr-source"})
_STARTS = frozenset(WRAPPERS) | frozenset(_SUBCOMMAND_WRAPPERS)


def git_plain(argv: list[str]) -> list[str]:
    """``git [global options] SUB ARGS`` as ``git SUB ARGS`` (other commands unchanged)."""
    if not argv or os.path.basename(argv[0]) != "git":
        return argv
    i = 1
    while i < len(argv) and argv[i].startswith("-") and argv[i] != "--":
        i += 2 if argv[i] in _GIT_VALUED else 1
    if i < len(argv) and argv[i] == "--":
        i += 1
    return [argv[0], *argv[i:]]


def _program_names(program: str, cwd: str | None) -> set[str]:
    """The program as written, its basename, and relative to the working directory
    (`/proj/scripts/x.sh` is `./scripts/x.sh` and `scripts/x.sh` there)."""
    names = {program, os.path.basename(program)}
    absolute = program if os.path.isabs(program) else (os.path.normpath(os.path.join(cwd, program)) if cwd else None)
    if absolute is not None and cwd is not None and absolute.startswith(cwd.rstrip("/") + "/"):
        rel = os.path.relpath(absolute, cwd)
        names |= {rel, f"./{rel}", absolute}
    return names


def _joined(words: list[str]) -> str:
    return " ".join(map(quote_word, words))


def deny_spellings(command: SimpleCommand) -> set[str]:
    """The texts a deny or ask rule is tried on for ``command`` (see the module docstring)."""
    argvs: list[list[str]] = [command.argv]
    written = command.full_argv or command.argv
    # From each wrapper on: `nice timeout 5 rm x` is also `timeout 5 rm x` (a rule on timeout holds).
    for start in range(len(written) - len(command.argv) + 1):
        if start == 0 or os.path.basename(written[start]) in _STARTS:
            argvs.append(written[start:])
    texts: set[str] = {command.rule_text(), command.wrapped_text()}
    # A rule may name some of the assignments (`Bash(TZ=UTC date:*)`): every subset of a few.
    prefixes = [list(combo) for size in range(min(len(command.assignments), 3) + 1)
                for combo in itertools.combinations(command.assignments, size)]
    for argv in argvs:
        if not argv:
            continue
        for variant in (argv, git_plain(argv)):
            for program in _program_names(variant[0], command.cwd):
                words = [program, *variant[1:]]
                for prefix in prefixes:
                    texts.add(_joined([*prefix, *words]))
                # Unquoted too: `git commit -m 'a b'` against a rule written without quotes.
                texts.add(" ".join(words))
    texts.discard("")
    return texts
