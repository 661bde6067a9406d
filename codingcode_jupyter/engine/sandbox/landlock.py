"""The second sandbox backend: Landlock + seccomp + no_new_privs, for where bubblewrap cannot start.

Containers (JupyterHub on Kubernetes, Docker, managed notebooks) refuse user namespaces, so
bubblewrap fails there; Landlock needs none. The kernel-side process stays unconfined:
:data:`LAUNCHER_SOURCE` runs first (``python -I -S``, on the host, with the caller's
environment; for execute_command, the same steps in a launcher forked by the process the kernel
keeps warm, sandbox/warm.py), keeps only the allowlisted variables, drops every capability (a kernel run as
root would otherwise keep them: CAP_SYS_MODULE alone is a way out), sets no_new_privs, puts
itself in a Landlock domain built from :class:`Plan`, loads the seccomp filter of
:mod:`.seccomp` and execs the command. Before the Landlock domain it forks: the launcher stays
outside it as the command's parent and subreaper, passes its exit status on, and kills whatever
the command left running when it ends (or when the caller stops it), as bubblewrap's PID namespace
does, so nothing writes into the project after the compare that follows each command.

The policy comes from the same tables as bubblewrap's (see :meth:`CommandSandbox.policy`):
the writable roots, the protected paths, the secrets to hide, the home allowlist. Landlock
can only *allow*, and a right given to a directory holds for everything below it. What
bubblewrap does with a mount over one file, this backend does by granting per entry:

- a directory holding a secret (a dotenv file, a credential store) below it gets no
  READ_FILE of its own; each of its other entries is granted separately. So a file or a
  directory a command creates *directly in it* can be written but not read until the next
  command (whose plan grants it).
- a directory holding a path kept unwritable below it gets no write right of its own; each
  other entry is granted separately, so a command cannot create, remove or rename entries
  directly in it. For a command that is compared after it ends (execute_command) only
  ``denyWrite`` and what lies outside the project are kept so: the project's own protected
  paths (``.git``'s hooks and config, ``.codingcode``, ``.mcp.json``, the host-executed
  table) are left to that compare (:mod:`.host_watch`), or the top level, which holds
  ``.git`` and ``.codingcode``, could not be written at all. A process that is not compared
  (an MCP server) gets them kept unwritable, and the top level with them.

Everything outside the plan is unreachable: the home directory except the allowlist, /tmp
except the sandbox's own temp directory (``TMPDIR``), /run, /var, /dev except the few
devices programs need. Signals and abstract Unix sockets are scoped to the sandbox (ABI 6),
TCP bind/connect are refused (ABI 4) except to the allowlist proxy's port, and the seccomp
filter refuses the other socket families (UDP, raw, SCTP, Unix).
"""

from __future__ import annotations

import errno
import os
import platform
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "Plan", "grant_tree", "LIMITS", "NETWORK_LIMIT", "SIGNAL_LIMIT", "landlock_abi", "probe_landlock", "launcher_argv", "LAUNCHER_SOURCE",
    "LAUNCHER_CORE", "launcher_spec", "one_shot_argv",
    "READ", "WRITE", "ALL_FS", "FILE_RIGHTS", "fs_rights",
]  # fmt: skip

# Access rights (linux/landlock.h); each ABI adds some.
EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
REMOVE_DIR, REMOVE_FILE, MAKE_CHAR, MAKE_DIR = 1 << 4, 1 << 5, 1 << 6, 1 << 7
MAKE_REG, MAKE_SOCK, MAKE_FIFO, MAKE_BLOCK, MAKE_SYM = 1 << 8, 1 << 9, 1 << 10, 1 << 11, 1 << 12
REFER, TRUNCATE, IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
NET_BIND_TCP, NET_CONNECT_TCP = 1 << 0, 1 << 1
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1 << 0, 1 << 1

READ = EXECUTE | READ_FILE | READ_DIR
# Creating device nodes is never granted (a kernel run as root could otherwise make one).
WRITE = WRITE_FILE | REMOVE_DIR | REMOVE_FILE | MAKE_DIR | MAKE_REG | MAKE_SOCK | MAKE_FIFO | MAKE_SYM | REFER | TRUNCATE
# The rights a rule on a file (not a directory) may hold.
FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV
_ABI_FS = {1: (1 << 13) - 1, 2: (1 << 14) - 1, 3: (1 << 15) - 1, 4: (1 << 15) - 1, 5: (1 << 16) - 1}
ALL_FS = (1 << 16) - 1


def fs_rights(abi: int) -> int:
    """Every filesystem right the kernel's ABI knows (handled, so denied unless a rule grants it)."""
    return _ABI_FS.get(abi, ALL_FS)


# The devices a program may open (read and write); the rest of /dev stays closed (no /dev/shm,
# no terminals: TIOCSTI on a terminal types into the person's shell).
DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom")
# The system, read-only: programs, libraries, their data. /etc is granted entry by entry
# (less the shadow-like files); /proc only shows processes of the sandbox in detail (Landlock
# refuses ptrace-style access, so /proc/PID/environ of the kernel cannot be read).
SYSTEM_READ = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt", "/sys", "/proc")


def python_roots() -> list[str]:
    """The kernel's Python installation, read-only: the launcher and the proxy forwarder run on it
    after the domain is in force, and the kernel's environment is where the person's tools are."""
    found: list[str] = []
    for raw in (sys.base_prefix, sys.base_exec_prefix, sys.prefix, sys.exec_prefix, os.path.dirname(sys.executable)):
        real = os.path.realpath(raw)
        if real != "/" and real not in found:
            found.append(real)
    return found


@dataclass
class Plan:
    """What one command may reach: path rules, a temp directory, the network and the environment."""

    rules: list[tuple[int, str]] = field(default_factory=list)  # (rights, real path)
    env_set: dict[str, str] = field(default_factory=dict)
    proxy_socket: str | None = None
    # Names the plan as built (see sandbox/warm.py); None: never reused.
    token: str | None = None

    def grant(self, rights: int, path: Path | str) -> None:
        self.rules.append((rights, str(path)))


def _within(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def grant_tree(plan: Plan, root: Path, rights: int, hidden: set[Path], protected: set[Path]) -> None:
    """Grant ``rights`` on ``root`` less what Landlock's hierarchy cannot carve out: nothing on a
    hidden path, no write on a protected one. A directory above either is granted without those
    rights itself and its other entries one by one (see the module docstring). Links inside are
    not followed into a grant; real paths throughout."""
    root = Path(os.path.realpath(root))
    if not os.path.lexists(root):
        return
    hidden = {h for h in hidden if _within(h, root)}
    protected = {p for p in protected if _within(p, root)}
    # Every directory above a hidden or protected path, as sets: one lookup per visited entry.
    above_hidden = {parent for h in hidden for parent in h.parents}
    above_protected = {parent for p in protected for parent in p.parents}
    _visit(plan, root, rights, _Holes(hidden, protected, above_hidden, above_protected))


@dataclass
class _Holes:
    hidden: set[Path]
    protected: set[Path]
    above_hidden: set[Path]
    above_protected: set[Path]


def _visit(plan: Plan, path: Path, rights: int, holes: _Holes) -> None:
    if path in holes.hidden:
        return
    if path in holes.protected:
        rights &= ~WRITE
    secret_below = path in holes.above_hidden
    protected_below = bool(rights & WRITE) and path in holes.above_protected
    if not secret_below and not protected_below:
        plan.grant(rights, path)
        return
    own = rights
    if secret_below:
        own &= ~(READ_FILE | EXECUTE)
    if protected_below:
        own &= ~WRITE
    if own:
        plan.grant(own, path)
    try:
        with os.scandir(path) as entries:
            children = [Path(entry.path) for entry in entries if not entry.is_symlink()]
    except OSError:
        return
    for child in children:
        _visit(plan, child, rights, holes)


LIMITS = [
    "secret files (dotenv files, credential stores, denyRead) are hidden by granting the entries beside them one "
    "by one: a directory above one (the project's top level, whenever the project holds one) has no read right of "
    "its own, so what a command creates in it, outside the subdirectories that existed when the command started, "
    "is written but cannot be read until the next command; a hidden file is still listed (`ls` shows it, "
    "`grep -r` says Permission denied for it)",
    "what the host runs from the project (the host-executed table, what git runs of each .git, .codingcode, "
    ".mcp.json) is not read-only while a command runs: holding it would take the project's top level its write "
    "right. The compare after the command, once every process it started has ended, finds each new or changed "
    "one and asks the person; declined, it is moved out of the project and a file's previous content put back "
    "(a virtualenv's files and files over 1 MB are moved aside with no copy to put back). A program the host runs "
    "from the project while the command runs (a git commit in the person's terminal) could meet the change first",
    "denyWrite paths inside the project stay unwritable: each directory above one, up to the top level, then has no "
    "write right of its own (entries directly in it cannot be created, removed or renamed)",
    "/tmp is the sandbox's own directory (TMPDIR): a program writing to /tmp by name fails; /dev/shm is closed "
    "(POSIX semaphores, multiprocessing locks) and System V IPC refused (there is no IPC namespace: the person's "
    "own shared memory segments would be reachable)",
    "there is no network namespace: with the network off, no TCP connection at all (loopback included); "
    "there is no PID namespace: processes a command leaves running are stopped half a second after it returns "
    "(by the launcher, their subreaper)",
    "/etc/passwd lists every account of the machine (bubblewrap shows only root, the caller and nobody)",
]
# Before ABI 6 a command can signal processes outside its domain: kill its launcher, and what it left
# running in a session of its own then outlives the compare.
SIGNAL_LIMIT = [
    "this kernel's Landlock (before ABI 6, Linux 6.12) does not scope signals: a command could kill the launcher "
    "that outlives it, and a process it left in a session of its own would then go on after the compare",
]
NETWORK_LIMIT = [
    "Landlock's TCP rules name a port, not an address: a command can connect to the proxy's port (random "
    "per command) on another host too, so sandbox.autoAllow does not apply: each command is judged by the "
    "mode and rules",
]

_SYSCALL_ABI = {"x86_64", "aarch64"}  # landlock_* are 444-446 on both (the generic numbers)
_abi_cache: dict[str, int] = {}


def landlock_abi() -> int:
    """The kernel's Landlock ABI version; 0 when Landlock is off or unknown here."""
    if "abi" in _abi_cache:
        return _abi_cache["abi"]
    abi = 0
    if sys.platform.startswith("linux") and platform.machine() in _SYSCALL_ABI:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.syscall.restype = ctypes.c_long
        found = libc.syscall(ctypes.c_long(444), None, ctypes.c_long(0), ctypes.c_long(1))
        abi = max(0, int(found))
    _abi_cache["abi"] = abi
    return abi


# What the launcher does, as functions: the one-shot launcher (LAUNCHER_SOURCE) and the warm one
# the kernel keeps (sandbox/warm.py) both run them. It uses _ctypes directly: `import ctypes` costs
# ~10 ms on top of a ~15 ms interpreter start. SPEC is lines of tab-separated fields:
#   E names  P prefixes  S name value  F seccomp-hex  A handled-fs handled-net scoped
#   R rights path  X proxy-socket  (the proxy's listener and its connect rule are made here)
LAUNCHER_CORE = r"""
import os, sys, _ctypes, _struct as struct, _signal as signal, time  # not `signal`: it imports enum
class L(_ctypes._SimpleCData): _type_ = "l"
class C(_ctypes._SimpleCData): _type_ = "c"
class D: _handle = _ctypes.dlopen(None)
class F(_ctypes.CFuncPtr): _flags_ = _ctypes.FUNCFLAG_CDECL | _ctypes.FUNCFLAG_USE_ERRNO; _restype_ = L
syscall, prctl = F(("syscall", D)), F(("prctl", D))
def die(what):
    sys.stderr.write("codingcode sandbox (landlock): %s failed: %s\n" % (what, os.strerror(_ctypes.get_errno())))
    os._exit(126)
def parse(spec):
    names, prefixes, setenv, rules, handled, filt, proxy = set(), (), {}, [], None, b"", None
    for line in spec.split("\n"):
        kind, _, rest = line.partition("\t")
        if kind == "E": names = set(rest.split(","))
        elif kind == "P": prefixes = tuple(filter(None, rest.split(",")))
        elif kind == "S": k, _, v = rest.partition("\t"); setenv[k] = v
        elif kind == "F": filt = bytes.fromhex(rest)
        elif kind == "A": handled = [int(x) for x in rest.split("\t")]
        elif kind == "R": r, _, p = rest.partition("\t"); rules.append((int(r), p))
        elif kind == "X": proxy = rest
    return names, prefixes, setenv, rules, handled, filt, proxy
def command_env(environ, names, prefixes, setenv):
    env = {k: v for k, v in environ.items() if k in names or k.startswith(prefixes)}
    env.update(setenv)
    return env
def open_proxy(proxy, env, argv):
    import _socket
    channel = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        channel.connect(proxy)
    except OSError as error:
        sys.stderr.write("codingcode sandbox: the network proxy is not answering: %s\n" % error)
        os._exit(1)
    listener = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(128)
    port = listener.getsockname()[1]
    url = "http://127.0.0.1:%d" % port
    for k in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY", "all_proxy"):
        env[k] = url
    keep = [channel.detach(), listener.detach()]
    for fd in keep: os.set_inheritable(fd, True)
    return keep, port, [argv[0], "-I", "-S", "-c", argv[1], "fd:%d" % keep[1], str(keep[0])] + argv[2:]
def drop_privileges():
    # SIGTERM, not SIGKILL, when its parent goes (the kernel's thread, or the warm process when the
    # sandbox closes or the kernel ends): its handler (supervise) kills what the command left running
    # first. Killed outright, a process the command left in a session of its own would go on
    # unsupervised and write into the project after the compare, or after the kernel is gone.
    if prctl(L(1), L(15)) < 0: die("PR_SET_PDEATHSIG")
    # Every capability out of the bounding and ambient sets: with no_new_privs no exec regains one.
    for cap in range(64):
        if prctl(L(24), L(cap)) < 0 and _ctypes.get_errno() == 22: break
    prctl(L(47), L(4), L(0), L(0), L(0))
    if prctl(L(38), L(1), L(0), L(0), L(0)) < 0: die("PR_SET_NO_NEW_PRIVS")
    # The command runs in a child; this process stays outside its Landlock domain, as its subreaper:
    # what the command leaves running (a background job, a setsid'd daemon) is killed when it ends,
    # as bubblewrap's PID namespace does, so nothing writes into the project after the host's
    # compare that follows the command. Outside the domain, the command can neither read this
    # process's environment (Landlock refuses ptrace-style access out of a domain) nor, with ABI 6,
    # signal it.
    if prctl(L(36), L(1), L(0), L(0), L(0)) < 0: die("PR_SET_CHILD_SUBREAPER")
def descendants():
    found, todo = [], [os.getpid()]
    while todo:
        pid = todo.pop()
        try:
            tasks = os.listdir("/proc/%d/task" % pid)
        except OSError:
            continue
        for tid in tasks:
            try:
                with open("/proc/%d/task/%s/children" % (pid, tid)) as f:
                    kids = [int(x) for x in f.read().split()]
            except (OSError, ValueError):
                continue
            found += kids
            todo += kids
    return found
def finish():
    while True:
        for pid in descendants():
            try:
                os.kill(pid, 9)
            except OSError:
                pass
        try:
            while os.waitpid(-1, os.WNOHANG)[0] > 0:
                pass
        except ChildProcessError:
            return
        time.sleep(0.005)
def linger():
    # What the command left running gets half a second to end by itself, as execute_command waits as
    # long for output unconfined: `(sleep 0.2; echo late) &` prints "late" here too.
    deadline = time.monotonic() + 0.5
    while time.monotonic() < deadline:
        try:
            while os.waitpid(-1, os.WNOHANG)[0] > 0:
                pass
        except ChildProcessError:
            return
        time.sleep(0.01)
def supervise(child, stopped):
    # The launcher's side after the fork: the command's wait status once it and all it left are gone.
    def stop(signum, frame):
        finish()
        stopped(signum)
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP): signal.signal(signum, stop)
    status = os.waitpid(child, 0)[1]
    linger()
    finish()
    return status
def build_ruleset(handled, rules, port):
    fs, net, scoped = handled
    attr = struct.pack("=QQQ", fs, net, scoped)
    size = 24 if scoped else 16 if net else 8
    ruleset = syscall(L(444), attr[:size], L(size), L(0))
    if ruleset < 0: die("landlock_create_ruleset")
    files = 0x7 | 0x4000 | 0x8000
    # Hundreds of rules on a large project: the loop's constants are made once.
    opath, readlink, fstat, close, pack = os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, os.readlink, os.fstat, os.close, struct.pack
    add_rule, on_ruleset, path_beneath, zero = L(445), L(ruleset), L(1), L(0)
    for rights, path in rules:
        try:
            fd = os.open(path, opath)
        except OSError:
            continue
        # Granted only if it is still what was planned: a link swapped in since cannot widen the domain.
        if readlink("/proc/self/fd/%d" % fd) != path:
            close(fd)
            continue
        if fstat(fd).st_mode & 0o170000 != 0o040000: rights &= files
        rights &= fs
        if rights and syscall(add_rule, on_ruleset, path_beneath, pack("=Qi", rights, fd), zero) < 0:
            die("landlock_add_rule %s" % path)
        close(fd)
    if port is not None and syscall(L(445), L(ruleset), L(2), struct.pack("=QQ", 2, port), L(0)) < 0:
        die("landlock_add_rule port %d" % port)
    return ruleset
def confine(ruleset, filt):
    if prctl(L(1), L(9)) < 0: die("PR_SET_PDEATHSIG")
    if syscall(L(446), L(ruleset), L(0)) < 0: die("landlock_restrict_self")
    os.close(ruleset)
    # capset(v3, this process, all sets empty): root keeps no capability in the domain.
    head = struct.pack("=Ii", 0x20080522, 0)
    if syscall(L(126 if os.uname().machine == "x86_64" else 91), head, bytes(24)) < 0: die("capset")
    if filt:
        class Prog(_ctypes.Array): _type_ = C; _length_ = len(filt)
        prog = Prog.from_buffer_copy(filt)
        fprog = struct.pack("=HxxxxxxQ", len(filt) // 8, _ctypes.addressof(prog))
        if prctl(L(22), L(2), fprog, L(0), L(0)) < 0: die("seccomp")
def run_command(cwd, argv, env):
    # Python ignores SIGPIPE and SIGXFSZ, and an ignored signal stays ignored across exec: the command
    # gets the defaults, as a shell's child does (`yes | head -1` ends quietly).
    for signum in (signal.SIGPIPE, signal.SIGXFSZ, signal.SIGINT): signal.signal(signum, signal.SIG_DFL)
    os.chdir(cwd)
    try:
        os.execvpe(argv[0], argv, env)
    except OSError as error:
        sys.stderr.write("codingcode sandbox (landlock): cannot run %s: %s\n" % (argv[0], error))
        os._exit(127)
def split_off(spec, environ, argv):
    # Both launchers' steps up to the fork: the command's environment, the proxy's descriptors, the
    # privileges dropped. In the child (pid 0) the command is still to be confined and run.
    names, prefixes, setenv, rules, handled, filt, proxy = parse(spec)
    env = command_env(environ, names, prefixes, setenv)
    keep, port = [], None
    if proxy:
        keep, port, argv = open_proxy(proxy, env, argv)
    drop_privileges()
    child = os.fork()
    if child:
        for fd in keep: os.close(fd)
    return child, env, argv, rules, handled, filt, port
def exit_as(status):
    # Killed by a signal: this process ends by the same one, so the caller reads the same status.
    if os.WIFSIGNALED(status):
        if os.WTERMSIG(status) not in (signal.SIGKILL, signal.SIGSTOP):
            signal.signal(os.WTERMSIG(status), signal.SIG_DFL)
        os.kill(os.getpid(), os.WTERMSIG(status))
    os._exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 1)
"""

# Runs as `python -I -S -c SOURCE SPEC CWD ARGV...` (see LAUNCHER_CORE for SPEC).
LAUNCHER_SOURCE = LAUNCHER_CORE + r"""
spec, cwd, argv = sys.argv[1], sys.argv[2], sys.argv[3:]
os.closerange(3, 1 << 20)
child, env, argv, rules, handled, filt, port = split_off(spec, os.environ, argv)
if child:
    exit_as(supervise(child, lambda signum: os._exit(128 + signum)))
confine(build_ruleset(handled, rules, port), filt)
run_command(cwd, argv, env)
"""


def _spec_field(value: str) -> str:
    if "\n" in value or "\t" in value:
        # A path with a newline or tab cannot be passed in the spec: refuse rather than guess.
        raise ValueError(f"a path holding a newline or tab cannot be sandboxed with Landlock: {value!r}")
    return value


def launcher_spec(
    plan: Plan, *, abi: int, seccomp: bytes, env_names: list[str], argv: list[str], forwarder: str | None = None,
) -> tuple[str, list[str]]:
    """What the launcher reads (see :data:`LAUNCHER_CORE`) to run ``argv`` confined by ``plan``, and
    the argv it runs (the proxy's forwarder in front when there is one)."""
    names = ",".join(entry for entry in env_names if not entry.endswith("*"))
    prefixes = ",".join(entry[:-1] for entry in env_names if entry.endswith("*"))
    handled_net = (NET_BIND_TCP | NET_CONNECT_TCP) if abi >= 4 else 0
    scoped = (SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL) if abi >= 6 else 0
    lines = [f"E\t{names}", f"P\t{prefixes}", f"F\t{seccomp.hex()}", f"A\t{fs_rights(abi)}\t{handled_net}\t{scoped}"]
    lines += [f"S\t{_spec_field(k)}\t{_spec_field(v)}" for k, v in plan.env_set.items()]
    lines += [f"R\t{rights}\t{_spec_field(path)}" for rights, path in plan.rules]
    if plan.proxy_socket is not None:
        lines.append(f"X\t{_spec_field(plan.proxy_socket)}")
    if plan.proxy_socket is not None and forwarder is not None:
        # The launcher puts the forwarder's listener and channel descriptors into its arguments.
        argv = [os.path.realpath(sys.executable), forwarder, *argv]
    return "\n".join(lines), argv


def launcher_argv(
    plan: Plan, *, abi: int, seccomp: bytes, env_names: list[str], cwd: Path, argv: list[str],
    forwarder: str | None = None,
) -> list[str]:
    """The full argv running ``argv`` confined by ``plan`` (see the module docstring)."""
    spec, argv = launcher_spec(plan, abi=abi, seccomp=seccomp, env_names=env_names, argv=argv, forwarder=forwarder)
    return one_shot_argv(spec, cwd, argv)


def one_shot_argv(spec: str, cwd: Path, argv: list[str]) -> list[str]:
    """The one-shot launcher's argv for a spec made by :func:`launcher_spec`."""
    return [os.path.realpath(sys.executable), "-I", "-S", "-c", LAUNCHER_SOURCE, spec, _spec_field(str(cwd)), *argv]


_probe_cache: dict[str, str | None] = {}
_probe_lock = threading.Lock()


def probe_landlock(seccomp: bytes | None) -> str | None:
    """None when a command can run under Landlock here, else why not; tried once per process."""
    with _probe_lock:
        if "landlock" not in _probe_cache:
            _probe_cache["landlock"] = _run_probe(seccomp)
        return _probe_cache["landlock"]


def _run_probe(seccomp: bytes | None) -> str | None:
    if not sys.platform.startswith("linux"):
        return f"Landlock needs Linux (this is {sys.platform})"
    if seccomp is None:
        return f"no seccomp filter is known for this machine ({platform.machine()})"
    abi = landlock_abi()
    if abi < 1:
        return "the kernel offers no Landlock (it needs Linux 5.13 with the landlock LSM enabled)"
    plan = Plan()
    for path in (*SYSTEM_READ, "/etc", *python_roots()):
        plan.grant(READ, path)
    for path in DEVICES:
        plan.grant(READ_FILE | WRITE_FILE, path)
    argv = launcher_argv(plan, abi=abi, seccomp=seccomp, env_names=["PATH"], cwd=Path("/"),
                         argv=["sh", "-c", "cat /proc/self/status >/dev/null; cat /etc/hostname /nonexistent 2>&1; true"])
    try:
        done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"the Landlock launcher could not be started: {error}"
    if done.returncode != 0:
        detail = done.stderr.decode(errors="replace").strip().splitlines()
        return f"Landlock cannot confine a command here ({detail[-1] if detail else f'exit status {done.returncode}'})"
    return None


def open_errno(path: str) -> int:
    """errno of opening ``path`` for reading in this process (0 when it opens): for tests and checks."""
    try:
        os.close(os.open(path, os.O_RDONLY))
        return 0
    except OSError as error:
        return error.errno or errno.EIO
