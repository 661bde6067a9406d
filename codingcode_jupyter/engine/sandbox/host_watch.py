"""Host-executed files a sandboxed command created or changed, found by comparing before and after.

bubblewrap binds read-only only what exists when a command starts, and Landlock grants by
hierarchy: a host-executed name created for the first time inside one command (``sub/.envrc``,
``git init fresh`` and then ``fresh/.git/config``, a ``.pth`` in a new directory) is not stopped
by either. So every sandboxed command is bracketed: :meth:`HostWatch.start` lists the project's
host-executed entries (the walk of :class:`.project_scan.ProjectScan`, by the table of
:mod:`..host_paths`), what git runs of each ``.git``, the agent's own settings (:mod:`.watched`),
and remembers each file's identity and content; :meth:`HostWatch.changes` lists them again once
the command ended (every process it started gone: bubblewrap's PID namespace, Landlock's launcher
as subreaper) and names what is new, changed or removed. Under Landlock nothing of the project
is read-only while a command runs (its top level is writable), so every file of a virtualenv or
of an editor's or IPython's directory is compared too, by its ctime, which no process can set back. The caller asks the
person (execute_command: one card, nobody there means no) and :meth:`HostWatch.quarantine`
moves what was not accepted out of the project, restoring a changed file's previous content.

A virtualenv the agent creates (``python -m venv .venv && .venv/bin/pip install x``) is ordinary
work: a directory that did not exist before the command and now holds ``pyvenv.cfg`` is the
agent's (:attr:`.bwrap.CommandSandbox.agent_venvs`), for the sandbox's life. Inside it, what
only that venv's own Python runs at its start (``.pth``, ``sitecustomize.py``, IPython and
Jupyter configuration, the venv itself) is neither asked about nor bound read-only: nothing on
the host runs that Python unless the person starts it, and it cannot be the kernel's own
interpreter (that one existed before the sandbox did). What other programs run (a ``.git``,
``.envrc``, editor tasks) is asked even there, and a directory on the kernel's import path never
counts as the agent's.
"""

from __future__ import annotations

import os
import shutil
import stat
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Literal, Protocol

from ..host_paths import PYTHON_START_PATTERNS, hooks_dir, host_executed, import_path_dirs
from .project_scan import ProjectScan
from .watched import AGENT_WHAT, GIT_WHAT, agent_files, fresh_repository, git_host_files, stock_activate

__all__ = ["HostChange", "HostWatch", "SECRET_WHAT", "is_agent_venv_entry", "python_startup_file"]

# A previous content is kept (to be put back) only up to this size: host-executed files are
# short scripts and configuration; a bigger one is moved aside without a copy to restore.
_KEEP_BYTES = 1 << 20
# Rows of a venv's shape that other programs than its own Python run.
_OTHER_PROGRAMS = frozenset(("**/bin/activate*", "**/share/jupyter/kernels/*/kernel.json"))
# What a hidden secret file is, on the card that asks about a change to it (see _secrets_before).
SECRET_WHAT = "a secret file the sandbox hides (programs on the host load it)"
# How far the coarse clock that stamps ctime may lag the one read when a command starts.
_CLOCK_SLACK_NS = 20_000_000


@dataclass(frozen=True)
class HostChange:
    """One host-executed entry a command created (``new``) or changed (``changed``)."""

    path: Path
    rel: str
    what: str
    change: Literal["new", "changed"]


@dataclass(frozen=True)
class _Seen:
    """What a host-executed entry was before the command: its identity, and a file's content."""

    identity: tuple[int, int, int, int, int]
    content: bytes | None


def _identity(path: Path) -> tuple[int, int, int, int, int] | None:
    # The ctime too: a command can write a file and put its size and mtime back (``touch -r``),
    # but not its ctime.
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_mode)


def _seen(path: Path) -> _Seen | None:
    identity = _identity(path)
    if identity is None:
        return None
    content = None
    if stat.S_ISREG(identity[4]) and identity[1] <= _KEEP_BYTES:
        try:
            content = path.read_bytes()
        except OSError:
            content = None
    return _Seen(identity, content)


def is_agent_venv_entry(path: Path, project: Path, home: Path, agent_venvs: set[Path]) -> bool:
    """``path`` lies in a virtualenv the agent created and is something only that venv's Python runs."""
    venv = next((v for v in agent_venvs if v == path or v in path.parents), None)
    if venv is None:
        return False
    if path.parent in import_path_dirs() or venv == Path(os.path.realpath(sys.prefix)):
        return False  # the kernel's own interpreter, or a directory it imports from
    if path.name == "pyvenv.cfg" and path.parent == venv:
        return True
    hit = host_executed(path, project, home)
    if hit is not None and hit.pattern in _OTHER_PROGRAMS:
        return False  # what the person's shell sources or Jupyter starts, not only this venv's Python
    return hit is None or hit.pattern in PYTHON_START_PATTERNS or hit.root == venv


class WatchedSandbox(Protocol):
    """What a watch reads and keeps in its sandbox (a :class:`~.bwrap.CommandSandbox`): where the
    project and the home are, its backend, its walk of the project, and what it remembers between
    commands."""

    @property
    def project(self) -> Path: ...

    @property
    def home(self) -> Path: ...

    @property
    def backend(self) -> Literal["bwrap", "landlock"] | None: ...

    @property
    def project_scan(self) -> ProjectScan: ...

    @property
    def placeholders(self) -> list[Path]: ...

    @property
    def agent_venvs(self) -> set[Path]: ...

    @property
    def host_accepted(self) -> dict[Path, tuple[int, int, int, int, int]]: ...

    @property
    def host_contents(self) -> dict[Path, Any]: ...


class HostWatch:
    """One sandboxed command's before-and-after view of the project's host-executed entries."""

    def __init__(self, sandbox: WatchedSandbox, *, landlock: bool | None = None) -> None:
        self.sandbox = sandbox
        self.project = sandbox.project
        self.home = sandbox.home
        scan = sandbox.project_scan
        # The dotenv files of this walk: argv_for takes them rather than walking again.
        self.env_files = scan.env_files()
        self._dirs = scan.directories()
        # Under Landlock the project's top level is writable, and with it everything below: what the
        # host runs is not held read-only while the command runs, so every file of it is compared.
        # ``landlock``: the process watched is confined by Landlock whatever the commands' backend
        # (a confined copy of the kernel).
        self.deep = sandbox.backend == "landlock" if landlock is None else landlock
        # Changes carry a ctime no process can set back; the coarse clock lags by a tick at most.
        self._since = time.time_ns() - _CLOCK_SLACK_NS
        self._what: dict[Path, str] = {}
        self._before: dict[Path, _Seen] = {}
        for path in self._entries(scan.host_found):
            seen = self._seen(path)
            if seen is not None:
                self._before[path] = seen
        if self.deep:
            self._secrets_before()

    def _secrets_before(self) -> None:
        """Under Landlock a hidden secret is unreadable but not unwritable: it inherits its directory's
        own rights, and the project's top level is writable, so a command could append to the
        person's ``.env`` (``NODE_OPTIONS=--require ./x.js`` for ``dotenv -- node``, or what direnv's
        ``dotenv`` exports into their shell) or replace it. bubblewrap binds it read-only; here each
        one the walk found is compared after the command like a file the host runs, its content kept
        (in the kernel, which reads it anyway) to be put back."""
        for path in self.env_files:
            if path in self._before or not os.path.isfile(path) or os.path.islink(path):
                continue
            seen = self._seen(path)
            if seen is not None:
                self._before[path] = seen
                self._what[path] = SECRET_WHAT

    @classmethod
    def start(cls, sandbox: WatchedSandbox, *, landlock: bool | None = None) -> "HostWatch":
        """List the host-executed entries now, before the command starts."""
        return cls(sandbox, landlock=landlock)

    def _seen(self, path: Path) -> _Seen | None:
        """What ``path`` is now; a file's content is read again only when its identity changed."""
        identity = _identity(path)
        if identity is None:
            return None
        cached = self.sandbox.host_contents.get(path)
        if isinstance(cached, _Seen) and cached.identity == identity:
            return cached
        seen = _seen(path)
        if seen is not None and seen.content is not None:
            self.sandbox.host_contents[path] = seen
        return seen

    def _entries(self, found: list[Path]) -> list[Path]:
        """The entries compared: the walk's host-executed names and, inside a repository's git
        directory, what git runs; the hooks directories core.hooksPath names; the agent's settings."""
        listed: dict[Path, None] = dict.fromkeys(found)
        for path in found:
            if path.name != ".git" or path.is_symlink() or not path.is_dir():
                continue
            for inner in git_host_files(path):
                listed.setdefault(inner)
                self._what[inner] = GIT_WHAT
            hooks = hooks_dir(path)
            if hooks is not None and (hooks == self.project or self.project in hooks.parents):
                listed.setdefault(hooks)
                listed.update(dict.fromkeys(git_host_files_in(hooks)))
        for inner in agent_files(self.project):
            listed.setdefault(inner)
            self._what[inner] = AGENT_WHAT
        startup = python_startup_file(self.project)
        if startup is not None:
            listed.setdefault(startup)
        return list(listed)

    def _deep_trees(self, found: list[Path]) -> list[Path]:
        """Directories whose every file the host may run (virtualenvs, editor and IPython settings),
        compared file by file under Landlock (bubblewrap binds them read-only)."""
        if not self.deep:
            return []
        trees = {path.parent for path in found if path.name == "pyvenv.cfg"}
        trees |= {path for path in found if path.name != ".git" and not path.is_symlink() and path.is_dir()}
        return sorted(t for t in trees if not is_agent_venv_entry(t, self.project, self.home, self.sandbox.agent_venvs))

    def changes(self) -> list[HostChange]:
        """What the command created or changed that the host runs (the agent's new venvs recorded first)."""
        scan = self.sandbox.project_scan
        scan.env_files(learn=False)
        found = list(scan.host_found)
        self._note_new_venvs(found)
        after = self._entries(found)
        changed: list[HostChange] = []
        settled: set[Path] = set()  # reported, or a fresh repository: nothing below is asked again
        for path in sorted({*after, *self._before}, key=lambda p: len(p.parts)):
            if not settled.isdisjoint(path.parents):
                continue
            change = self._change(path)
            if change == "fresh":
                settled.add(path)
            elif change is not None:
                changed.append(change)
                settled.add(path)
        for tree in self._deep_trees(found):
            changed += self._tree_changes(tree, settled)
        return changed

    def _change(self, path: Path) -> HostChange | Literal["fresh"] | None:
        """How ``path`` differs from before the command (None: not at all, or not the host's concern)."""
        if path in self.sandbox.placeholders and _empty(path):
            return None  # the sandbox's own mount target
        if is_agent_venv_entry(path, self.project, self.home, self.sandbox.agent_venvs):
            return None
        now = _identity(path)
        if path in self.sandbox.host_accepted and self.sandbox.host_accepted[path] == now:
            return None  # the person kept it after another command (one running at the same time)
        what = self._what_of(path)
        if what is None:
            return None
        before = self._before.get(path)
        rel = path.relative_to(self.project).as_posix()
        if before is None:
            if now is None:
                return None
            if path.name == ".git" and fresh_repository(path):
                return "fresh"  # what `git init` makes: sample hooks, a plain configuration
            venv = next((v for v in self.sandbox.agent_venvs if v in path.parents), None)
            if venv is not None and stock_activate(path, venv):
                return None  # an activate script as `python -m venv` writes it for this venv
            return HostChange(path, rel, what, "new")
        if now is None:
            # Removed: a file whose content was kept is put back unless the person agrees.
            return HostChange(path, rel, what, "changed") if before.content is not None else None
        if now != before.identity and not stat.S_ISDIR(now[4]):
            return HostChange(path, rel, what, "changed")
        return None

    def _what_of(self, path: Path) -> str | None:
        if path in self._what:
            return self._what[path]
        hit = host_executed(path, self.project, self.home)
        if hit is not None:
            return hit.what
        return None

    def _tree_changes(self, tree: Path, settled: set[Path]) -> list[HostChange]:
        """The files of ``tree`` changed since the command started (their ctime says so)."""
        hit = host_executed(tree / "x", self.project, self.home)
        what = hit.what if hit is not None else "a directory the host runs files from"
        found: list[HostChange] = []
        for path in _tree_files(tree):
            if path in self._before or not settled.isdisjoint(path.parents) or path in settled:
                continue
            try:
                st = os.lstat(path)
            except OSError:
                continue
            if st.st_ctime_ns < self._since:
                continue
            identity = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_mode)
            if self.sandbox.host_accepted.get(path) == identity:
                continue
            found.append(HostChange(path, path.relative_to(self.project).as_posix(), what, "changed"))
        return found

    def accept(self, changes: list[HostChange]) -> None:
        """The person kept these: a command running at the same time does not ask about them again."""
        for change in changes:
            identity = _identity(change.path)
            if identity is not None:
                self.sandbox.host_accepted[change.path] = identity

    def _note_new_venvs(self, found: list[Path]) -> None:
        for path in found:
            if path.name != "pyvenv.cfg" or path in self._before:
                continue
            venv = path.parent
            # Only a directory the command made: writing pyvenv.cfg into an existing one (the project,
            # src/) must not turn what is already there into the agent's.
            if venv != self.project and str(venv) not in self._dirs and self.project in venv.parents:
                self.sandbox.agent_venvs.add(venv)

    def quarantine(self, changes: list[HostChange]) -> list[str]:
        """Move each entry out of the project (into the user directory, which the sandbox hides) and
        put a changed file's previous content back; one line per entry saying where it went."""
        from ..user_dir import user_dir

        stamp = time.strftime("%Y%m%dT%H%M%S") + f"-{os.getpid()}-{time.monotonic_ns() % 10**6}"
        into = user_dir() / "quarantine" / _slug(self.project) / stamp
        lines: list[str] = []
        for change in changes:
            before = self._before.get(change.path)
            if not os.path.lexists(change.path):
                if change.change == "changed" and before is not None and before.content is not None:
                    lines.append(self._restore(change, before, "removed by the command"))
                continue  # otherwise moved aside already (by a command that ran at the same time)
            target = into / change.rel
            try:
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.move(str(change.path), str(target))
            except OSError as error:
                lines.append(f"{change.rel}: could not be moved aside ({error}); remove it before the host runs it")
                continue
            if change.change == "changed" and before is not None and before.content is not None:
                lines.append(self._restore(change, before, f"moved to {target}"))
                continue
            lines.append(f"{change.rel}: moved to {target}")
            self._remove_new_parents(change.path)
        return lines

    def _remove_new_parents(self, path: Path) -> None:
        """The directories the command made only to hold what was moved aside (``mkdir -p
        .codingcode``), once empty: the project is left as it was."""
        for parent in path.parents:
            if parent == self.project or self.project not in parent.parents or str(parent) in self._dirs:
                return
            try:
                parent.rmdir()
            except OSError:
                return

    def _restore(self, change: HostChange, before: _Seen, done: str) -> str:
        assert before.content is not None
        try:
            change.path.parent.mkdir(parents=True, exist_ok=True)
            change.path.write_bytes(before.content)
            os.chmod(change.path, stat.S_IMODE(before.identity[4]))
        except OSError as error:
            return f"{change.rel}: {done}; its previous content could not be restored ({error})"
        return f"{change.rel}: {done}; its previous content is back"


def _tree_files(tree: Path) -> Iterator[Path]:
    """Every non-directory entry below ``tree`` (links not followed)."""
    stack = [tree]
    while stack:
        try:
            with os.scandir(stack.pop()) as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(Path(entry.path))
                    else:
                        yield Path(entry.path)
        except OSError:
            continue


def git_host_files_in(hooks: Path) -> list[Path]:
    """Every file of a hooks directory core.hooksPath names."""
    return list(_tree_files(hooks)) if hooks.is_dir() and not hooks.is_symlink() else []


def python_startup_file(project: Path) -> Path | None:
    """The file ``$PYTHONSTARTUP`` names, when it lies in the project (Python runs it at every
    interactive start: the person's, outside the sandbox)."""
    raw = os.environ.get("PYTHONSTARTUP")
    if not raw:
        return None
    path = Path(os.path.realpath(os.path.expanduser(raw)))
    return path if project in path.parents else None


def _empty(path: Path) -> bool:
    try:
        if path.is_dir() and not path.is_symlink():
            return not any(path.iterdir())
        return path.is_file() and path.stat().st_size == 0
    except OSError:
        return False


def _slug(project: Path) -> str:
    return str(project).strip("/").replace("/", "_") or "root"
