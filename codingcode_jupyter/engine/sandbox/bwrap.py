"""Confining execute_command (and opted-in stdio MCP servers) with bubblewrap, failing closed.

Inside the sandbox the whole filesystem is read-only; the project, a private /tmp and the
``allowWrite`` paths are writable; secrets (~/.ssh, ~/.aws, /etc/shadow, the project's
``.env*`` files, ``denyRead``) are replaced by an empty read-only directory or /dev/null;
the protected files (``.codingcode/``, ``.git/hooks``, ``.git/config``, ``.mcp.json``,
``denyWrite``) are re-bound read-only over the writable project. There is no network
(``--unshare-net``) unless an allowlist sends traffic through :class:`AllowlistProxy`.
Every capability is dropped (as root, bwrap otherwise keeps CAP_SYS_ADMIN inside and a
command could simply unmount the masks), new privileges are off, the command gets its own
session and PID namespace, and it dies with its parent.

Mount facts this relies on (measured with bubblewrap 0.8): mounts apply in argument order, so the
private /tmp comes before a project that may live under /tmp; every mount target must
exist. A protected path that does not exist yet gets an empty placeholder on the host (an
empty directory or file, removed again by :meth:`CommandSandbox.aclose` if still empty),
which is then bound read-only: there is no other way to stop its creation inside a
writable bind with bubblewrap 0.8. Directories between the project and a protected path
are bound onto themselves, which makes them mount points that cannot be renamed away
(``mv .git .git.old && mkdir .git`` would otherwise sidestep a read-only ``.git/hooks``).

When bubblewrap is missing or cannot create namespaces, :class:`CommandSandbox` says why
(``active`` is False, ``unavailable_reason`` set) and :meth:`CommandSandbox.argv_for`
refuses: running unconfined is the caller's decision, taken by asking the user.
"""

from __future__ import annotations

import fnmatch
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Literal

from ..settings import SandboxSettings
from .proxy import FORWARDER_SOURCE, AllowlistProxy, validate_domain_patterns

__all__ = [
    "CommandSandbox",
    "SandboxUnavailable",
    "HOME_SECRETS",
    "SYSTEM_SECRETS",
    "PROTECTED_PATHS",
    "probe_bwrap",
]

log = logging.getLogger(__name__)

HOME_SECRETS = (
    ".ssh",
    ".aws",
    ".gnupg",
    ".config/gcloud",
    ".azure",
    ".kube",
    ".docker",
    ".netrc",
    ".git-credentials",
    ".pypirc",
)
SYSTEM_SECRETS = ("/etc/shadow", "/etc/gshadow")
# Relative to the project; the kind says what placeholder stops the path being created.
PROTECTED_PATHS: tuple[tuple[str, Literal["dir", "file"]], ...] = (
    (".codingcode", "dir"),
    (".git/hooks", "dir"),
    (".git/config", "file"),
    (".mcp.json", "file"),
)
# Directories never searched for .env files: vendored code, environments, caches.
_ENV_SCAN_SKIP = frozenset(
    {".git", "node_modules", ".venv", "venv", "__pycache__", ".tox", ".nox", ".mypy_cache", ".pytest_cache",
     ".ruff_cache", "site-packages", ".ipynb_checkpoints"}
)
# Environment variables that look like credentials are not handed to a sandboxed command:
# the kernel's own ANTHROPIC_API_KEY must not be readable by the code the agent runs.
_SECRET_ENV_MARKERS = ("API_KEY", "APIKEY", "ACCESS_KEY", "SECRET", "TOKEN", "PASSWORD", "PASSWD", "CREDENTIAL", "PRIVATE_KEY")
_SECRET_ENV_PREFIXES = ("ANTHROPIC_",)
PROXY_PORT = 3128
_PROXY_DIR_INSIDE = "/tmp/.codingcode-proxy"

_probe_cache: dict[str, str | None] = {}
_probe_lock = threading.Lock()
_empty_dir: str | None = None
_warned: set[str] = set()


class SandboxUnavailable(RuntimeError):
    """argv_for was called on a sandbox that cannot confine commands (see unavailable_reason)."""


def _base_flags() -> list[str]:
    return [
        "--die-with-parent",
        "--new-session",
        "--unshare-all",
        "--cap-drop", "ALL",
        "--ro-bind", "/", "/",
        "--dev", "/dev",
        "--proc", "/proc",
        # Before any bind under /tmp: a later tmpfs would hide it (bwrap mounts in argument order).
        "--tmpfs", "/tmp",
    ]  # fmt: skip


def probe_bwrap(bwrap: str) -> str | None:
    """None when ``bwrap`` can build the sandbox here, else why not; run once per path and process."""
    with _probe_lock:
        if bwrap in _probe_cache:
            return _probe_cache[bwrap]
        reason = _run_probe(bwrap)
        _probe_cache[bwrap] = reason
        return reason


def _run_probe(bwrap: str) -> str | None:
    if not sys.platform.startswith("linux"):
        return f"the bubblewrap sandbox needs Linux (this is {sys.platform})"
    if not os.path.isfile(bwrap) or not os.access(bwrap, os.X_OK):
        return f"bubblewrap not found ({bwrap} is not an executable file; install the 'bubblewrap' package)"
    try:
        done = subprocess.run(
            [bwrap, *_base_flags(), "--", "true"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=10,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"bubblewrap could not be started: {error}"
    if done.returncode != 0:
        detail = done.stderr.decode(errors="replace").strip().splitlines()
        hint = detail[-1] if detail else f"exit status {done.returncode}"
        return f"bubblewrap cannot create its namespaces here ({hint}); user namespaces may be blocked"
    return None


def _empty_directory() -> str:
    global _empty_dir
    if _empty_dir is None or not os.path.isdir(_empty_dir):
        _empty_dir = tempfile.mkdtemp(prefix="codingcode-empty-")
        os.chmod(_empty_dir, 0o555)
    return _empty_dir


def _expand(project: Path, raw: str) -> Path:
    path = os.path.expanduser(raw)
    if not os.path.isabs(path):
        path = os.path.join(project, path)
    return Path(os.path.realpath(path))


def _within(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


@dataclass
class _DirCache:
    mtime_ns: int
    env_files: list[str]
    subdirs: list[str]


class CommandSandbox:
    """How commands run confined in one project; build with :meth:`create`."""

    def __init__(
        self,
        project: Path,
        settings: SandboxSettings,
        *,
        bwrap: str | None,
        unavailable_reason: str | None,
        allowed_env_files: Iterable[str] = (),
        home: Path | None = None,
    ) -> None:
        self.project = Path(os.path.realpath(project))
        self.settings = settings
        self.bwrap = bwrap
        self.enabled = settings.enabled
        self.unavailable_reason = unavailable_reason if settings.enabled else None
        self.active = settings.enabled and unavailable_reason is None
        self.fail_if_unavailable = settings.failIfUnavailable
        self.allowed_env_files = [entry.strip("/") for entry in allowed_env_files if entry.strip("/")]
        self.home = Path(os.path.realpath(home if home is not None else Path.home()))
        domains = settings.network.allowedDomains or []
        self.allowed_domains = list(domains)
        self.network = f"allowlist: {', '.join(domains)}" if domains else "off"
        self._proxy: AllowlistProxy | None = None
        self._proxy_lock = threading.Lock()
        # Called (on the proxy's thread) with each network decision; the runtime audits them.
        self.on_network: Callable[[Any], None] | None = None
        self._placeholders: list[Path] = []
        self._env_cache: dict[str, _DirCache] = {}
        self.writable_roots = [self.project]
        for raw in settings.filesystem.allowWrite:
            path = _expand(self.project, raw)
            if path.exists() and path not in self.writable_roots:
                self.writable_roots.append(path)
        self.deny_read = [_expand(self.project, raw) for raw in settings.filesystem.denyRead]
        self.deny_write = [
            (_expand(self.project, raw), "dir" if raw.endswith("/") else "file") for raw in settings.filesystem.denyWrite
        ]

    @classmethod
    def create(
        cls,
        project: Path,
        settings: SandboxSettings,
        *,
        allowed_env_files: Iterable[str] = (),
        bwrap: str | None = None,
        home: Path | None = None,
    ) -> "CommandSandbox":
        """The sandbox for ``project``: probes bubblewrap once per process (``bwrap`` overrides PATH)."""
        reason: str | None = None
        path = bwrap if bwrap is not None else shutil.which("bwrap")
        if settings.enabled:
            problems = validate_domain_patterns(settings.network.allowedDomains or [])
            if problems:
                reason = "settings: sandbox.network.allowedDomains: " + "; ".join(problems)
            elif path is None:
                reason = "bubblewrap not found on PATH (install the 'bubblewrap' package)"
            else:
                reason = probe_bwrap(path)
            if reason is not None and reason not in _warned:
                # Said once per process; the session turns it into a notice for the user.
                _warned.add(reason)
                log.warning("command sandbox unavailable: %s", reason)
        return cls(
            Path(project), settings, bwrap=path, unavailable_reason=reason,
            allowed_env_files=allowed_env_files, home=home,
        )  # fmt: skip

    def describe(self) -> str:
        """One line for ``%agent status``."""
        if not self.enabled:
            return "off (disabled in settings: sandbox.enabled is false)"
        if self.active:
            return f"bubblewrap: on (network {self.network})"
        then = "every command is refused (failIfUnavailable)" if self.fail_if_unavailable else "every command will be asked"
        return f"off: {self.unavailable_reason} — {then}"

    def card_note(self) -> str:
        """What an approval card says about where the command will run."""
        if self.active:
            return f"runs sandboxed (bubblewrap, network {self.network})"
        if not self.enabled:
            return "runs unsandboxed (sandbox disabled in settings)"
        return f"runs UNSANDBOXED: {self.unavailable_reason}"

    def argv_for(self, command: str, cwd: Path) -> list[str]:
        """The full argv (``bwrap ... -- bash -c command``) running ``command`` confined in ``cwd``."""
        return self.wrap(["bash", "-c", command], cwd)

    def wrap(self, argv: list[str], cwd: Path) -> list[str]:
        """Any argv confined the same way (for stdio MCP servers that opt in)."""
        if not self.active or self.bwrap is None:
            raise SandboxUnavailable(
                self.unavailable_reason or "the sandbox is disabled in settings; the command would run unconfined"
            )
        if not argv:
            raise ValueError("an empty command cannot be sandboxed")
        cwd = Path(os.path.realpath(cwd))
        args = [self.bwrap, *_base_flags()]
        # Shallow first, so an allowWrite path inside the project is not hidden by the project's bind.
        for root in sorted(self.writable_roots, key=lambda p: len(p.parts)):
            args += ["--bind", str(root), str(root)]
        args += self._protections()
        args += self._masks()
        args += self._unset_secret_env()
        if self.allowed_domains:
            proxy = self._ensure_proxy()
            url = f"http://127.0.0.1:{PROXY_PORT}"
            args += ["--ro-bind", str(proxy.socket_dir), _PROXY_DIR_INSIDE]
            for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY", "all_proxy"):
                args += ["--setenv", name, url]
            args += ["--unsetenv", "NO_PROXY", "--unsetenv", "no_proxy"]
            args += ["--chdir", str(cwd), "--"]
            forwarder = os.path.realpath(sys.executable)
            args += [forwarder, "-I", "-S", "-c", FORWARDER_SOURCE, str(PROXY_PORT),
                     f"{_PROXY_DIR_INSIDE}/{AllowlistProxy.socket_name}"]  # fmt: skip
            return args + list(argv)
        return args + ["--chdir", str(cwd), "--", *argv]

    def _writable_root(self, path: Path) -> Path | None:
        for root in sorted(self.writable_roots, key=lambda p: len(p.parts), reverse=True):
            if _within(path, root):
                return root
        return None

    def _protected_targets(self) -> list[tuple[Path, Literal["dir", "file"]]]:
        git = self.project / ".git"
        targets: list[tuple[Path, Literal["dir", "file"]]] = []
        for rel, kind in PROTECTED_PATHS:
            if rel.startswith(".git/") and Path(os.path.realpath(git)) not in self.writable_roots:
                continue  # the whole .git is protected below
            targets.append((self.project / rel, kind))
        if Path(os.path.realpath(git)) not in self.writable_roots:
            # A writable .git runs code on the host however hooks and config are guarded:
            # .git/commondir redirects git to another config (core.fsmonitor), and so do
            # .git/modules/*/config. Only `allowWrite: [".git"]` relaxes this.
            targets.append((git, "dir"))
        targets += self.deny_write
        return targets

    def _protections(self) -> list[str]:
        pins: set[Path] = set()
        readonly: set[Path] = set()
        for path, kind in self._protected_targets():
            plan = self._protect(path, kind)
            if plan is not None:
                pins.update(plan[0])
                readonly.add(plan[1])
        # A path inside another read-only path is already covered; binding it again or
        # pinning it writable would undo the outer protection.
        readonly = {p for p in readonly if not any(other in p.parents for other in readonly)}
        pins = {p for p in pins if not any(_within(p, ro) for ro in readonly)}
        args: list[str] = []
        for pin in sorted(pins, key=lambda p: len(p.parts)):
            args += ["--bind", str(pin), str(pin)]
        for path in sorted(readonly, key=lambda p: len(p.parts)):
            args += ["--ro-bind", str(path), str(path)]
        return args

    def _protect(self, path: Path, kind: Literal["dir", "file"]) -> tuple[list[Path], Path] | None:
        """(directories to pin, path to bind read-only) for one protected path, or None."""
        real = Path(os.path.realpath(path))
        root = self._writable_root(real)
        if root is None:
            return None  # already read-only like the rest of the filesystem
        if real == root:
            return [], real
        pins: list[Path] = []
        current = root
        parts = real.relative_to(root).parts
        for index, part in enumerate(parts):
            current = current / part
            last = index == len(parts) - 1
            if not os.path.lexists(current):
                self._make_placeholder(current, kind if last else "dir")
                return pins, current
            if last:
                return pins, current
            if current.is_dir():
                pins.append(current)
        return pins, current

    def _make_placeholder(self, path: Path, kind: Literal["dir", "file"]) -> None:
        try:
            if kind == "dir":
                path.mkdir()
            else:
                path.touch(exist_ok=False)
        except FileExistsError:
            return
        except OSError as error:
            # bwrap then fails to mount it and the command does not run: closed, not open.
            log.warning("cannot create a placeholder for protected %s: %s", path, error)
            return
        self._placeholders.append(path)

    def _masks(self) -> list[str]:
        targets: list[Path] = []
        for rel in HOME_SECRETS:
            targets.append(self.home / rel)
        targets += [Path(p) for p in SYSTEM_SECRETS]
        targets += self.deny_read
        targets += self._env_files()
        seen: set[Path] = set()
        resolved: list[Path] = []
        for target in targets:
            # Mounts follow symlinks; mask what the path really is, and only if it exists
            # (a missing secret has nothing to hide, and the read-only root stops its creation).
            real = Path(os.path.realpath(target))
            if real in seen or not real.exists():
                continue
            seen.add(real)
            resolved.append(real)
        resolved.sort(key=lambda p: len(p.parts))
        args: list[str] = []
        masked: list[Path] = []
        for real in resolved:
            if any(_within(real, done) for done in masked):
                continue  # inside an already masked directory: there is no mount point left
            masked.append(real)
            source = _empty_directory() if real.is_dir() else os.devnull
            args += ["--ro-bind", source, str(real)]
        return args

    def _env_allowed(self, rel: str) -> bool:
        name = rel.rsplit("/", 1)[-1]
        for entry in self.allowed_env_files:
            if fnmatch.fnmatchcase(rel, entry) or ("/" not in entry and fnmatch.fnmatchcase(name, entry)):
                return True
        return False

    def _env_files(self) -> list[Path]:
        found: list[Path] = []
        stack = [str(self.project)]
        live: set[str] = set()
        while stack:
            directory = stack.pop()
            live.add(directory)
            try:
                mtime = os.stat(directory).st_mtime_ns
            except OSError:
                continue
            cached = self._env_cache.get(directory)
            if cached is None or cached.mtime_ns != mtime:
                # A directory's mtime changes when entries are added or removed in it, so an
                # unchanged directory need not be listed again.
                env_files, subdirs = [], []
                try:
                    with os.scandir(directory) as entries:
                        for entry in entries:
                            if entry.name.startswith(".env"):
                                env_files.append(entry.path)
                            elif entry.name not in _ENV_SCAN_SKIP and entry.is_dir(follow_symlinks=False):
                                subdirs.append(entry.path)
                except OSError:
                    continue
                cached = _DirCache(mtime, env_files, subdirs)
                self._env_cache[directory] = cached
            for path in cached.env_files:
                rel = os.path.relpath(path, self.project).replace(os.sep, "/")
                if not self._env_allowed(rel):
                    found.append(Path(path))
            stack.extend(cached.subdirs)
        for gone in set(self._env_cache) - live:
            del self._env_cache[gone]
        return found

    def _unset_secret_env(self) -> list[str]:
        args: list[str] = []
        for name in os.environ:
            upper = name.upper()
            if upper.startswith(_SECRET_ENV_PREFIXES) or any(marker in upper for marker in _SECRET_ENV_MARKERS):
                args += ["--unsetenv", name]
        return args

    def _ensure_proxy(self) -> AllowlistProxy:
        with self._proxy_lock:
            if self._proxy is None or not self._proxy.running:
                proxy = AllowlistProxy(self.allowed_domains, on_decision=self.on_network)
                proxy.start()
                self._proxy = proxy
            return self._proxy

    @property
    def proxy(self) -> AllowlistProxy | None:
        """The allowlist proxy, once a command needed it."""
        return self._proxy

    def _remove_placeholders(self) -> None:
        for path in reversed(self._placeholders):
            try:
                if path.is_dir() and not path.is_symlink():
                    path.rmdir()  # only if still empty
                elif path.is_file() and path.stat().st_size == 0:
                    path.unlink()
            except OSError:
                pass
        self._placeholders.clear()

    async def aclose(self) -> None:
        """Stop the proxy and remove still-empty placeholders (call when no command runs)."""
        proxy, self._proxy = self._proxy, None
        if proxy is not None:
            await proxy.aclose()
        self._remove_placeholders()
