"""Confining execute_command (and opted-in stdio MCP servers) with bubblewrap, failing closed.

Inside the sandbox the whole filesystem is read-only; the project, a private /tmp and the
``allowWrite`` paths are writable. Secrets are replaced by an empty read-only directory or
/dev/null: the credential stores of the home directory (:data:`HOME_SECRETS`), the
shadow-like files of /etc (:data:`SYSTEM_SECRETS`), every dotenv file of the project
wherever it is (node_modules and .venv included; those a ``read_file`` rule allowed stay
visible), and ``denyRead``. The Jupyter runtime directory (the kernels' connection keys)
and ``$XDG_RUNTIME_DIR`` are replaced by a private empty tmpfs. /etc/passwd lists only
root, the caller and nobody. The protected files (``.codingcode/``, ``.mcp.json``, what git runs
of each ``.git``, the host-executed table, ``denyWrite``) are re-bound read-only over the writable
project. There is no network (``--unshare-net``) unless an allowlist sends traffic through
:class:`AllowlistProxy`.

Every capability is dropped (as root, bwrap otherwise keeps CAP_SYS_ADMIN inside and a
command could simply unmount the masks), new privileges are off, every mount is nosuid,
and the seccomp filter of :mod:`.seccomp` refuses Unix sockets (a host Docker or systemd
socket is reachable through a read-only mount) and setuid bits. The command gets its own
session and PID namespace, only allowlisted environment variables (see :mod:`.launcher`:
bwrap itself starts with that environment, since its own is readable inside as
/proc/1/environ), and it dies with its parent.

Mount facts this relies on (measured with bubblewrap 0.8): mounts apply in argument order, so the
private /tmp comes before a project that may live under /tmp; every mount target must
exist. A protected path that does not exist yet is not bound for a command compared after it
ends (execute_command): what the command creates there is found by that compare
(:mod:`.host_watch`), and the person's project shows nothing the sandbox made. For a process
nothing compares (an MCP server) and for ``denyWrite``, it gets an empty placeholder on the host
(removed again by :meth:`CommandSandbox.aclose` if still empty), bound read-only: there is no
other way to stop its creation inside a writable bind with bubblewrap 0.8. Directories between
the project and a protected path
are bound onto themselves, which makes them mount points that cannot be renamed away
(``mv .git .git.old && mkdir .git`` would otherwise sidestep a read-only ``.git/hooks``).
A secret that does not exist is not masked: there is nothing to hide, and the read-only
root stops its creation.

Finding the dotenv files walks the whole project on every command, listing again only the
directories whose mtime changed since the last walk (an entry added, removed or renamed
changes its directory's mtime); on a project of 200,000 files in 20,000 directories that
is one stat per directory (``benchmarks/bench_sandbox.py`` measures it).

When bubblewrap is missing or cannot create namespaces, :class:`CommandSandbox` says why
(``active`` is False, ``unavailable_reason`` set) and :meth:`CommandSandbox.argv_for`
refuses: running unconfined is the caller's decision, taken by asking the user.
"""

from __future__ import annotations

import functools
import glob
import itertools
import logging
import os
import pwd
import shlex
import shutil
import sys
import tempfile
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Literal, Mapping

from ..domains import validate_domain_patterns
from ..host_paths import HOST_PATHS, host_executed, sandbox_targets
from ..processes import Spawn
from ..secret_files import HOME_SECRETS
from ..settings import SandboxSettings
from ..user_dir import legacy_checkpoints_dir, user_dir
from . import landlock
from .backends import BACKEND_NAMES, Backend, base_flags, choose_backend, no_filter_reason, probe_bwrap
from .deny_paths import split_deny
from .home import NO_CREDENTIALS, PRODUCT_DIR, HomeView, allow_read_problems, home_view
from .host_watch import HostWatch, is_agent_venv_entry
from .launcher import PASSED_ENV, PROXY_FD, SECCOMP_FD, env_name_problems, filtered_env, launcher_argv
from .project_scan import ProjectScan
from .seccomp import sandbox_filter
from .warm import WarmLauncher, WarmRequest
from .watched import git_host_parts

if TYPE_CHECKING:
    # The allowlist proxy is imported by the first command that needs it (an allowlist is set).
    from .proxy import AllowlistProxy

__all__ = [
    "CommandSandbox",
    "SandboxUnavailable",
    "HOME_SECRETS",
    "SYSTEM_SECRETS",
    "PROTECTED_PATHS",
    "probe_bwrap",
]

log = logging.getLogger(__name__)

# Glob patterns: password hashes and their backups, sudo's rules, the host's private keys.
SYSTEM_SECRETS = (
    "/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-", "/etc/passwd-", "/etc/security/opasswd",
    "/etc/sudoers", "/etc/sudoers.d", "/etc/ssh/ssh_host_*_key", "/etc/ssl/private", "/etc/krb5.keytab",
)  # fmt: skip
# Relative to the project; the kind says what placeholder stops the path being created.
PROTECTED_PATHS: tuple[tuple[str, Literal["dir", "file"]], ...] = (
    (".codingcode", "dir"),
    (".git/hooks", "dir"),
    (".git/config", "file"),
    (".mcp.json", "file"),
)
# Inside bubblewrap's PID namespace: bwrap is 1, this shell 2; anything more was left by the command.
_LINGER = ('bash -c "$1"; rc=$?; i=0; while [ $i -lt 25 ]; do set -- /proc/[0-9]*; [ $# -le 2 ] && break; '
           'sleep 0.02; i=$((i + 1)); done; exit $rc')
_HOME_PATTERNS = frozenset(row.pattern for row in HOST_PATHS if row.root == "home")
# Accounts /etc/passwd keeps inside: enough for `id`, `ls -l` and getpwuid of the caller.
_KEPT_ACCOUNTS = (0, 65534)
PROXY_PORT = 3128

_PLAN_SERIAL = itertools.count(1)
_empty_dir: str | None = None
_empty_regular: str | None = None
_accounts: str | None = None
_warned: set[str] = set()


# Where the sandbox's private directory appears inside bubblewrap (its /tmp is a private tmpfs).
_INSIDE_PRIVATE = "/tmp/.codingcode-sandbox"
# What neither backend stops; both list it in their limits (status, doctor, `sandbox check`).
COMMON_LIMITS = (
    "a new file matching the host-executed table (engine/host_paths.py) in a directory a command may write "
    "(sub/.envrc, x.pth, git init sub) is not stopped while the command runs, only existing ones are read-only: "
    "execute_command compares the table's entries before and after each command and asks about each new or "
    "changed one, moving it out of the project unless the person keeps it (a long-lived MCP server the "
    "sandbox confines is not compared); the approval layer also asks before every write that names such a path",
    "a secret file created while a command runs is not hidden from that command (the masks are made when it starts)",
)
BWRAP_LIMITS = COMMON_LIMITS


def _system_secrets() -> set[Path]:
    return {Path(os.path.realpath(match)) for pattern in SYSTEM_SECRETS for match in glob.glob(pattern)}


def _stamp(path: str) -> tuple[int, int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_mtime_ns, st.st_ctime_ns, st.st_size)


def _glob_base(pattern: str) -> str:
    """The directory a glob pattern lists (the pattern itself when it has no wildcard)."""
    for index, char in enumerate(pattern):
        if char in "*?[":
            return os.path.dirname(pattern[:index])
    return pattern


def _pipe_holding(data: bytes) -> int:
    """The read end of a pipe that holds ``data`` and is closed for writing (bwrap reads to its end)."""
    read, write = os.pipe()
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(write, view) :]
    except BaseException:
        os.close(read)
        raise
    finally:
        os.close(write)
    return read


def _proxy_channel(socket_path: str) -> int:
    import socket

    channel = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        channel.connect(socket_path)
    except OSError as error:
        channel.close()
        raise OSError(f"the sandbox's network proxy is not answering: {error}") from None
    return channel.detach()


class SandboxUnavailable(RuntimeError):
    """argv_for was called on a sandbox that cannot confine commands (see unavailable_reason)."""


def _empty_directory() -> str:
    global _empty_dir
    if _empty_dir is None or not os.path.isdir(_empty_dir):
        _empty_dir = tempfile.mkdtemp(prefix="codingcode-empty-")
        os.chmod(_empty_dir, 0o555)
    return _empty_dir


def _empty_file() -> str:
    global _empty_regular
    if _empty_regular is None or not os.path.isfile(_empty_regular):
        path = os.path.join(tempfile.mkdtemp(prefix="codingcode-empty-file-"), "empty")
        with open(path, "w", encoding="utf-8"):
            pass
        os.chmod(path, 0o444)
        _empty_regular = path
    return _empty_regular


def _accounts_file() -> str:
    """An /etc/passwd with only root, the caller and nobody: the host's other users stay unlisted."""
    global _accounts
    if _accounts is None or not os.path.isfile(_accounts):
        lines = []
        for uid in sorted({*_KEPT_ACCOUNTS, os.getuid()}):
            try:
                entry = pwd.getpwuid(uid)
            except KeyError:
                continue
            fields = [entry.pw_name, "x", entry.pw_uid, entry.pw_gid, entry.pw_gecos, entry.pw_dir, entry.pw_shell]
            lines.append(":".join(map(str, fields)) + "\n")
        path = os.path.join(tempfile.mkdtemp(prefix="codingcode-passwd-"), "passwd")
        with open(path, "w", encoding="utf-8") as handle:
            handle.writelines(lines)
        os.chmod(path, 0o444)
        _accounts = path
    return _accounts


def _runtime_directories(home: Path) -> list[Path]:
    """Where Jupyter keeps kernel connection files (their keys run code in the kernel), and
    $XDG_RUNTIME_DIR, home of session sockets and of podman's registry credentials."""
    env = os.environ
    data_home = Path(env.get("XDG_DATA_HOME") or home / ".local" / "share")
    found = [home / ".local" / "share" / "jupyter" / "runtime", data_home / "jupyter" / "runtime"]
    if env.get("JUPYTER_DATA_DIR"):
        found.append(Path(env["JUPYTER_DATA_DIR"]) / "runtime")
    if env.get("JUPYTER_RUNTIME_DIR"):
        found.append(Path(env["JUPYTER_RUNTIME_DIR"]))
    found.append(Path(env.get("XDG_RUNTIME_DIR") or f"/run/user/{os.getuid()}"))
    return found


def _expand(project: Path, raw: str) -> Path:
    path = os.path.expanduser(raw)
    if not os.path.isabs(path):
        path = os.path.join(project, path)
    return Path(os.path.realpath(path))


def _within(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _kind(path: Path, raw: str) -> Literal["dir", "file"]:
    """How a denyWrite target is bound: a directory (or one named with a trailing `/`), else a file."""
    return "dir" if raw.endswith("/") or path.is_dir() else "file"


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
        backend: Backend = "bwrap",
        backend_reason: str = "",
    ) -> None:
        self.project = Path(os.path.realpath(project))
        self.settings = settings
        self.bwrap = bwrap
        self.enabled = settings.enabled
        self.unavailable_reason = unavailable_reason if settings.enabled else None
        self.active = settings.enabled and unavailable_reason is None
        # Which backend confines commands, and why that one (for status, doctor, the CLI).
        self.backend: Backend | None = backend if self.active else None
        self.backend_reason = backend_reason
        self.fail_if_unavailable = settings.failIfUnavailable
        self._scan = ProjectScan(self.project, allowed_env_files, watch_directories=settings.watchDirectories)
        # What aclose closes: a preview's twin borrows its sandbox's scan (preview.py), not to close.
        self._own_scan = self._scan
        self._walked: list[Path] | None = None
        self.allowed_env_files = self._scan.allowed_env_files
        self.home = Path(os.path.realpath(home if home is not None else Path.home()))
        domains = settings.network.allowedDomains or []
        self.allowed_domains = list(domains)
        self.denied_domains = list(settings.network.deniedDomains or [])
        self.network = f"allowlist: {', '.join(domains)}" if domains else "off"
        self._proxy: AllowlistProxy | None = None
        self._proxy_lock = threading.Lock()
        # Called (on the proxy's thread) with each network decision; the runtime audits them.
        self.on_network: Callable[[Any], None] | None = None
        self._placeholders: list[Path] = []
        # Virtualenvs a sandboxed command created in this sandbox's life: what only their own Python
        # runs stays writable and is not asked about (see sandbox/host_watch.py).
        self.agent_venvs: set[Path] = set()
        # Host-executed files a person kept after a command, as they were then (inode, size, mtime, mode).
        self.host_accepted: dict[Path, tuple[int, int, int, int, int]] = {}
        # The content of each compared file as last read, by identity: read again only once it changed.
        self.host_contents: dict[Path, Any] = {}
        # Whether the command being wrapped is compared after it ends (see argv_for).
        self._compared = False
        # Sandboxed commands running now; their placeholders go once none runs (see command()).
        self._running = 0
        # A long-lived process (an MCP server) was confined: its mounts keep the placeholders until aclose.
        self._pinned = False
        self.writable_roots = [self.project]
        for raw in settings.filesystem.allowWrite:
            path = _expand(self.project, raw)
            if path.exists() and path not in self.writable_roots:
                self.writable_roots.append(path)
        # Paths and patterns (the person's deny rules bring patterns; sandbox/deny_paths.py).
        read = split_deny(settings.filesystem.denyRead, self.project)
        self.deny_read = [*read.literal, *read.outside_found]
        self._scan.read_denied = read.inside
        # Hidden by what they are too: a rename or a hard link of one keeps it hidden (project_scan.py).
        self._scan.extra_hidden = [path for path in self.deny_read if _within(path, self.project)]
        self._home_view: HomeView | None = None
        self._private: Path | None = None
        # The last plan of each kind (bwrap's mounts, Landlock's rules) with what it was built from.
        self._plans: dict[str, tuple[tuple[object, ...], Any]] = {}
        # The launcher kept warm for Landlock commands (sandbox/warm.py), started with the first one.
        self._warm: WarmLauncher | None = None
        self._outside: list[str] | None = None
        self._deny_write_fixed: list[tuple[Path, Literal["dir", "file"]]] = []
        for raw in settings.filesystem.denyWrite:
            write = split_deny([raw], self.project)
            self._scan.write_denied += write.inside
            self._deny_write_fixed += [(path, _kind(path, raw)) for path in [*write.literal, *write.outside_found]]

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
        """The sandbox for ``project``: probes each backend once per process (``bwrap`` overrides PATH).

        ``sandbox.backend`` "auto" takes bubblewrap when it can build its namespaces here, else
        Landlock (containers refuse user namespaces; Landlock needs none)."""
        reason: str | None = None
        path = bwrap if bwrap is not None else shutil.which("bwrap")
        backend: Backend = "bwrap"
        why = ""
        if settings.enabled:
            home_real = Path(os.path.realpath(home if home is not None else Path.home()))
            domain_problems = validate_domain_patterns(settings.network.allowedDomains or [])
            env_problems = env_name_problems(settings.env)
            read_problems = allow_read_problems(home_real, settings.filesystem.allowRead)
            if domain_problems:
                reason = "settings: sandbox.network.allowedDomains: " + "; ".join(domain_problems)
            elif env_problems:
                reason = "settings: sandbox.env: " + "; ".join(env_problems)
            elif read_problems:
                reason = "settings: sandbox.filesystem.allowRead: " + "; ".join(read_problems)
            else:
                backend, why, reason = choose_backend(settings, path)
            if reason is not None and reason not in _warned:
                # Said once per process; the session turns it into a notice for the user.
                _warned.add(reason)
                log.warning("command sandbox unavailable: %s", reason)
        return cls(
            Path(project), settings, bwrap=path, unavailable_reason=reason,
            allowed_env_files=allowed_env_files, home=home, backend=backend, backend_reason=why,
        )  # fmt: skip

    def describe(self) -> str:
        """One line for ``%agent status``."""
        if not self.enabled:
            return "off (disabled in settings: sandbox.enabled is false)"
        if self.active:
            return f"{BACKEND_NAMES[self.backend or 'bwrap']}: on (network {self.network}) — {self.backend_reason}"
        from ..approval.types import when_unavailable

        return f"none: {self.unavailable_reason} — {when_unavailable(self.fail_if_unavailable)}"

    def card_note(self) -> str:
        """What an approval card says about where the command will run."""
        if self.active:
            return f"runs sandboxed ({BACKEND_NAMES[self.backend or 'bwrap']}, network {self.network})"
        if not self.enabled:
            return "runs unsandboxed (sandbox disabled in settings)"
        return f"runs UNSANDBOXED: {self.unavailable_reason}"

    @contextmanager
    def command(self) -> Iterator[None]:
        """Around one sandboxed command, from building its argv to its end: the empty placeholders made
        for it (``.mcp.json``, ``.git``) are removed once no sandboxed command runs any more, so the
        person's project is left as it was. Not earlier: removing a mount point under a live sandbox
        would detach the read-only mount that protects it there."""
        self._running += 1
        try:
            yield
        finally:
            self._running -= 1
            if self._running == 0 and not self._pinned:
                self._remove_placeholders()

    def argv_for(self, command: str, cwd: Path, *, watch: HostWatch | None = None,
                 thrown_away: bool = False) -> list[str]:
        """The full argv (``python launcher ... bwrap ... -- bash -c command``) running ``command`` in ``cwd``.

        ``watch``: the host watch made for this command just before (:meth:`watch_host`); its walk of
        the project serves, rather than a second one. With it, the command is compared after it ends,
        and the policy leans on that compare: ``.git`` is writable but for what git runs, nothing is
        made in the project to hold a mount, and under Landlock the top level is writable. Without
        one, nothing would see what the command leaves, so what the host runs stays unwritable.
        ``thrown_away``: the policy of a compared command for one whose project is discarded after
        it (a preview): nothing it leaves reaches the host, so it runs as the real one will."""
        argv = ["bash", "-c", command]
        if self.backend == "bwrap":
            # bubblewrap's PID namespace ends with the command: the waiting shell gives what it left
            # running the half second execute_command waits for output unconfined (Landlock's launcher
            # does the same), then the namespace takes the rest.
            argv = ["sh", "-c", _LINGER, "sh", command]
        if watch is None and not thrown_away:
            return self._wrap(argv, cwd)
        self._compared = True
        try:
            return self._wrap(argv, cwd, walked=watch.env_files if watch is not None else None)
        finally:
            self._compared = False

    def spawn_for(self, command: str, cwd: Path, env: Mapping[str, str] | None, *,
                  watch: HostWatch | None = None) -> Spawn:
        """How execute_command starts ``command``: as :meth:`argv_for` with ``watch``, but bubblewrap
        is started directly, without the Python launcher in front (its interpreter start was most of
        a command's start-up): the environment already filtered, the seccomp program on a pipe and
        the proxy channel passed as descriptors. The caller closes them once the process started.
        Landlock's launcher is the command's confinement and subreaper, so it stays."""
        if self.backend != "bwrap":
            return self._landlock_spawn(command, cwd, env, watch)
        argv = ["sh", "-c", _LINGER, "sh", command]
        self._compared = watch is not None
        self._walked = watch.env_files if watch is not None else self._scan.env_files()
        try:
            bwrap = self._bwrap_or_refuse()
            program, extra_env, real_cwd = self._checked(argv, cwd, (), sandbox_filter())
            proxy = self._ensure_proxy() if self.allowed_domains else None
            spawn = Spawn([], filtered_env(os.environ if env is None else env, extra_env))
            try:
                seccomp_fd = _pipe_holding(program)
                spawn.pass_fds = (seccomp_fd,)
                proxy_fd = None
                if proxy is not None:
                    proxy_fd = _proxy_channel(str(proxy.socket_path))
                    spawn.pass_fds = (seccomp_fd, proxy_fd)
                spawn.argv = self._bwrap_argv(bwrap, argv, real_cwd, seccomp_fd, proxy_fd)
            except BaseException:
                spawn.close()
                raise
            return spawn
        finally:
            self._walked = None
            self._compared = False

    def wrap(self, argv: list[str], cwd: Path, *, pass_env: Iterable[str] = ()) -> list[str]:
        """Any argv confined the same way (for stdio MCP servers that opt in).

        ``pass_env`` names variables to pass besides the allowlist and ``sandbox.env``: those
        of the environment the caller spawns the argv with (an MCP server's ``env`` entry).
        Such a process may outlive every command: the placeholders stay until :meth:`aclose`.
        """
        self._pinned = True
        return self._wrap(argv, cwd, pass_env=pass_env)

    def _wrap(self, argv: list[str], cwd: Path, *, pass_env: Iterable[str] = (),
              walked: list[Path] | None = None) -> list[str]:
        # One walk of the project per command: the masks and the protected paths both read it
        # (the Landlock plan through both), and it cannot change meaningfully between the two.
        self._walked = None
        self._walked = walked if walked is not None else self._scan.env_files()
        try:
            return self._wrap_walked(argv, cwd, pass_env=pass_env)
        finally:
            self._walked = None

    def _bwrap_or_refuse(self) -> str:
        if not self.active or self.backend != "bwrap" or self.bwrap is None:
            raise SandboxUnavailable(
                self.unavailable_reason or "the sandbox is disabled in settings; the command would run unconfined"
            )
        return self.bwrap

    def _wrap_walked(self, argv: list[str], cwd: Path, *, pass_env: Iterable[str] = ()) -> list[str]:
        if self.active and self.backend == "landlock":
            return self._landlock_wrap(argv, cwd, pass_env)
        bwrap = self._bwrap_or_refuse()
        program, extra_env, cwd = self._checked(argv, cwd, pass_env, sandbox_filter())
        proxy = self._ensure_proxy() if self.allowed_domains else None
        return [
            *launcher_argv(program, extra_env, str(proxy.socket_path) if proxy else None),
            *self._bwrap_argv(bwrap, argv, cwd, SECCOMP_FD, PROXY_FD if proxy else None),
        ]  # fmt: skip

    def _bwrap_argv(self, bwrap: str, argv: list[str], cwd: Path, seccomp_fd: int, proxy_fd: int | None) -> list[str]:
        """bwrap's own argv: the filter read from ``seccomp_fd``, the plan, the command (through the
        forwarder of the proxy channel at ``proxy_fd`` when there is an allowlist)."""
        args = [bwrap, *base_flags(), "--seccomp", str(seccomp_fd), *self._reused("bwrap", self._bwrap_plan)]
        args += ["--chdir", str(cwd)]
        if proxy_fd is None:
            return [*args, "--", *argv]
        url = f"http://127.0.0.1:{PROXY_PORT}"
        for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY", "all_proxy"):
            args += ["--setenv", name, url]
        from .proxy import FORWARDER_SOURCE

        forwarder = os.path.realpath(sys.executable)
        return [*args, "--", forwarder, "-I", "-S", "-c", FORWARDER_SOURCE, str(PROXY_PORT), str(proxy_fd), *argv]

    def _bwrap_plan(self) -> list[str]:
        """The mounts and settings of a command that do not depend on the command or its directory."""
        args = self._home_args()
        # Shallow first, so an allowWrite path inside the project is not hidden by the project's bind.
        for root in sorted(self.writable_roots, key=lambda p: len(p.parts)):
            args += ["--bind", str(root), str(root)]
        args += self._protections()
        args += self._masks()
        if self._home_hidden():
            # After every bind below it: the tmpfs took them as mount points, now nothing else goes in.
            args += ["--remount-ro", str(self.home)]
        for name, value in self._credential_env(inside=_INSIDE_PRIVATE).items():
            args += ["--setenv", name, value]
        return args

    # ----- plan reuse ------------------------------------------------------------------------------

    def _reused(self, kind: str, build: Callable[[], Any]) -> Any:
        """``build()``'s plan, or the last one of ``kind`` while nothing it was built from changed: the
        walk (no directory of the project listed again: ProjectScan.generation), what it found, the
        policy switches, and the directories and files outside the project it reads (stamped)."""
        key = self._plan_key()
        last = self._plans.get(kind)
        if last is not None and last[0] == key:
            return last[1]
        made = len(self._placeholders)
        plan = build()
        if len(self._placeholders) == made:
            # A placeholder made now changes the project: the next walk lists it again anyway.
            self._plans[kind] = (key, plan)
        return plan

    def _plan_key(self) -> tuple[object, ...]:
        scan = self._scan
        git_files = [path / name for path in scan.host_found if path.name == ".git" for name in ("config", "commondir")]
        return (
            self.backend, self._compared, frozenset(self.agent_venvs), scan.generation,
            tuple(self._env_files()), tuple(scan.host_found), tuple(scan.write_denied_found),
            str(self.private_dir()),
            _empty_directory(), _empty_file(), _accounts_file(), os.environ.get("PYTHONSTARTUP"),
            tuple(_stamp(path) for path in self._outside_paths()),
            tuple(_stamp(str(path)) for path in [*scan.host_found, *git_files]),
        )  # fmt: skip

    def _outside_paths(self) -> list[str]:
        """What a plan reads outside the walked project, with the directory each is in: the secrets
        masked or hidden, the home allowlist, the host-executed home rows, /etc's secrets, writable
        roots and deny rules elsewhere. A name added, removed or renamed in any of them moves its
        directory's mtime and ctime, which :func:`_stamp` reads; so does a file's content for itself.
        The directories higher up are left out: each stamp is taken by path and holds the inode, so
        an ancestor replaced or renamed shows as a changed (or vanished) parent, while /tmp's and
        /var/tmp's constant churn above a home or a writable root would rebuild every plan."""
        if self._outside is None:
            seeds: list[Path] = [self.home / rel for rel in HOME_SECRETS]
            seeds += [self.home / PRODUCT_DIR, Path("/etc"), Path("/etc/passwd"), *_runtime_directories(self.home)]
            seeds += [Path(os.path.dirname(pattern)) for pattern in SYSTEM_SECRETS]
            seeds += [self.home / _glob_base(row.pattern) for row in HOST_PATHS if row.root == "home"]
            seeds += [*self.deny_read, *(path for path, _kind in self._deny_write_fixed), *self.writable_roots[1:]]
            seeds += [*self.home_view().visible, legacy_checkpoints_dir(self.project), Path(user_dir())]
            found: dict[str, None] = {}
            for seed in seeds:
                for path in {seed, Path(os.path.realpath(seed))}:
                    if _within(path, self.project):
                        continue  # the walk's own
                    found.setdefault(str(path))
                    if not _within(path.parent, self.project):
                        found.setdefault(str(path.parent))
            self._outside = list(found)
        return self._outside

    def _checked(self, argv: list[str], cwd: Path, pass_env: Iterable[str],
                 program: bytes | None) -> tuple[bytes, list[str], Path]:
        """What both backends check before building a command: a seccomp filter for this machine, a
        command, variable names that may be passed. The filter, the variables to pass, the real cwd."""
        if program is None:
            raise SandboxUnavailable(no_filter_reason())
        if not argv:
            raise ValueError("an empty command cannot be sandboxed")
        extra_env = [*self.settings.env, *pass_env]
        problems = env_name_problems(extra_env)
        if problems:
            raise ValueError("environment variables to pass: " + "; ".join(problems))
        return program, extra_env, Path(os.path.realpath(cwd))

    def _writable_root(self, path: Path) -> Path | None:
        for root in sorted(self.writable_roots, key=lambda p: len(p.parts), reverse=True):
            if _within(path, root):
                return root
        return None

    def _protected_targets(self) -> list[tuple[Path, Literal["dir", "file"]]]:
        """What bubblewrap binds read-only: the agent's settings, denyWrite, and the host-executed table
        (a repository's git directory: what git runs of it, or, for a command not compared after it,
        the whole of it)."""
        git = self.project / ".git"
        top_git = Path(os.path.realpath(git))
        strict = not self._compared
        targets: list[tuple[Path, Literal["dir", "file"]]] = [
            (self.project / ".codingcode", "dir"), (self.project / ".mcp.json", "file")]
        if strict and top_git not in self.writable_roots:
            # A writable .git runs code on the host however hooks and config are guarded unless
            # something looks after the command (.git/commondir, .git/modules/*/config).
            targets.append((git, "dir"))
        targets += self.deny_write
        # The one table of files the host runs as code, which the approval layer asks about too.
        # The walk of the project that finds dotenv files (_env_files) found its matches.
        self._env_files()
        for path, kind in sandbox_targets(self.project, self.home, self._scan.host_found):
            if self.agent_venvs and is_agent_venv_entry(path, self.project, self.home, self.agent_venvs):
                continue  # a virtualenv this sandbox's commands made: `pip install` must keep working
            if path.name == ".git" and kind == "dir" and (not strict or path == top_git):
                # git writes its objects, refs, index and logs; what it runs stays read-only.
                targets += [(part, "dir" if part.is_dir() else "file") for part in git_host_parts(path)]
                continue
            targets.append((path, kind))
        return targets

    def _protections(self) -> list[str]:
        pins: set[Path] = set()
        readonly: set[Path] = set()
        denied = {path for path, _kind in self.deny_write}
        for path, kind in self._protected_targets():
            plan = self._protect(path, kind, placeholder=not self._compared or path in denied)
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

    def _protect(self, path: Path, kind: Literal["dir", "file"],
                 placeholder: bool) -> tuple[list[Path], Path] | None:
        """(directories to pin, path to bind read-only) for one protected path, or None. A path that
        does not exist gets an empty placeholder only if ``placeholder``: otherwise the compare after
        the command finds it if the command creates it, and the person's project shows nothing new."""
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
                if not placeholder:
                    return None
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

    def _mask_targets(self) -> Iterator[tuple[Path, Literal["hide", "private"]]]:
        """What to hide; "private" directories get an empty tmpfs, since programs write there."""
        for rel in HOME_SECRETS:
            yield self.home / rel, "hide"
        yield self.home / PRODUCT_DIR, "hide"
        for pattern in SYSTEM_SECRETS:
            for match in sorted(glob.glob(pattern)):
                yield Path(match), "hide"
        for path in [*self.deny_read, *self._env_files()]:
            yield path, "hide"
        # Undo's copies of the project's files (a secret edited once would be readable there): in
        # the person's directory, hidden with it; where an earlier version left them, and where the
        # person's directory is set elsewhere, hidden by name.
        legacy = legacy_checkpoints_dir(self.project)
        if legacy.is_dir():
            yield legacy, "hide"
        own = Path(os.path.realpath(user_dir()))
        if own != Path(os.path.realpath(self.home / PRODUCT_DIR)) and own.is_dir() and not _within(self.project, own):
            yield own, "hide"
        for path in _runtime_directories(self.home):
            yield path, "private"

    def _masks(self) -> list[str]:
        resolved: dict[Path, Literal["hide", "private"]] = {}
        for target, how in self._mask_targets():
            # Mounts follow symlinks; mask what the path really is, and only if it exists
            # (a missing secret has nothing to hide, and the read-only root stops its creation).
            real = Path(os.path.realpath(target))
            if real not in resolved and real.exists() and self._visible(real):
                resolved[real] = how
        args: list[str] = []
        masked: set[Path] = set()
        for real in sorted(resolved, key=lambda p: len(p.parts)):
            if real in masked or not masked.isdisjoint(real.parents):
                continue  # inside an already masked directory: there is no mount point left
            masked.add(real)
            if not real.is_dir():
                # An empty file, not /dev/null: `ls -l` shows no device and `grep -r` reads nothing.
                args += ["--ro-bind", _empty_file(), str(real)]
            elif resolved[real] == "private":
                args += ["--tmpfs", str(real)]
            else:
                args += ["--ro-bind", _empty_directory(), str(real)]
        if os.path.isfile("/etc/passwd"):
            args += ["--ro-bind", _accounts_file(), os.path.realpath("/etc/passwd")]
        return args

    # ----- the home allowlist (sandbox/home.py), both backends -----------------------------------

    def home_view(self) -> HomeView:
        """The allowlisted part of the home directory (read once per sandbox: settings make a new one)."""
        if self._home_view is None:
            self._home_view = home_view(self.home, self.settings.filesystem.allowRead)
        return self._home_view

    def _home_hidden(self) -> bool:
        """The home is replaced by the allowlist unless a writable root holds it (a project at ~)."""
        return not any(_within(self.home, root) for root in self.writable_roots) and self.home != Path("/")

    def _visible(self, real: Path) -> bool:
        """Whether ``real`` is reachable at all: outside the home, or in an allowlisted or writable part of it."""
        if not self._home_hidden() or not _within(real, self.home):
            return True
        return any(_within(real, root) for root in [*self.home_view().visible, *self.writable_roots])

    def _home_args(self) -> list[str]:
        private = self.private_dir()
        args = ["--ro-bind", str(private), _INSIDE_PRIVATE]
        if not self._home_hidden():
            return args
        view = self.home_view()
        args += ["--tmpfs", str(self.home)]
        for path in sorted(view.visible, key=lambda p: len(p.parts)):
            args += ["--ro-bind", str(path), str(path)]
        if view.git_config is not None:
            args += ["--ro-bind", str(private / "gitconfig"), str(self.home / ".gitconfig")]
        return args

    def private_dir(self) -> Path:
        """This sandbox's own directory on the host: the filtered git configuration, the askpass
        program that says why there is no credential, and (Landlock) the commands' temp directory."""
        if self._private is None or not self._private.is_dir():
            private = Path(tempfile.mkdtemp(prefix="codingcode-sandbox-"))
            (private / "tmp").mkdir()
            askpass = private / "askpass"
            askpass.write_text(f"#!/bin/sh\necho {shlex.quote(NO_CREDENTIALS)} >&2\nexit 1\n")
            askpass.chmod(0o555)
            git_config = self.home_view().git_config
            if git_config is not None:
                (private / "gitconfig").write_text(git_config)
            self._private = private
        return self._private

    def _credential_env(self, inside: str) -> dict[str, str]:
        """Credential prompts answer with :data:`NO_CREDENTIALS` instead of waiting or finding a helper."""
        askpass = f"{inside}/askpass"
        env = {"GIT_ASKPASS": askpass, "SSH_ASKPASS": askpass, "SSH_ASKPASS_REQUIRE": "force",
               "GIT_TERMINAL_PROMPT": "0"}
        if self._home_hidden() and self.home_view().git_config is not None and inside != _INSIDE_PRIVATE:
            env["GIT_CONFIG_GLOBAL"] = f"{inside}/gitconfig"
        return env

    # ----- the Landlock backend (sandbox/landlock.py) ----------------------------------------------

    def _landlock_wrap(self, argv: list[str], cwd: Path, pass_env: Iterable[str]) -> list[str]:
        _token, spec, argv, cwd = self._landlock_spec(argv, cwd, pass_env)
        return landlock.one_shot_argv(spec, cwd, argv)

    def _landlock_spec(self, argv: list[str], cwd: Path,
                       pass_env: Iterable[str]) -> tuple[str | None, str, list[str], Path]:
        """The plan's token (see warm.py), the launcher's spec, the argv it runs and the real cwd."""
        abi = landlock.landlock_abi()
        program, extra_env, cwd = self._checked(argv, cwd, pass_env, sandbox_filter("tcp-only" if abi >= 4 else "none"))
        plan = self.landlock_plan()
        forwarder = None
        if self.allowed_domains:
            plan.proxy_socket = str(self._ensure_proxy().socket_path)
            from .proxy import FORWARDER_SOURCE

            forwarder = FORWARDER_SOURCE
        spec, argv = landlock.launcher_spec(plan, abi=abi, seccomp=program, env_names=[*PASSED_ENV, *extra_env],
                                            argv=list(argv), forwarder=forwarder)
        return plan.token, spec, argv, cwd

    def _landlock_spawn(self, command: str, cwd: Path, env: Mapping[str, str] | None,
                        watch: HostWatch | None) -> Spawn:
        """execute_command's start under Landlock: through the launcher kept warm (sandbox/warm.py),
        the one-shot launcher's argv kept for when that cannot serve."""
        self._compared = watch is not None
        self._walked = watch.env_files if watch is not None else self._scan.env_files()
        try:
            token, spec, argv, real_cwd = self._landlock_spec(["bash", "-c", command], cwd, ())
        finally:
            self._walked = None
            self._compared = False
        caller_env = dict(os.environ if env is None else env)
        spawn = Spawn(landlock.one_shot_argv(spec, real_cwd, argv), caller_env)
        if self.settings.warmLauncher:
            if self._warm is None:
                self._warm = WarmLauncher()
            request = WarmRequest(token, spec, str(real_cwd), argv, caller_env)
            spawn.start = functools.partial(self._warm.start, request)
        return spawn

    def compared_landlock_plan(self, watch: HostWatch) -> "landlock.Plan":
        """The Landlock rules for a process compared after it ends, as :meth:`argv_for` with ``watch``
        gives a command (the top level writable, what the host runs left to the compare): what a
        confined copy of the kernel applies to itself (notebook/kernel/fork.py)."""
        self._compared = True
        self._walked = watch.env_files
        try:
            return self.landlock_plan()
        finally:
            self._compared = False
            self._walked = None

    def landlock_plan(self) -> "landlock.Plan":
        """The Landlock rules from the same tables as bubblewrap's mounts (see sandbox/landlock.py),
        reused while nothing they were built from changed (see :meth:`_reused`)."""
        plan: landlock.Plan = self._reused("landlock", self._landlock_plan)
        return landlock.Plan(rules=list(plan.rules), env_set=dict(plan.env_set), proxy_socket=plan.proxy_socket,
                             token=plan.token)

    def _landlock_plan(self) -> "landlock.Plan":
        # A new token per plan built: the warm launcher's ruleset made from it holds the inodes its
        # paths named when it was built, which stay the same only while the plan is reused.
        plan = landlock.Plan(token=f"{id(self):x}.{next(_PLAN_SERIAL)}")
        private = self.private_dir()
        hidden = {Path(os.path.realpath(target)) for target, _how in self._mask_targets()}
        hidden |= {Path(os.path.realpath(p)) for p in _runtime_directories(self.home)}
        protected = self._landlock_protected()
        for path in landlock.SYSTEM_READ:
            plan.grant(landlock.READ, path)
        landlock.grant_tree(plan, Path("/etc"), landlock.READ, hidden | _system_secrets(), set())
        for path in landlock.python_roots():
            plan.grant(landlock.READ, path)
        for path in landlock.DEVICES:
            plan.grant(landlock.READ_FILE | landlock.WRITE_FILE, path)
        if self._home_hidden():
            for visible in self.home_view().visible:
                landlock.grant_tree(plan, visible, landlock.READ, hidden, set())
        else:
            landlock.grant_tree(plan, self.home, landlock.READ, hidden, set())
        for root in sorted(self.writable_roots, key=lambda p: len(p.parts)):
            landlock.grant_tree(plan, root, landlock.READ | landlock.WRITE, hidden, protected)
        plan.grant(landlock.READ, private)
        plan.grant(landlock.READ | landlock.WRITE, private / "tmp")
        plan.env_set.update(self._credential_env(inside=str(private)))
        plan.env_set["TMPDIR"] = str(private / "tmp")
        return plan

    def _landlock_protected(self) -> set[Path]:
        """What Landlock keeps unwritable. A right on a directory holds for all below it, so a path kept
        unwritable costs its parents their own write right: at the project's top level (which holds
        .git and .codingcode) no entry could be created, removed or renamed. For a command compared
        after it ends, the project's protected paths are left to that compare (sandbox/host_watch.py);
        what it does not look at stays unwritable: denyWrite, and what lies outside the project or is
        the person's home's own (a project that holds the home)."""
        targets = self._protected_targets()
        if not self._compared:
            return {Path(os.path.realpath(path)) for path, _kind in targets}
        denied = {path for path, _kind in self.deny_write}
        kept: set[Path] = set()
        for path, _kind in targets:
            real = Path(os.path.realpath(path))
            if path in denied or not _within(real, self.project):
                kept.add(real)
                continue
            hit = host_executed(real, self.project, self.home)
            if hit is not None and hit.pattern in _HOME_PATTERNS:
                kept.add(real)
        return kept

    @property
    def network_exact(self) -> bool:
        """Whether the sandbox proves a command reaches the network only through the proxy: bubblewrap's
        own network namespace does; Landlock's port rules do only when there is no allowlist (no TCP at all)."""
        return self.backend != "landlock" or not self.allowed_domains

    def limits(self) -> list[str]:
        """What the backend in force does not cover, and how the guarantee is kept instead."""
        if self.backend == "landlock":
            return [*landlock.LIMITS, *COMMON_LIMITS, *(landlock.NETWORK_LIMIT if self.allowed_domains else []),
                    *(landlock.SIGNAL_LIMIT if landlock.landlock_abi() < 6 else [])]
        if self.backend == "bwrap":
            return list(BWRAP_LIMITS)
        return []

    def _env_files(self) -> list[Path]:
        """Every dotenv file of the project not allowed by a rule (see :mod:`.project_scan`); the walk
        made for the command being wrapped, when there is one."""
        return self._walked if self._walked is not None else self._scan.env_files()

    def _ensure_proxy(self) -> AllowlistProxy:
        from .proxy import AllowlistProxy

        with self._proxy_lock:
            if self._proxy is None or not self._proxy.running:
                proxy = AllowlistProxy(self.allowed_domains, on_decision=self.on_network, denied_domains=self.denied_domains)
                proxy.start()
                self._proxy = proxy
            return self._proxy

    @property
    def proxy(self) -> AllowlistProxy | None:
        """The allowlist proxy, once a command needed it."""
        return self._proxy

    @property
    def deny_write(self) -> list[tuple[Path, Literal["dir", "file"]]]:
        """denyWrite's paths, with what its patterns cover in the project as the last walk found it."""
        return [*self._deny_write_fixed, *[(path, _kind(path, "")) for path in self._scan.write_denied_found]]

    def watch_host(self, *, landlock: bool | None = None) -> HostWatch:
        """The project's host-executed entries listed now, to compare once a command ended
        (what the mounts cannot hold: names created for the first time; see sandbox/host_watch.py).
        Given to :meth:`argv_for` right after, its walk serves for the command's masks too.
        ``landlock``: what watched runs under Landlock whatever this sandbox's backend."""
        return HostWatch.start(self, landlock=landlock)

    @property
    def project_scan(self) -> ProjectScan:
        """The cached walk of the project (dotenv files, host-executed entries)."""
        return self._scan

    @property
    def placeholders(self) -> list[Path]:
        """The empty mount targets the sandbox made in the project and has not removed yet."""
        return list(self._placeholders)

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
        warm, self._warm = self._warm, None
        if warm is not None:
            warm.close()
        self._remove_placeholders()
        self._own_scan.close()
        if self._private is not None:
            shutil.rmtree(self._private, ignore_errors=True)
            self._private = None
