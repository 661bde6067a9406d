"""A machine where no sandbox can run: what macOS or an old kernel in a container is to codingcode.

An outer bubblewrap refuses user namespaces as a default container does (``--unshare-user
--disable-userns --cap-drop ALL``: the inner bubblewrap fails with "Creating new namespace
failed"), and a seccomp filter makes the three Landlock system calls fail with ENOSYS, as on a
kernel built without Landlock. Whatever runs under :func:`prefix` (a kernel, the command line)
finds neither backend, through the real probes.
"""

from __future__ import annotations

import errno
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

__all__ = ["BWRAP", "prefix", "problem"]

BWRAP = shutil.which("bwrap")
_OUTER = ["--dev-bind", "/", "/", "--unshare-user", "--uid", "1000", "--gid", "1000", "--disable-userns",
          "--cap-drop", "ALL", "--"]
# landlock_create_ruleset, landlock_add_rule, landlock_restrict_self: one number on every architecture.
_LANDLOCK_CALLS = (444, 445, 446)
_LD_NR, _JEQ, _RET = 0x20, 0x15, 0x06
_ALLOW, _ERRNO = 0x7FFF0000, 0x00050000
# bwrap takes the filter from a file descriptor: this opens it and executes bwrap with it.
_EXEC_WITH_FILTER = ("import os, sys\n"
                     "fd = os.open(sys.argv[1], os.O_RDONLY)\n"
                     "os.set_inheritable(fd, True)\n"
                     "os.execv(sys.argv[2], [sys.argv[2], '--seccomp', str(fd), *sys.argv[3:]])\n")


def _no_landlock_filter() -> bytes:
    """Classic BPF: the Landlock calls return ENOSYS, everything else is allowed."""
    count = len(_LANDLOCK_CALLS)
    lines = [(_LD_NR, 0, 0, 0)]
    for index, number in enumerate(_LANDLOCK_CALLS):
        lines.append((_JEQ, count - index, 0, number))  # to the ENOSYS return after the ALLOW
    lines += [(_RET, 0, 0, _ALLOW), (_RET, 0, 0, _ERRNO | errno.ENOSYS)]
    return b"".join(struct.pack("=HBBI", code, jt, jf, k) for code, jt, jf, k in lines)


def prefix(directory: Path) -> list[str]:
    """The argv to put before a command so that it runs on a machine with no sandbox."""
    assert BWRAP is not None
    directory.mkdir(parents=True, exist_ok=True)
    program = directory / "no-landlock.bpf"
    program.write_bytes(_no_landlock_filter())
    launcher = directory / "exec_with_filter.py"
    launcher.write_text(_EXEC_WITH_FILTER)
    return [sys.executable, str(launcher), str(program), BWRAP, *_OUTER]


def problem(directory: Path) -> str | None:
    """Why this machine cannot be made into one without a sandbox (None: it can), checked by running the probes."""
    if BWRAP is None:
        return "bwrap is needed to build the machine"
    check = subprocess.run([*prefix(directory), sys.executable, "-m", "codingcode_jupyter", "sandbox", "check",
                            "--project", str(directory)], capture_output=True, text=True, timeout=60,
                           env={**os.environ})
    if check.returncode != 3:
        return f"the wrapped machine still has a sandbox: {check.stdout.strip()[:300]} {check.stderr.strip()[:300]}"
    return None
