"""Paths as rules see them: canonical, and whether the agent may write them unasked.

Protected files steer the agent or the kernel itself (rule files, the audit log, hooks,
MCP servers, git hooks and config, IPython startup files, Jupyter config); changing them
is a way around the approval pipeline, so writing them always asks, in every mode. So are the
files the host runs as code, from the one table of :mod:`..host_paths` the sandbox reads too.
"""

from __future__ import annotations

import os
import re
import sys
from functools import lru_cache
from pathlib import Path

from ..claude.files import CONFIG_DIR_VAR as CLAUDE_DIR_VAR, claude_dir
from ..host_paths import host_executed
from ..paths import is_within, resolve_path
from ..user_dir import ENV_VAR as USER_DIR_VAR, user_dir

__all__ = ["canonical", "protected_reason", "protected_roots", "relative_to_project", "same_file"]


def canonical(project: Path, path: str, cwd: str | None = None) -> Path:
    """``path`` resolved (``~``, ``..``, ``//``, symlinks) against ``cwd`` or the project."""
    base = cwd if cwd is not None else str(project)
    if "\x00" in path:
        raise ValueError("a path cannot hold a NUL byte")
    # /proc/<pid>/root is another process's view of /; the kernel follows it even where realpath cannot.
    written = os.path.normpath(os.path.join(base, os.path.expanduser(path)))
    match = _PROC_ROOT.match(written)
    if match:
        return resolve_path("/", "/" + (match.group(1) or "").lstrip("/"))
    resolved = resolve_path(base, path)
    match = _PROC_ROOT.match(str(resolved))
    if match:
        resolved = resolve_path("/", "/" + (match.group(1) or "").lstrip("/"))
    return resolved


_PROC_ROOT = re.compile(r"^/proc/(?:self|thread-self|\d+)(?:/task/\d+)?/root(/.*)?$")


def relative_to_project(project: Path, path: Path) -> str | None:
    """``path`` relative to the resolved project root, or None when it lies outside."""
    root = Path(os.path.realpath(project))
    if not is_within(path, root):
        return None
    rel = path.relative_to(root).as_posix()
    return "" if rel == "." else rel


def same_file(path: Path, other: str) -> bool:
    """True when ``path`` is ``other`` or a hard link to it."""
    if str(path) == other:
        return True
    try:
        a, b = os.stat(path), os.stat(other)
    except OSError:
        return False
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def protected_roots(project: Path) -> list[tuple[Path, bool, str]]:
    """(path, whole_tree, what it is) for every protected location."""
    key = (str(project), os.path.expanduser("~"), sys.prefix, os.environ.get("IPYTHONDIR"),
           os.environ.get("JUPYTER_CONFIG_DIR"), os.environ.get("JUPYTER_DATA_DIR"), os.environ.get(USER_DIR_VAR),
           os.environ.get(CLAUDE_DIR_VAR))
    return list(_protected_roots(key))


@lru_cache(maxsize=64)
def _protected_roots(key: tuple[str | None, ...]) -> tuple[tuple[Path, bool, str], ...]:
    # Resolved once per project and environment: every write a command line names is checked against them.
    return tuple(_build_protected_roots(Path(key[0] or ".")))


def _build_protected_roots(project: Path) -> list[tuple[Path, bool, str]]:
    root = Path(os.path.realpath(project))
    home = Path(os.path.realpath(os.path.expanduser("~")))
    ipython = Path(os.path.realpath(os.environ.get("IPYTHONDIR") or home / ".ipython"))
    jupyter = Path(os.path.realpath(os.environ.get("JUPYTER_CONFIG_DIR") or home / ".jupyter"))
    roots = [
        (root / ".codingcode", True, "the agent's settings, rules, hooks and audit log"),
        (home / ".codingcode", True, "the agent's user settings"),
        # The person's own settings and trust store are trusted as written: a write there could
        # trust any project or allow anything, so it is asked even in bypass mode.
        (Path(os.path.realpath(user_dir())), True, "the agent's user settings and trust store"),
        (Path(os.path.realpath(claude_dir())), True, "Claude Code's user settings, agents and hooks"),
        (root / ".claude", True, "Claude Code's project settings, rules, hooks and agents"),
        (root / ".mcp.json", False, "the MCP server configuration"),
        (root / ".git" / "config", False, "the git configuration"),
        (root / ".git" / "config.worktree", False, "the git configuration"),
        (root / ".git" / "commondir", False, "where git finds the repository it works on"),
        (root / ".git" / "hooks", True, "git hooks"),
        (ipython, True, "IPython profiles and startup files"),
        (jupyter, True, "Jupyter configuration"),
        (home / ".config" / "ipython", True, "IPython configuration"),
        (home / ".gitconfig", False, "the user's git configuration"),
        (home / ".config" / "git", True, "the user's git configuration"),
        (Path("/etc/gitconfig"), False, "the system git configuration"),
    ]
    for name in _HOME_STARTUP_FILES:
        roots.append((home / name, False, "a shell start-up file, run by every new shell"))
    roots.append((home / ".config" / "fish", True, "the fish shell's start-up files"))
    for system in ("/etc/bash.bashrc", "/etc/bashrc", "/etc/profile", "/etc/zshrc", "/etc/zshenv", "/etc/zprofile",
                   "/etc/zlogin", "/etc/environment", "/etc/csh.cshrc", "/etc/csh.login"):
        roots.append((Path(system), False, "a system shell start-up file, run by every new shell"))
    for system_tree in ("/etc/profile.d", "/etc/zsh", "/etc/fish"):
        roots.append((Path(system_tree), True, "system shell start-up files, run by every new shell"))
    for extra in (Path(sys.prefix) / "etc" / "jupyter", Path("/etc/jupyter"), Path("/usr/local/etc/jupyter")):
        roots.append((Path(os.path.realpath(extra)), True, "Jupyter configuration"))
    for extra in (Path(sys.prefix) / "etc" / "ipython", Path("/etc/ipython"), Path("/usr/local/etc/ipython")):
        roots.append((Path(os.path.realpath(extra)), True, "IPython configuration"))
    # A kernel spec names the command that starts a kernel: replacing it runs anything at the next start.
    data = os.environ.get("JUPYTER_DATA_DIR")
    for kernels in ([Path(data) / "kernels"] if data else []) + [
            home / ".local" / "share" / "jupyter" / "kernels", Path(sys.prefix) / "share" / "jupyter" / "kernels",
            Path("/usr/local/share/jupyter/kernels"), Path("/usr/share/jupyter/kernels")]:
        roots.append((Path(os.path.realpath(kernels)), True, "Jupyter kernel specs"))
    return roots


_HOME_STARTUP_FILES = (".bashrc", ".bash_profile", ".bash_login", ".profile", ".zshrc", ".zshenv", ".zprofile",
                       ".zlogin", ".zlogout", ".bash_logout", ".bash_aliases", ".kshrc", ".mkshrc", ".cshrc", ".tcshrc",
                       ".login", ".logout", ".inputrc", ".xprofile", ".xinitrc", ".pam_environment")


def protected_reason(project: Path, path: Path) -> str | None:
    """What the protected file at ``path`` is, or None when writing it needs no special care.

    A directory holding a protected file (`.git`, `.codingcode`'s parent excluded) counts too:
    moving or replacing it replaces what it holds.
    """
    project_root = Path(os.path.realpath(project))
    home = Path(os.path.realpath(os.path.expanduser("~")))
    # The one table of files the host runs as code (shared with the sandbox's read-only binds).
    hit = host_executed(path, project_root, home)
    if hit is not None:
        return hit.what
    broad = {Path("/"), home, home.parent, project_root, project_root.parent}
    parents = set(path.parents)
    # "Is `path` a directory above `root`" as a prefix test on the text: iterating `root.parents`
    # builds a Path per level for each of the ~60 roots, which was most of a command's judging.
    inside = str(path) if str(path).endswith("/") else str(path) + "/"
    holds = path not in broad and (path == project_root or project_root in parents or path == home or home in parents)
    for root, tree, what in protected_roots(project):
        # Both sides are resolved already: plain comparisons, no filesystem calls per root.
        if path == root or (tree and root in parents):
            return what
        if holds and root != path and str(root).startswith(inside):
            return f"a directory holding {what}"
    return None
