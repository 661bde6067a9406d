"""Host-executed files a sandboxed command created or changed, found by comparing before and after.

bubblewrap binds read-only only what exists when a command starts, and Landlock grants by
hierarchy: a host-executed name created for the first time inside one command (``sub/.envrc``,
``git init fresh`` and then ``fresh/.git/config``, a ``.pth`` in a new directory) is not stopped
by either. So every sandboxed command is bracketed: :meth:`HostWatch.start` lists the project's
host-executed entries (the walk of :class:`.project_scan.ProjectScan`, by the table of
:mod:`..host_paths`) and remembers each file's identity and content; :meth:`HostWatch.changes`
lists them again once the command ended and names what is new or changed. The caller asks the
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
from typing import Literal, Protocol

from ..host_paths import PYTHON_START_PATTERNS, host_executed, import_path_dirs
from .project_scan import ProjectScan

__all__ = ["HostChange", "HostWatch", "is_agent_venv_entry"]

# A previous content is kept (to be put back) only up to this size: host-executed files are
# short scripts and configuration; a bigger one is moved aside without a copy to restore.
_KEEP_BYTES = 1 << 20


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
    return hit is None or hit.pattern in PYTHON_START_PATTERNS or hit.root == venv


class WatchedSandbox(Protocol):
    """What a watch reads and keeps in its sandbox (a :class:`~.bwrap.CommandSandbox`): where the
    project and the home are, its walk of the project, and what it remembers between commands."""

    @property
    def project(self) -> Path: ...

    @property
    def home(self) -> Path: ...

    @property
    def project_scan(self) -> ProjectScan: ...

    @property
    def placeholders(self) -> list[Path]: ...

    @property
    def agent_venvs(self) -> set[Path]: ...

    @property
    def host_accepted(self) -> dict[Path, tuple[int, int, int, int, int]]: ...


class HostWatch:
    """One sandboxed command's before-and-after view of the project's host-executed entries."""

    def __init__(self, sandbox: WatchedSandbox) -> None:
        self.sandbox = sandbox
        self.project = sandbox.project
        self.home = sandbox.home
        scan = sandbox.project_scan
        # The dotenv files of this walk: argv_for takes them rather than walking again.
        self.env_files = scan.env_files()
        self._dirs = scan.directories()
        self._before: dict[Path, _Seen] = {}
        for path in scan.host_found:
            seen = _seen(path)
            if seen is not None:
                self._before[path] = seen

    @classmethod
    def start(cls, sandbox: WatchedSandbox) -> "HostWatch":
        """List the host-executed entries now, before the command starts."""
        return cls(sandbox)

    def changes(self) -> list[HostChange]:
        """What the command created or changed that the host runs (the agent's new venvs recorded first)."""
        scan = self.sandbox.project_scan
        scan.env_files()
        found = list(scan.host_found)
        self._note_new_venvs(found)
        placeholders = set(self.sandbox.placeholders)
        changed: list[HostChange] = []
        for path in sorted(found, key=lambda p: len(p.parts)):
            if any(c.path in path.parents for c in changed):
                continue  # inside an entry already named (a new .git holds its hooks)
            if path in placeholders and _empty(path):
                continue  # the sandbox's own mount target
            if is_agent_venv_entry(path, self.project, self.home, self.sandbox.agent_venvs):
                continue
            if path in self.sandbox.host_accepted and self.sandbox.host_accepted[path] == _identity(path):
                continue  # the person kept it after another command (one running at the same time)
            hit = host_executed(path, self.project, self.home)
            if hit is None:
                continue
            before = self._before.get(path)
            rel = path.relative_to(self.project).as_posix()
            if before is None:
                changed.append(HostChange(path, rel, hit.what, "new"))
            elif stat.S_ISREG(before.identity[4]) and _identity(path) != before.identity:
                changed.append(HostChange(path, rel, hit.what, "changed"))
        return changed

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
            if not os.path.lexists(change.path):
                continue  # moved aside already (by a command that ran at the same time)
            target = into / change.rel
            try:
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.move(str(change.path), str(target))
            except OSError as error:
                lines.append(f"{change.rel}: could not be moved aside ({error}); remove it before the host runs it")
                continue
            before = self._before.get(change.path)
            if change.change == "changed" and before is not None and before.content is not None:
                try:
                    change.path.write_bytes(before.content)
                    os.chmod(change.path, stat.S_IMODE(before.identity[4]))
                    lines.append(f"{change.rel}: moved to {target}; its previous content is back")
                    continue
                except OSError as error:
                    lines.append(f"{change.rel}: moved to {target}; its previous content could not be restored ({error})")
                    continue
            lines.append(f"{change.rel}: moved to {target}")
        return lines


def _empty(path: Path) -> bool:
    try:
        if path.is_dir() and not path.is_symlink():
            return not any(path.iterdir())
        return path.is_file() and path.stat().st_size == 0
    except OSError:
        return False


def _slug(project: Path) -> str:
    return str(project).strip("/").replace("/", "_") or "root"
