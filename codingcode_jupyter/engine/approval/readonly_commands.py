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
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from .examples import CheckedOnce
from .inline_code import program_of
from .paths import relative_to_project
from .programs import git_lists_only, pytest_collects_only, sed_effects, sed_in_place, version_query
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
    # What else its words must pass (the argv without the name): a program's own check (awk's
    # program text, git's listing subcommands, a version query).
    check: Callable[[list[str]], bool] | None = None
    # It runs the project's code to read (pytest's collection imports the tests): read-only only
    # where the sandbox confines what that code does.
    confined: bool = False
    must: tuple[str, ...] = field(default=())
    must_not: tuple[str, ...] = field(default=())
    # Examples that are read-only only under the sandbox (``confined`` entries).
    must_confined: tuple[str, ...] = field(default=())


_GIT_READS = frozenset({"status", "diff", "log", "show", "blame", "ls-files", "ls-tree", "rev-parse", "describe",
                        "shortlog", "cat-file", "rev-list", "grep", "whatchanged", "annotate", "show-ref",
                        "for-each-ref", "merge-base", "name-rev", "count-objects", "check-ignore", "reflog",
                        "branch", "tag", "remote", "stash", "worktree"})

# Programs whose version query starts nothing of the project's (a compiler, a runtime, a tool).
_VERSIONED = frozenset({
    "python", "python3", "pip", "pip3", "node", "npm", "npx", "pnpm", "yarn", "deno", "bun", "git", "gcc", "g++",
    "cc", "c++", "clang", "clang++", "make", "cmake", "ninja", "cargo", "rustc", "rustup", "go", "java", "javac",
    "mvn", "gradle", "ruby", "gem", "bundle", "perl", "php", "composer", "dotnet", "swift", "uv", "poetry",
    "pipx", "conda", "mamba", "pytest", "ruff", "mypy", "black", "flake8", "pylint", "isort", "tsc", "eslint",
    "prettier", "jupyter", "ipython", "docker", "kubectl", "helm", "terraform", "rg", "jq", "bash", "zsh",
    "curl", "wget", "tar", "sed", "awk", "gawk", "grep", "sqlite3", "psql", "redis-server", "nginx", "bwrap",
})  # fmt: skip


def _awk_reads_only(args: list[str]) -> bool:
    """An awk program that only prints to its output: no `system`, no `getline` (a command's or a
    file's), no `print > file` or `print | command`, no `ENVIRON` (the secrets of the environment),
    no extensions or include files."""
    program = program_of("awk", args)
    if program is None:
        return False
    text = re.sub(r'"(?:[^"\\\n]|\\.)*"', '""', program)
    if re.search(r"\b(system|getline|ENVIRON|PROCINFO|SYMTAB|FUNCTAB)\b|@load|@include", text):
        return False
    for match in re.finditer(r"\bprintf?\b", text):
        depth = 0
        for ch in text[match.end():]:
            if ch in ";}\n":
                break
            if ch == "(":
                depth += 1
            elif ch == ")":
                depth -= 1
            elif ch in ">|" and depth <= 0:
                return False
    return True


def _sed_reads_only(args: list[str]) -> bool:
    """sed printing its result (`sed -n '10,15p' f`): not in place (`-i`, also in a cluster `-ni`),
    its script on the line, with no `w` file, no `e` command and no `s///e`."""
    if sed_in_place(args):
        return False
    script = program_of("sed", args)
    if script is None:
        return False
    effects = sed_effects(script)
    return not (effects.paths or effects.commands or effects.unresolved)


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
                    subcommands=_GIT_READS, check=git_lists_only,
                    must=("git status", "git diff", "git log --oneline -5", "git diff src/app.py", "git branch -a",
                          "git branch --show-current", "git tag -l 'v1*'", "git remote -v", "git stash list",
                          "git --version"),
                    must_not=("git commit -m x", "git log --output=/tmp/x", "git -c core.pager=evil log", "git push",
                              "git diff --ext-diff", "git diff --no-index /etc/hosts x", "git branch new-feature",
                              "git branch -D main", "git tag v1.0", "git remote add x ../y", "git stash",
                              "git stash pop", "git config user.name x", "git config core.pager less")),
    ReadOnlyProgram("cd", must=("cd src && ls",), must_not=("cd /etc && cat hosts",)),
    ReadOnlyProgram("test", must=("test -f README.md",)), ReadOnlyProgram("["),
    ReadOnlyProgram("sed", check=_sed_reads_only, must=("sed -n '10,15p' src/app.py", "sed -n -e 1p -e '$p' README.md"),
                    must_not=("sed -i s/a/b/ src/app.py", "sed -ni 1p src/app.py", "sed 'w out.txt' README.md",
                              "sed 's/x/id/e' README.md", "sed -f script.sed README.md")),
    ReadOnlyProgram("awk", forbidden=("-f", "--file", "-i", "--include", "-l", "--load", "-E", "--exec", "-o",
                                      "--pretty-print", "-p", "--profile", "-d", "--dump-variables", "-D", "--debug"),
                    check=_awk_reads_only,
                    must=("awk 'NR<5' src/app.py", "awk -F: '{print $1}' README.md", "awk 'NR > 2 {print $2}' README.md",
                          "awk '{ print ($1 > 2) }' README.md"),
                    must_not=("awk '{print > \"out\"}' README.md", "awk '{print | \"sh\"}' README.md",
                              "awk 'BEGIN{system(\"id\")}'", "awk 'BEGIN{print ENVIRON[\"HOME\"]}'",
                              "awk -f prog.awk README.md", "awk '{ \"date\" | getline d }' README.md")),
    ReadOnlyProgram("hexdump", must=("hexdump -C src/app.py",)), ReadOnlyProgram("od", must=("od -c src/app.py",)),
    ReadOnlyProgram("xxd", max_operands=1, must=("xxd src/app.py",), must_not=("xxd src/app.py out.hex",)),
    ReadOnlyProgram("strings"), ReadOnlyProgram("column"), ReadOnlyProgram("paste"), ReadOnlyProgram("rev"),
    ReadOnlyProgram("fold"), ReadOnlyProgram("fmt"), ReadOnlyProgram("comm"), ReadOnlyProgram("cksum"),
    ReadOnlyProgram("sha512sum", forbidden=("-c", "--check")), ReadOnlyProgram("b2sum", forbidden=("-c", "--check")),
    ReadOnlyProgram("base64", max_operands=1),
    *(ReadOnlyProgram(name, check=version_query, must=(f"{name} --version",) if name in ("python", "node") else (),
                      must_not=(f"{name} -c 'print(1)'",) if name == "python" else ())
      for name in sorted(_VERSIONED - {"git", "sed", "awk"})),
    ReadOnlyProgram("pytest", check=pytest_collects_only, confined=True, must_confined=("pytest --collect-only -q tests",),
                    must_not=("pytest", "pytest -x tests", "pytest --co -p evil")),
)

_BY_NAME: dict[str, tuple[ReadOnlyProgram, ...]] = {}
for _entry in READ_ONLY_PROGRAMS:
    _BY_NAME[_entry.name] = (*_BY_NAME.get(_entry.name, ()), _entry)
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


def _entry_allows(entry: ReadOnlyProgram, command: SimpleCommand, confined: bool) -> bool:
    if entry.confined and not confined:
        return False
    args = command.argv[1:]
    if any(arg == bad or arg.startswith(bad + "=") or (len(bad) == 2 and bad[0] == "-" and bad[1] != "-"
                                                      and arg.startswith(bad)) for arg in args for bad in entry.forbidden):
        return False
    if entry.subcommands is not None:
        sub = next((arg for arg in args if not arg.startswith("-")), "")
        if sub not in entry.subcommands and not (entry.check is not None and version_query(args)):
            return False
    if entry.max_operands is not None and len(_operands(command.argv)) > entry.max_operands:
        return False
    return entry.check is None or entry.check(args)


def _program_reads_only(command: SimpleCommand, confined: bool = False) -> bool:
    entries = _BY_NAME.get(os.path.basename(command.name), ())
    if not entries or command.name != entries[0].name:
        return False  # `./ls`, `/tmp/cat`: not the program the table knows
    return any(_entry_allows(entry, command, confined) for entry in entries)


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
    (where it reads is the caller's business). Entries that read only when confined do not count."""
    examples_checked()
    return _plain(command) and _program_reads_only(command) and _redirects_read(command)


def read_only_command(subject: Subject, *, confined: bool = False) -> str | None:
    """Why the call's command only reads inside the project, or None when it may do more;
    ``confined``: it will run in the sandbox (the table's ``confined`` entries count then)."""
    examples_checked()
    return _read_only(subject, confined)


def _read_only(subject: Subject, confined: bool = False) -> str | None:
    parsed = subject.command
    if parsed is None or parsed.unresolved or not parsed.commands:
        return None
    for command in parsed.commands:
        if not (_plain(command) and _program_reads_only(command, confined) and _redirects_read(command)):
            return None
    for ref in subject.paths:
        if ref.resolved is not None and str(ref.resolved) in _HARMLESS_SINKS:
            continue  # `2>/dev/null`: written, and nothing is kept
        if ref.access not in ("read", "tree", "list") or ref.resolved is None:
            return None
        if relative_to_project(subject.project, ref.resolved) is None:
            return None
    names = ", ".join(dict.fromkeys(c.name for c in parsed.commands))
    return f"only reads inside the project ({names})"


def _check_examples() -> None:
    from ..tools.base import declared_tool
    from .subject import build_subject

    tool = declared_tool("execute_command")
    project = Path("/nonexistent/codingcode-example-project")
    for entry in READ_ONLY_PROGRAMS:
        for expected, confined, examples in ((True, False, entry.must), (False, True, entry.must_not),
                                             (True, True, entry.must_confined), (False, False, entry.must_confined)):
            for text in examples:
                found = _read_only(build_subject(tool, {"command": text}, project), confined) is not None
                if found != expected:
                    verb = "must" if expected else "must not"
                    where = " in the sandbox" if confined and expected else " unconfined" if entry.must_confined else ""
                    raise ReadOnlyTableError(f"read-only command {entry.name!r}: {text!r} {verb} be read-only{where}")
    # The parser is what the table relies on: a compound of readers stays read-only, a write does not.
    assert parse_command("ls && cat README.md", cwd=str(project)).commands


examples_checked = CheckedOnce(_check_examples)
