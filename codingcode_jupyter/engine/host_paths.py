"""The one table of paths the host runs as code: read by the approval layer and by the sandbox.

A file the host runs later (a git hook of a nested repository, a ``.pth`` file in a virtualenv
of the project, a ``.envrc``, a shell start-up file) turns a write that looked harmless into code
run outside every check. Writing one is asked in every mode (see
:func:`codingcode_jupyter.engine.approval.paths.protected_reason`) and the sandbox binds the same
paths read-only (:func:`sandbox_targets`). Both read :data:`HOST_PATHS`, so the two cannot drift.

Patterns are ``/``-separated globs relative to their root (the project, the home directory);
``**`` matches any number of directories, so a pattern holds at every depth and for files
that do not exist yet. A pattern that names a directory covers everything inside it.

Two kinds of entry are not plain names: a directory holding ``pyvenv.cfg`` is a virtualenv,
whose every file runs when its Python starts (:func:`venv_root`), and the directories on the
kernel's own import path, where ``sitecustomize.py``, ``usercustomize.py`` and ``.pth`` files
run at every start of its Python (:func:`import_path_dirs`).

``git config`` commands that set a program (``core.fsmonitor``, ``core.hooksPath``, a
credential helper, an alias starting with ``!``) are the same danger written through git:
:func:`git_config_program` says which key of a ``git config`` argument list does it.

Ordinary project code (``conftest.py``, ``setup.py``, a module the person imports) is not
listed: the person decides to run it, and the agent must be able to edit it.
"""

from __future__ import annotations

import fnmatch
import os
import re
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Iterable, Iterator, Literal, Sequence

from . import fs_probe
from .paths import is_under

__all__ = [
    "HostPath", "HOST_PATHS", "HostHit", "host_executed", "venv_root", "import_path_dirs",
    "sandbox_targets", "name_may_be_host_executed", "git_config_program", "GIT_PROGRAM_KEYS",
    "PYTHON_START_PATTERNS", "python_startup",
]

Root = Literal["project", "home"]
Kind = Literal["dir", "file"]


@dataclass(frozen=True)
class HostPath:
    """One row: where, which pattern, whether it is a directory (everything inside counts), what runs it."""

    root: Root
    pattern: str
    kind: Kind
    what: str


def _rows(root: Root, kind: Kind, what: str, *patterns: str) -> tuple[HostPath, ...]:
    return tuple(HostPath(root, pattern, kind, what) for pattern in patterns)


HOST_PATHS: tuple[HostPath, ...] = (
    # git runs hooks, fsmonitor, pagers and filters named in any repository's internals; a `.git`
    # file (a worktree, a submodule) points git at another directory that may hold them.
    *_rows("project", "dir", "the internals of a git repository (hooks and config run on the host by git)",
           "**/.git", "**/.hg"),
    *_rows("project", "dir", "git hooks run by husky on every commit", "**/.husky"),
    *_rows("project", "file", "a virtualenv's marker (its directory is run by its Python)", "**/pyvenv.cfg"),
    *_rows("project", "file", "a file Python runs at start-up from a directory on its path",
           "**/*.pth", "**/sitecustomize.py", "**/usercustomize.py"),
    *_rows("project", "file", "IPython or Jupyter configuration, run when IPython or Jupyter starts here",
           "**/ipython_config.py", "**/ipython_kernel_config.py", "**/jupyter_*config.py", "**/jupyter_*config.json"),
    *_rows("project", "dir", "IPython or Jupyter configuration and start-up files",
           "**/.ipython", "**/.jupyter", "**/profile_*/startup"),
    *_rows("project", "file", "the pre-commit configuration (the hooks it names run on every commit)",
           "**/.pre-commit-config.yaml", "**/.pre-commit-hooks.yaml"),
    # lefthook's hooks (installed once in .git/hooks) read this configuration at every commit, as
    # pre-commit's do: what it names runs then.
    *_rows("project", "file", "lefthook's configuration (the commands it names run on every commit)",
           *(f"**/{base}.{ext}" for base in ("lefthook", ".lefthook", "lefthook-local", ".lefthook-local")
             for ext in ("yml", "yaml", "json", "jsonc", "toml"))),
    *_rows("project", "file", "direnv's script, run by the shell on entering the directory", "**/.envrc"),
    *_rows("project", "dir", "editor settings and tasks (run by the editor)", "**/.vscode", "**/.idea"),
    # A dev container's initializeCommand runs on the host when the editor opens the container.
    *_rows("project", "dir", "a dev container definition (its initializeCommand runs on the host)", "**/.devcontainer"),
    *_rows("project", "file", "a dev container definition (its initializeCommand runs on the host)",
           "**/.devcontainer.json"),
    *_rows("project", "file", "an editor workspace with tasks (run by the editor)", "**/*.code-workspace"),
    # A virtualenv's shape, whether or not its pyvenv.cfg exists yet: the person's shell sources
    # activate, and Jupyter starts what a kernel spec's argv names when the person picks it.
    *_rows("project", "file", "a virtualenv's activate script (sourced by the person's shell)", "**/bin/activate*"),
    *_rows("project", "file", "a Jupyter kernel spec (its argv runs when the person starts that kernel)",
           "**/share/jupyter/kernels/*/kernel.json"),
    # The person's home: what every shell, login or desktop session runs.
    *_rows("home", "file", "a shell start-up file, run by every new shell",
           ".bashrc", ".bash_profile", ".bash_login", ".profile", ".zshrc", ".zshenv", ".zprofile", ".zlogin",
           ".zlogout", ".bash_logout", ".bash_aliases", ".bash_completion", ".kshrc", ".mkshrc", ".cshrc",
           ".tcshrc", ".login", ".logout", ".inputrc", ".xprofile", ".xinitrc", ".xsession", ".xsessionrc",
           ".pam_environment"),
    *_rows("home", "dir", "shell start-up files", ".config/fish", ".bashrc.d", ".config/environment.d"),
    *_rows("home", "dir", "programs started with the desktop session", ".config/autostart"),
    *_rows("home", "dir", "systemd user units, started by the person's systemd",
           ".config/systemd/user", ".local/share/systemd/user"),
    *_rows("home", "dir", "programs on the person's PATH", ".local/bin", "bin"),
    *_rows("home", "dir", "IPython and Jupyter configuration, run at their start",
           ".ipython", ".jupyter", ".config/ipython", ".local/share/jupyter/kernels", ".local/etc/jupyter"),
    *_rows("home", "file", "a file Python runs at start-up from the user site directory",
           ".local/lib/python*/site-packages/*.pth", ".local/lib/python*/site-packages/sitecustomize.py",
           ".local/lib/python*/site-packages/usercustomize.py"),
    *_rows("home", "file", "the person's git configuration (it may name programs git runs)", ".gitconfig"),
    *_rows("home", "dir", "the person's git configuration", ".config/git"),
)


# The rows only a Python (or the IPython and Jupyter it starts) runs, from the directory it starts
# in or imports from: inside a virtualenv the agent created these run only when that venv's own
# Python starts (see sandbox/host_watch.py), unlike a .git or an .envrc that other programs run.
PYTHON_START_PATTERNS = frozenset(
    row.pattern for row in HOST_PATHS
    if row.pattern.rsplit("/", 1)[-1] in (
        "pyvenv.cfg", "*.pth", "sitecustomize.py", "usercustomize.py", "ipython_config.py",
        "ipython_kernel_config.py", "jupyter_*config.py", "jupyter_*config.json", ".ipython", ".jupyter", "startup")
    and row.root == "project"
)


@dataclass(frozen=True)
class HostHit:
    """Why a path is host-executed: the row (or the rule) that matched, and the path it names."""

    what: str
    pattern: str
    root: Path


def _matches(parts: Sequence[str], row: HostPath) -> bool:
    """``parts`` matched by the row's pattern, or (a directory row) lying under a match. One regular
    expression per row, so a path of thousands of parts is matched in linear time."""
    joined = "".join(part + "/" for part in parts)
    regex = _row_regex(row.pattern)
    return bool(regex.match(joined) if row.kind == "dir" else regex.fullmatch(joined))


@lru_cache(maxsize=256)
def _row_regex(pattern: str) -> re.Pattern[str]:
    """A pattern's parts as one expression over "part/part/": `*`, `?` and `[...]` within one part,
    `**` any number of whole parts."""
    pieces: list[str] = []
    for part in _split(pattern):
        if part == "**":
            pieces.append("(?:[^/]*/)*")
            continue
        out, i = [], 0
        while i < len(part):
            ch = part[i]
            if ch == "*":
                out.append("[^/]*")
            elif ch == "?":
                out.append("[^/]")
            elif ch == "[":
                # fnmatch's class: `[!...]` negates, a `]` first is literal; unclosed, a literal `[`.
                start = i + 1 + (part[i + 1:i + 2] == "!")
                end = part.find("]", start + (part[start:start + 1] == "]"))
                if end < 0:
                    out.append(re.escape(ch))
                else:
                    body = part[i + 1:end]
                    body = "^" + body[1:] if body.startswith("!") else body
                    out.append("[" + body.replace("\\", "\\\\") + "]")
                    i = end
            else:
                out.append(re.escape(ch))
            i += 1
        pieces.append("".join(out) + "/")
    return re.compile("".join(pieces))


@lru_cache(maxsize=256)
def _split(pattern: str) -> tuple[str, ...]:
    return tuple(part for part in pattern.split("/") if part)


# Names that can start a match in the project: a scan of a tree looks at these only.
_PROJECT_NAMES = tuple(sorted({_split(row.pattern)[-1] for row in HOST_PATHS if row.root == "project"}))


def name_may_be_host_executed(name: str) -> bool:
    """True when a file or directory called ``name`` in the project matches a row's last part."""
    return name == "pyvenv.cfg" or any(fnmatch.fnmatchcase(name, last) for last in _PROJECT_NAMES)


def host_executed(path: Path, project: Path, home: Path | None = None) -> HostHit | None:
    """The row ``path`` (resolved, absolute) falls under, or None.

    Inside the project: the table's project rows at any depth, and every file of a virtualenv.
    In the home directory: the home rows. Anywhere: a start-up file of a directory on the
    kernel's import path.
    """
    project = Path(os.path.realpath(project))
    home = Path(os.path.realpath(home if home is not None else os.path.expanduser("~")))
    for root_kind, root in (("project", project), ("home", home)):
        if path != root and not is_under(path, root):
            continue
        parts = path.relative_to(root).parts
        for row in HOST_PATHS:
            if row.root == root_kind and _matches(parts, row):
                return HostHit(row.what, row.pattern, root)
        if root_kind == "project":
            venv = venv_root(path, project)
            if venv is not None:
                return HostHit("a virtualenv inside the project (its Python runs what is in it)",
                               str(venv.relative_to(project)) + "/**", venv)
        if root_kind == "project":
            hooks = _named_hooks_dir(path, project)
            if hooks is not None:
                return HostHit("a hook in the directory a repository's core.hooksPath names (git runs it)",
                               str(hooks.relative_to(project)) + "/**" if is_under(hooks, project) else str(hooks), hooks)
    startup = python_startup()
    if startup is not None and path == startup:
        return HostHit("the file $PYTHONSTARTUP names (Python runs it at every interactive start)", str(startup),
                       startup.parent)
    directory = path.parent
    if directory in import_path_dirs() and (
            path.name in ("sitecustomize.py", "usercustomize.py") or path.suffix == ".pth"):
        return HostHit("a file Python runs at start-up from a directory on the kernel's import path",
                       f"{directory}/{path.name}", directory)
    return None


def _config_hooks_path(config: Path) -> str | None:
    """``core.hooksPath`` as one git config file sets it (the last value wins), or None.

    A small reader of git's syntax (sections, ``key = value``, quotes, comments); ``include.path``
    is not followed and the person's global configuration is not read.
    """
    text = fs_probe.read_text(config, 1 << 20)
    if text is None:
        return None
    section = ""
    found: str | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("["):
            end = line.find("]")
            section = (line[1:end] if end > 0 else line[1:]).strip().lower()
            line = line[end + 1:].strip() if end > 0 else ""
        if not line or line[0] in "#;" or section != "core":
            continue
        key, _, value = line.partition("=")
        if key.strip().lower() != "hookspath":
            continue
        out: list[str] = []
        quoted, index = False, 0
        while index < len(value):
            char = value[index]
            if char == "\\" and index + 1 < len(value):
                out.append(value[index + 1])
                index += 2
                continue
            if char == '"':
                quoted = not quoted
            elif char in "#;" and not quoted:
                break
            else:
                out.append(char)
            index += 1
        found = "".join(out).strip()
    return found or None


def hooks_dir(git_dir: Path) -> Path | None:
    """The directory (resolved) that ``core.hooksPath`` in the configuration of the repository whose
    git directory is ``git_dir`` names, or None; relative to the working tree, as git reads it."""
    value = _config_hooks_path(git_dir / "config")
    if value is None:
        return None
    return Path(os.path.realpath(os.path.join(git_dir.parent, os.path.expanduser(value))))


def _directories_down(project: Path, deepest: Path) -> Iterator[Path]:
    """The directories from ``project`` down to ``deepest`` (both included) while they exist: a name
    under one that does not exist holds nothing, and walking only what exists keeps a path of
    thousands of parts (which cannot exist) cheap."""
    if deepest != project and not is_under(deepest, project):
        return
    current = project
    yield current
    for part in deepest.relative_to(project).parts:
        current = current / part
        if not fs_probe.is_dir(current):
            return
        yield current


def _named_hooks_dir(path: Path, project: Path) -> Path | None:
    """The hooks directory, named by the ``core.hooksPath`` of a repository above ``path`` in the
    project, that ``path`` is in (or is), or None; the innermost repository's when several are."""
    found = None
    for current in _directories_down(project, path.parent):
        git_dir = current / ".git"
        if fs_probe.is_dir(git_dir):
            hooks = hooks_dir(git_dir)
            if hooks is not None and (hooks == path or is_under(path, hooks)):
                found = hooks
    return found


def venv_root(path: Path, project: Path) -> Path | None:
    """The virtualenv (a directory holding ``pyvenv.cfg``) inside ``project`` that ``path`` is in (the
    innermost), or None."""
    found = None
    for current in _directories_down(project, path):
        if current != project and fs_probe.is_file(current / "pyvenv.cfg"):
            found = current
    return found


def python_startup() -> Path | None:
    """The file ``$PYTHONSTARTUP`` names (resolved), which every interactive Python of the person runs."""
    raw = os.environ.get("PYTHONSTARTUP")
    return Path(os.path.realpath(os.path.expanduser(raw))) if raw else None


def import_path_dirs() -> frozenset[Path]:
    """The directories on this Python's import path (where start-up files run), resolved."""
    return _import_path_dirs(tuple(sys.path))


@lru_cache(maxsize=8)
def _import_path_dirs(entries: tuple[str, ...]) -> frozenset[Path]:
    found = set()
    for entry in entries:
        if entry and os.path.isdir(entry):
            found.add(Path(os.path.realpath(entry)))
    return frozenset(found)


def sandbox_targets(project: Path, home: Path, found: Iterable[Path] = ()) -> list[tuple[Path, Kind]]:
    """What the sandbox binds read-only: the home rows that exist, the project's matches ``found``
    by the sandbox's own walk of the project (see :func:`name_may_be_host_executed`), and the
    virtualenvs among them (a ``pyvenv.cfg`` binds its whole directory).

    bubblewrap can only bind what exists, and Landlock can only grant by hierarchy: a name that
    does not exist yet, in a directory a command may write, is held by the approval layer (writes
    naming it are asked) and by the compare after each command (sandbox/host_watch.py); both
    backends say so in their limits.
    """
    targets: list[tuple[Path, Kind]] = []
    for row in HOST_PATHS:
        if row.root != "home":
            continue
        for match in sorted(home.glob(row.pattern)) if any(c in row.pattern for c in "*?[") else [home / row.pattern]:
            if os.path.lexists(match):
                targets.append((match, "dir" if match.is_dir() else "file"))
    for path in found:
        if path.name == "pyvenv.cfg":
            targets.append((path.parent, "dir"))
            continue
        if path.name == ".git" and path.is_dir():
            # The hooks directory its core.hooksPath names (often a tracked `.githooks/`), made if
            # absent so that no command creates one: git runs what is in it at every commit.
            hooks = hooks_dir(path)
            if hooks is not None and is_under(hooks, project):
                targets.append((hooks, "dir"))
        hit = host_executed(path, project, home)
        if hit is not None:
            targets.append((path, "dir" if path.is_dir() else "file"))
    startup = python_startup()
    if startup is not None and (is_under(startup, project) or is_under(startup, home)) and startup.is_file():
        targets.append((startup, "file"))
    for directory in import_path_dirs():
        if directory == project or is_under(directory, project):
            for name in ("sitecustomize.py", "usercustomize.py"):
                if (directory / name).exists():
                    targets.append((directory / name, "file"))
    return targets


# git configuration keys whose value is a program git runs (fnmatch patterns, lower case).
GIT_PROGRAM_KEYS = (
    "core.fsmonitor", "core.hookspath", "core.pager", "core.sshcommand", "core.editor", "core.askpass",
    "core.gitproxy", "core.worktree", "sequence.editor", "diff.external", "gpg.program", "gpg.*.program",
    "*.helper", "credential.*", "alias.*", "pager.*", "diff.*.command", "diff.*.textconv", "merge.*.driver",
    "filter.*.clean", "filter.*.smudge", "filter.*.process", "include.path", "includeif.*.path",
    "remote.*.uploadpack", "remote.*.receivepack", "remote.*.proxy", "http.proxy", "interactive.difffilter",
    "web.browser", "browser.*.cmd", "man.*.cmd", "difftool.*.cmd", "mergetool.*.cmd", "uploadpack.packobjectshook",
    "receive.procreceiverefs", "protocol.*.allow", "protocol.allow", "submodule.*.update", "ssh.variant",
)


def git_config_program(words: Sequence[str]) -> str | None:
    """The key a ``git config`` argument list (the words after ``config``) sets to a program, or None.

    Reads (``--get``, ``--list``, ``-l``) set nothing. Any other form whose key is in
    :data:`GIT_PROGRAM_KEYS` does, and so does an ``alias.*`` value starting with ``!``.
    """
    reading = {"--get", "--get-all", "--get-regexp", "--get-urlmatch", "-l", "--list", "--show-origin",
               "--show-scope", "--name-only", "get", "list"}
    if any(word in reading for word in words):
        return None
    operands: list[str] = []
    skip = False
    for word in words:
        if skip:
            skip = False
            continue
        if word in ("-f", "--file", "--blob", "--type", "--default", "--comment", "--value"):
            skip = True
            continue
        if word.startswith("-") or word in ("set", "unset", "--add", "add", "--replace-all"):
            continue
        operands.append(word)
    if not operands:
        return None
    key = operands[0].lower()
    if any(fnmatch.fnmatchcase(key, pattern) for pattern in GIT_PROGRAM_KEYS):
        return operands[0]
    return None
