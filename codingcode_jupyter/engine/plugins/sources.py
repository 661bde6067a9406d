"""Where a marketplace or a plugin comes from, and fetching the git ones.

A marketplace's source is the object a settings file's ``extraKnownMarketplaces.NAME.source``
holds, as Claude Code writes it: ``{"source": "directory", "path": DIR}``, ``{"source": "git",
"url": URL, "ref"?, "path"?}``, ``{"source": "github", "repo": "owner/name", "ref"?, "path"?}``,
``{"source": "file", "path": ".../marketplace.json"}``. A plugin's source is a marketplace
entry's ``source``: a path relative to the marketplace (``./plugins/x``), or ``{"source":
"github" | "url" | "git-subdir", ...}`` with ``ref``, ``sha`` and, for ``git-subdir``, the
``path`` inside the repository. ``url`` (a marketplace served over HTTP) and ``npm``/``pip``
sources are read, and said not to be supported here.

A git source is cloned from the URL or path written (https, ssh, git, file URLs, ``user@host:path``,
or a local path) into the person's cache, ``~/.codingcode/plugins/``, only when a session starts
or ``%agent plugins update`` asks (:func:`fetch_git`), never while settings are read: reading
only looks at what is on disk (:func:`local_tree`). Cloning runs no code of the repository (git's
``ext::`` and ``fd::`` transports are off, no hook runs), never asks for a password (a prompt
would hang the kernel), and an option-looking URL is refused.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

__all__ = ["Source", "marketplace_source", "plugin_source", "local_tree", "fetch_git", "cache_root",
           "FETCH_TIMEOUT_S"]

FETCH_TIMEOUT_S = 120.0
Kind = Literal["directory", "file", "git", "github", "url", "git-subdir", "npm", "pip", "unknown"]
_URL = re.compile(r"^(https?|ssh|git|file)://", re.IGNORECASE)
_SCP = re.compile(r"^[\w.+-]+@[\w.-]+:[^\s]+$")
_REPO = re.compile(r"^[\w.-]+/[\w.-]+$")
_SAFE = re.compile(r"[^A-Za-z0-9_.-]+")


@dataclass(frozen=True)
class Source:
    """One source, as written and as read here."""

    kind: Kind
    # A directory or file (directory, file, a relative plugin path), or what git clones (git, github, url, git-subdir).
    location: str
    ref: str | None = None
    sha: str | None = None
    # Inside what is fetched: the marketplace file or directory (git, github), the plugin's directory (git-subdir).
    path: str | None = None
    # Why this source cannot be used here (None when it can).
    problem: str | None = None

    @property
    def fetched(self) -> bool:
        """Whether it lives in the cache (cloned), not where it was written."""
        return self.kind in ("git", "github", "url", "git-subdir") and self.problem is None

    def describe(self) -> str:
        at = f" at {self.ref}" if self.ref else ""
        at += f" ({self.sha[:12]})" if self.sha else ""
        inside = f", {self.path}" if self.path else ""
        return f"{self.kind} {self.location}{at}{inside}"


def _text(raw: dict[str, Any], key: str) -> str | None:
    value = raw.get(key)
    return value.strip() if isinstance(value, str) and value.strip() else None


def _git_location(text: str, base: Path) -> tuple[str, str | None]:
    """What git clones for ``text`` (a URL, ``user@host:path``, or a path made absolute from ``base``),
    and why it is refused, if it is."""
    if text.startswith("-"):
        return text, "a URL starting with '-' would be read by git as an option"
    if "::" in text.split("/", 1)[0]:
        return text, "git's remote helpers (`ext::`, `fd::`) run commands; only URLs and paths are cloned"
    if _URL.match(text) or _SCP.match(text):
        return text, None
    return str(Path(os.path.expanduser(text)) if os.path.isabs(os.path.expanduser(text))
               else (base / os.path.expanduser(text))), None


def _local(text: str, base: Path) -> str:
    path = Path(os.path.expanduser(text))
    return str(path if path.is_absolute() else base / path)


def marketplace_source(raw: Any, base: Path) -> Source:
    """The ``source`` object of an ``extraKnownMarketplaces`` entry; ``base`` is where a relative
    path starts (the project)."""
    if not isinstance(raw, dict):
        return Source("unknown", str(raw), problem="`source` must be an object such as "
                                                   '{"source": "directory", "path": "..."}')
    kind = raw.get("source")
    path = _text(raw, "path")
    if kind == "directory" or kind == "file":
        if path is None:
            return Source(kind, "", problem=f"a {kind} source needs `path`")
        return Source(kind, _local(path, base))
    if kind == "git":
        url = _text(raw, "url")
        if url is None:
            return Source("git", "", problem="a git source needs `url`")
        location, problem = _git_location(url, base)
        return Source("git", location, ref=_text(raw, "ref"), path=path, problem=problem)
    if kind == "github":
        repo = _text(raw, "repo")
        if repo is None or not _REPO.match(repo):
            return Source("github", repo or "", problem="a github source needs `repo` as owner/name")
        return Source("github", f"https://github.com/{repo}.git", ref=_text(raw, "ref"), path=path)
    if kind == "url":
        return Source("url", _text(raw, "url") or "", problem="a marketplace served over HTTP (`url`) is not "
                      "fetched here; add it as a git or directory source")
    if kind in ("npm", "pip"):
        return Source(kind, str(raw.get("package", "")), problem=f"{kind} sources are not supported here")
    return Source("unknown", str(kind), problem=f"unknown source kind {kind!r} (directory, file, git or github)")


def plugin_source(raw: Any, root: Path, plugin_root: str | None = None) -> Source:
    """A marketplace entry's ``source``: relative to the marketplace's ``root`` (through
    ``metadata.pluginRoot`` when one is set), or a repository to clone."""
    if isinstance(raw, str):
        text = raw.strip()
        if not text:
            return Source("directory", "", problem="`source` is empty")
        if not text.startswith(("./", "../", "/", "~")) and plugin_root:
            text = f"{plugin_root.rstrip('/')}/{text}"
        return Source("directory", _local(text, root))
    if not isinstance(raw, dict):
        return Source("unknown", str(raw), problem="`source` must be a path or an object")
    kind = raw.get("source")
    if kind == "github":
        repo = _text(raw, "repo")
        if repo is None or not _REPO.match(repo):
            return Source("github", repo or "", problem="a github source needs `repo` as owner/name")
        return Source("github", f"https://github.com/{repo}.git", ref=_text(raw, "ref"), sha=_text(raw, "sha"))
    if kind in ("url", "git", "git-subdir"):
        url = _text(raw, "url") or _text(raw, "repo")
        if url is None:
            return Source(kind, "", problem=f"a {kind} source needs `url`")
        if kind == "git-subdir" and _REPO.match(url):
            url = f"https://github.com/{url}.git"
        location, problem = _git_location(url, root)
        return Source("git-subdir" if kind == "git-subdir" else "url", location, ref=_text(raw, "ref"),
                      sha=_text(raw, "sha"), path=_text(raw, "path"), problem=problem)
    if kind in ("npm", "pip"):
        return Source(kind, str(raw.get("package", "")), problem=f"{kind} plugin sources are not supported here")
    if kind in ("directory", "path"):
        path = _text(raw, "path")
        return Source("directory", _local(path, root)) if path else Source("directory", "", problem="no `path`")
    return Source("unknown", str(kind), problem=f"unknown plugin source kind {kind!r}")


def cache_root() -> Path:
    """Where fetched marketplaces and plugins are kept (the person's own directory)."""
    from ..user_dir import user_dir

    return user_dir() / "plugins"


def _cache_dir(kind: str, name: str, source: Source) -> Path:
    digest = hashlib.sha256("\0".join([source.location, source.ref or "", source.sha or ""]).encode()).hexdigest()
    return cache_root() / kind / f"{_SAFE.sub('_', name)[:60]}-{digest[:12]}"


def local_tree(source: Source, name: str, kind: str) -> Path:
    """The directory ``source`` is read from now: where it was written, or its clone in the cache
    (which may not exist yet; nothing is fetched here)."""
    if source.fetched:
        return _cache_dir(kind, name, source)
    return Path(source.location)


def _git_env() -> dict[str, str]:
    env = dict(os.environ)
    # A credential prompt would wait forever for a terminal nobody watches.
    env.update({"GIT_TERMINAL_PROMPT": "0", "GCM_INTERACTIVE": "never", "GIT_SSH_COMMAND": "ssh -o BatchMode=yes"})
    return env


def _git(args: list[str], cwd: Path | None = None, timeout: float = FETCH_TIMEOUT_S) -> str | None:
    """Run git; None on success, else the reason in one line."""
    command = ["git", "-c", "protocol.ext.allow=never", "-c", "protocol.fd.allow=never",
               "-c", "core.hooksPath=/dev/null", *args]
    try:
        done = subprocess.run(command, cwd=cwd, env=_git_env(), capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL, check=False)
    except subprocess.TimeoutExpired:
        return f"git {args[0]} did not finish within {timeout:g} s"
    except OSError as error:
        return f"git could not run: {error}"
    if done.returncode != 0:
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        return (lines[-1] if lines else f"git {args[0]} failed with exit code {done.returncode}")[:300]
    return None


def fetch_git(source: Source, name: str, kind: str, *, update: bool = False) -> str | None:
    """Clone ``source`` into its place in the cache (again, when ``update``); None when it is there,
    else why not. The new clone replaces the old one only once complete."""
    if not source.fetched:
        return source.problem
    dest = _cache_dir(kind, name, source)
    if dest.is_dir() and not update:
        return None
    dest.parent.mkdir(parents=True, exist_ok=True)
    partial = dest.with_name(f"{dest.name}.partial-{os.getpid()}")
    shutil.rmtree(partial, ignore_errors=True)
    args = ["clone", "--quiet"]
    if source.sha is None:
        args += ["--depth", "1"]
    if source.ref:
        args += ["--branch", source.ref]
    problem = _git([*args, "--", source.location, str(partial)])
    if problem is None and source.sha:
        problem = _git(["checkout", "--quiet", "--detach", source.sha], cwd=partial)
    if problem is not None:
        shutil.rmtree(partial, ignore_errors=True)
        return f"cloning {source.location} failed: {problem}"
    old = dest.with_name(f"{dest.name}.old-{os.getpid()}")
    if dest.exists():
        dest.rename(old)
    partial.rename(dest)
    shutil.rmtree(old, ignore_errors=True)
    return None
