"""Starting bwrap itself: with an allowlisted environment, the seccomp filter and the proxy channel.

bwrap's own process is PID 1 inside the sandbox, and its environment is readable there as
``/proc/1/environ``; whatever environment the caller hands bwrap is handed to every command
too. execute_command starts bwrap itself with :func:`filtered_env` and the descriptors passed
(``CommandSandbox.spawn_for``). A caller that can only hand over an argv (a stdio MCP server's
client) gets :data:`LAUNCHER_SOURCE` in front instead: it runs first (on the host, with the
caller's environment), keeps only the allowlisted variables, puts the seccomp program on a pipe
at :data:`SECCOMP_FD` (bwrap reads it with ``--seccomp``), connects to the network proxy at
:data:`PROXY_FD` when there is one, closes every other inherited descriptor and execs bwrap in
place, so the caller still waits on, and kills, the same process.

The allowlist is :data:`PASSED_ENV` plus ``sandbox.env`` (and, for an MCP server, the names
of its ``env`` entry): exact names, or prefixes written ``NAME*``. Values always come from the environment the caller passes, which is how
execute_command's ``PAGER=cat`` or ``NO_COLOR=1`` reach the command.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterable, Mapping

__all__ = [
    "PASSED_ENV", "SECCOMP_FD", "PROXY_FD", "LAUNCHER_SOURCE", "launcher_argv", "env_name_problems", "filtered_env",
]  # fmt: skip

PASSED_ENV = (
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "LC_*", "TERM", "TZ", "TMPDIR",
    "PAGER", "GIT_PAGER", "NO_COLOR", "COLUMNS", "LINES",
)  # fmt: skip
SECCOMP_FD = 3
PROXY_FD = 4
_ENV_ENTRY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\*?")

# Runs as `python -I -S -c SOURCE SECCOMP NAMES PREFIXES SECCOMP_FD PROXY PROXY_FD BWRAP ARGS...`:
# isolated from PYTHON* variables and site-packages, and importing nothing beyond os and sys
# (json and socket would triple its start-up), so it costs a few milliseconds.
LAUNCHER_SOURCE = r"""
import os, sys
seccomp, names, prefixes, seccomp_fd, proxy, proxy_fd = sys.argv[1:7]
names, prefixes = set(names.split(",")), tuple(filter(None, prefixes.split(",")))
env = {k: v for k, v in os.environ.items() if k in names or k.startswith(prefixes)}
def place(fd, target):
    if fd != target:
        os.dup2(fd, target)
        os.close(fd)
    os.set_inheritable(target, True)
os.closerange(3, 1 << 20)
read, write = os.pipe()
os.write(write, bytes.fromhex(seccomp))
os.close(write)
place(read, int(seccomp_fd))
if proxy:
    import _socket
    channel = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        channel.connect(proxy)
    except OSError as error:
        sys.exit(f"codingcode sandbox: the network proxy is not answering: {error}")
    place(channel.detach(), int(proxy_fd))
# Python ignores SIGPIPE and SIGXFSZ and an ignored signal stays so across exec (bwrap's too).
import _signal
for signum in (_signal.SIGPIPE, _signal.SIGXFSZ): _signal.signal(signum, _signal.SIG_DFL)
os.execve(sys.argv[7], sys.argv[7:], env)
"""


def env_name_problems(entries: Iterable[str]) -> list[str]:
    """Problems with ``sandbox.env`` entries (empty when all are usable)."""
    return [
        f"'{entry}': use a variable name or a name prefix ending in '*' (such as 'NODE_*')"
        for entry in entries
        if not _ENV_ENTRY.fullmatch(entry)
    ]


def launcher_argv(seccomp: bytes, extra_env: Iterable[str] = (), proxy_socket: str | None = None) -> list[str]:
    """The argv prefix that starts what follows it (bwrap and its arguments) as described above."""
    entries = [*PASSED_ENV, *extra_env]
    names = ",".join(entry for entry in entries if not entry.endswith("*"))
    prefixes = ",".join(entry[:-1] for entry in entries if entry.endswith("*"))
    return [
        os.path.realpath(sys.executable), "-I", "-S", "-c", LAUNCHER_SOURCE,
        seccomp.hex(), names, prefixes, str(SECCOMP_FD), proxy_socket or "", str(PROXY_FD),
    ]  # fmt: skip


def filtered_env(env: Mapping[str, str], extra_env: Iterable[str] = ()) -> dict[str, str]:
    """What :data:`LAUNCHER_SOURCE` keeps of ``env``, for a caller that starts bwrap itself."""
    entries = [*PASSED_ENV, *extra_env]
    names = {entry for entry in entries if not entry.endswith("*")}
    prefixes = tuple(entry[:-1] for entry in entries if entry.endswith("*") and entry != "*")
    return {key: value for key, value in env.items() if key in names or (prefixes and key.startswith(prefixes))}
