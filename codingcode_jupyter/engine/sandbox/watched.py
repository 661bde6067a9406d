"""What the compare after each command looks inside: the parts of a repository git runs, the agent's
own settings, and what a fresh ``git init`` leaves (which is nothing the host runs).

A command may write ``.git`` (objects, refs, the index, HEAD, logs, packed-refs: what ``git add``,
``commit``, ``checkout -b`` write), but not what git *runs* or reads as settings: the hooks, the
configuration (``core.fsmonitor``, ``core.hooksPath``, aliases, filters), ``commondir`` (which
points git at another configuration), ``info/`` (attributes choose filter drivers), and the same
in each submodule's and worktree's git directory. bubblewrap binds those read-only when they exist;
whatever a command creates among them, and under Landlock whatever it changes, is found by the
compare (:mod:`.host_watch`) and put to the person.

A repository a command creates (``git init``) holds only sample hooks and a configuration of
plain keys: :func:`fresh_repository` recognises it, so ``git init`` brings no question. Anything
more (a hook, a key that names a program, a line git would not parse) and it is asked about.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Iterator

__all__ = ["stock_activate", "git_host_parts", "git_host_files", "agent_files", "fresh_repository", "AGENT_WHAT", "GIT_WHAT"]

# A repository's git directory: what of it the host runs or reads as settings.
_GIT_FILES = ("config", "config.worktree", "commondir")
_GIT_DIRS = ("hooks", "info")
GIT_WHAT = "what git runs on the host from a repository (hooks, config, commondir, info)"
AGENT_WHAT = "the agent's own settings, rules, hooks and MCP servers (.codingcode, .mcp.json)"
# Under .codingcode, what the kernel itself writes while commands run (the audit log, transcripts,
# MCP server logs) and undo's copies: not compared, except the shadow repository's own settings
# and hooks, which the kernel's git reads.
_AGENT_SKIPPED = ("audit.jsonl", "sessions", "logs", "checkpoints")
_SHADOW = ("checkpoints", "shadow.git")
# Bounds: a tree bigger than this is not a settings directory; what lies beyond is not listed.
_MAX_FILES = 5000
_MAX_DEPTH = 12


def _files(root: Path, depth: int = 0) -> Iterator[Path]:
    """Every non-directory entry below ``root`` (links not followed), bounded."""
    try:
        with os.scandir(root) as entries:
            listed = list(entries)
    except OSError:
        return
    for entry in listed:
        if entry.is_dir(follow_symlinks=False):
            if depth < _MAX_DEPTH:
                yield from _files(Path(entry.path), depth + 1)
        else:
            yield Path(entry.path)


def _bounded(found: Iterator[Path]) -> list[Path]:
    out: list[Path] = []
    for path in found:
        out.append(path)
        if len(out) >= _MAX_FILES:
            break
    return out


def git_host_parts(git_dir: Path) -> list[Path]:
    """What of ``git_dir`` git runs or reads as settings, that exists now (directories whole): bound
    read-only by bubblewrap; its submodules' and worktrees' git directories too."""
    return list(_git_parts(git_dir, 0))


def git_host_files(git_dir: Path) -> list[Path]:
    """The files of :func:`git_host_parts`, each one (what the compare lists)."""
    found: list[Path] = []
    for part in _git_parts(git_dir, 0):
        if part.is_dir() and not part.is_symlink():
            found += _files(part)
        else:
            found.append(part)
    return _bounded(iter(found))


def _git_parts(git_dir: Path, depth: int) -> Iterator[Path]:
    for name in (*_GIT_FILES, *_GIT_DIRS):
        if os.path.lexists(git_dir / name):
            yield git_dir / name
    if depth >= 4:
        return
    for sub in ("modules", "worktrees"):
        yield from _nested_git_dirs(git_dir / sub, depth, sub == "modules")


def _nested_git_dirs(root: Path, depth: int, modules: bool) -> Iterator[Path]:
    """The git directories under ``modules/`` (nested by a submodule's path) or ``worktrees/``."""
    try:
        with os.scandir(root) as entries:
            children = [Path(e.path) for e in entries if e.is_dir(follow_symlinks=False)]
    except OSError:
        return
    for child in children:
        if os.path.lexists(child / "HEAD") or os.path.lexists(child / "config"):
            yield from _git_parts(child, depth + 1)
            if os.path.lexists(child / "gitdir"):
                yield child / "gitdir"
        elif modules and depth < 4:
            yield from _nested_git_dirs(child, depth + 1, True)  # a submodule at a/b lives in modules/a/b


def agent_files(project: Path) -> list[Path]:
    """The files of the project's ``.codingcode`` and its ``.mcp.json`` that configure the agent."""
    found: list[Path] = []
    if os.path.lexists(project / ".mcp.json"):
        found.append(project / ".mcp.json")
    root = project / ".codingcode"
    try:
        with os.scandir(root) as entries:
            listed = [Path(e.path) for e in entries if e.name not in _AGENT_SKIPPED]
    except OSError:
        return found
    for path in listed:
        if path.is_dir() and not path.is_symlink():
            found += _files(path)
        else:
            found.append(path)
    shadow = root.joinpath(*_SHADOW)
    if shadow.is_dir():
        found += git_host_files(shadow)
    return _bounded(iter(found))


_SECTION = re.compile(r'\[\s*([A-Za-z0-9.-]+)(?:\s+"((?:[^"\\]|\\.)*)")?\s*\]')
_KEY = re.compile(r"([A-Za-z][A-Za-z0-9-]*)\s*(?:=.*)?")
# What `git init` and ordinary work write into a new repository's configuration (lower case;
# `*` is a remote's or branch's name). Every other key, whatever it sets, makes it a question.
_PLAIN_KEYS = (
    "core.repositoryformatversion", "core.filemode", "core.bare", "core.logallrefupdates", "core.ignorecase",
    "core.precomposeunicode", "core.symlinks", "extensions.objectformat", "init.defaultbranch",
    "user.name", "user.email", "remote.*.url", "remote.*.fetch", "branch.*.remote", "branch.*.merge",
)  # fmt: skip


def _plain_key(section: str, sub: str | None, key: str) -> bool:
    name = f"{section.lower()}.{'*.' if sub is not None else ''}{key.lower()}"
    return name in _PLAIN_KEYS


def _plain_config(text: str) -> bool:
    """Every line of a git configuration is a section, a comment or a plain key (see _PLAIN_KEYS)."""
    section: tuple[str, str | None] | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        heading = _SECTION.match(line)
        if heading is not None:
            section = (heading.group(1), heading.group(2))
            line = line[heading.end():].strip()
            if not line or line[0] in "#;":
                continue
        key = _KEY.fullmatch(line)
        if section is None or key is None or "\\" in line or not _plain_key(section[0], section[1], key.group(1)):
            return False
    return True


def fresh_repository(git_dir: Path) -> bool:
    """``git_dir`` (new since the command started) holds nothing the host runs: sample hooks only, a
    configuration of plain keys, no commondir, attributes, submodule or worktree directories."""
    if git_dir.is_symlink() or not git_dir.is_dir():
        return False
    for name in ("commondir", "config.worktree", "modules", "worktrees", "info/attributes"):
        if os.path.lexists(git_dir / name):
            return False
    hooks = git_dir / "hooks"
    if hooks.is_symlink():
        return False
    for hook in _files(hooks):
        if not hook.name.endswith(".sample") or hook.is_symlink():
            return False
    config = git_dir / "config"
    if not os.path.lexists(config):
        return True
    if config.is_symlink() or not config.is_file() or config.stat().st_size > 64 * 1024:
        return False
    try:
        text = config.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    return _plain_config(text)


def _venv_config(venv: Path) -> dict[str, str]:
    try:
        text = (venv / "pyvenv.cfg").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return {}
    pairs = (line.partition("=") for line in text.splitlines())
    return {key.strip().lower(): value.strip() for key, sep, value in pairs if sep}


def stock_activate(path: Path, venv: Path) -> bool:
    """``path`` (``bin/activate*`` of ``venv``) is, byte for byte, what this Python's ``venv`` module
    writes for that venv: the person's shell would source nothing else. Another tool's or another
    Python version's script is not recognised (and is asked about)."""
    import venv as venv_module

    if path.parent != venv / "bin" or path.is_symlink() or not path.is_file() or path.stat().st_size > 64 * 1024:
        return False
    scripts = Path(venv_module.__file__).parent / "scripts"
    template = next((t for t in (scripts / "common" / path.name, scripts / "posix" / path.name) if t.is_file()), None)
    if template is None:
        return False
    try:
        text, actual = template.read_text(encoding="utf-8"), path.read_bytes()
    except (OSError, UnicodeDecodeError):
        return False
    config = _venv_config(venv)
    prompt = config.get("prompt", venv.name).strip("'\"")
    names = {"python", "python3", f"python3.{sys.version_info[1]}", Path(config.get("executable", "python")).name}
    for name in names:
        rendered = (text.replace("__VENV_DIR__", str(venv)).replace("__VENV_NAME__", venv.name)
                    .replace("__VENV_PROMPT__", f"({prompt}) ").replace("__VENV_BIN_NAME__", "bin")
                    .replace("__VENV_PYTHON__", str(venv / "bin" / name)))
        if rendered.encode("utf-8") == actual:
            return True
    return False
