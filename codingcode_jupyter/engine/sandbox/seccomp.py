"""The seccomp filter every sandboxed process runs under, as the classic-BPF program bwrap loads.

It refuses what the mount namespace cannot stop:

- ``socket(AF_UNIX, ...)``: a host Unix socket stays reachable through the read-only root
  (a socket file needs no write access to the mount), and a Docker, systemd or ssh-agent
  socket is a way out. ``socketpair`` still works, so do pipes and loopback TCP.
- ``io_uring_setup``: io_uring opens sockets and files without the system calls judged here.
- the kernel's key management (``add_key``, ``request_key``, ``keyctl``): Landlock does not govern
  it, and a command under Landlock shares the person's user keyring (Kerberos tickets, tokens
  kept with ``keyctl``) with every process of theirs: it could read each key there.
- setting a setuid or setgid bit (``chmod``, ``fchmod``, ``fchmodat``, ``fchmodat2``, and the
  mode of ``open``, ``creat``, ``openat``, ``mknod``, ``mknodat``), and ``openat2``, whose
  mode this filter cannot read: the project is writable and, when the kernel runs as root,
  a setuid-root binary left there would work for anyone on the host.
- ``prlimit64`` setting another process's limits: Landlock scopes signals, not resource limits,
  and a command may set those of any process of its user. ``RLIMIT_NOFILE`` 0 on the Landlock
  launcher (the command's parent and subreaper, outside its domain) leaves it unable to list what
  the command left running, and what it left then outlives it and the compare after it; a CPU
  limit kills it. Setting one's own limits (``setrlimit``, pid 0) and reading anyone's still work.
- any other system-call ABI (i386, x32 on x86_64; arm32 on aarch64), whose numbers differ.

The Landlock backend has no network namespace, so its variant (``tcp_only``) also refuses
every socket but TCP over IPv4 and IPv6 (no UDP, raw, SCTP, netlink, packet sockets), and
Landlock's own rules then decide which TCP ports a command may connect to; on a kernel whose
Landlock has no TCP rules (ABI < 4) the variant ``none`` refuses sockets altogether. With no IPC
namespace either, both refuse System V IPC (shared memory, semaphores, message queues): Landlock
does not govern it, and a command could attach the person's own processes' segments (a
database's shared buffers, an X client's images) by their guessable ids, to read and to write.
As ``/dev/shm`` is closed there, POSIX and System V shared memory both fail (ENOSYS).

Refused calls fail with EPERM (ENOSYS for io_uring, openat2 and the key calls, as on a kernel without them,
so libraries fall back); a process of another ABI is killed. Only x86_64 and aarch64 are
known; elsewhere :func:`sandbox_filter` returns None and the sandbox is unavailable.
"""

from __future__ import annotations

import errno
import functools
import platform
import struct
from dataclasses import dataclass
from typing import Literal

__all__ = ["sandbox_filter"]

# Classic BPF opcodes (linux/bpf_common.h) and seccomp return values (linux/seccomp.h).
_LD_W_ABS = 0x20
_JEQ_K = 0x15
_JGE_K = 0x35
_JSET_K = 0x45
_AND_K = 0x54
_RET_K = 0x06
_RET_ALLOW = 0x7FFF0000
_RET_ERRNO = 0x00050000
_RET_KILL_PROCESS = 0x80000000
# struct seccomp_data: int nr; u32 arch; u64 instruction_pointer; u64 args[6].
_NR, _ARCH = 0, 4
_AF_UNIX, _AF_INET, _AF_INET6 = 1, 2, 10
_SOCK_STREAM, _SOCK_TYPE_MASK, _IPPROTO_TCP = 1, 0xF, 6
_SETID_BITS = 0o6000  # S_ISUID | S_ISGID
_X32_SYSCALL_BIT = 0x40000000


@dataclass(frozen=True)
class _Abi:
    audit_arch: int
    socket: int
    unavailable: tuple[int, ...]  # io_uring_setup, openat2, add_key, request_key, keyctl
    mode_arg: dict[int, int]  # system call -> index of its mode argument
    x32_bit: bool
    prlimit: int  # prlimit64
    sysv_ipc: tuple[int, ...]  # shm*, sem*, msg*: refused where there is no IPC namespace (Landlock)


_ABIS = {
    "x86_64": _Abi(
        audit_arch=0xC000003E, socket=41, unavailable=(425, 437, 248, 249, 250),
        # chmod, fchmod, fchmodat, fchmodat2, open, creat, openat, mknod, mknodat
        mode_arg={90: 1, 91: 1, 268: 2, 452: 2, 2: 2, 85: 1, 257: 3, 133: 1, 259: 2},
        x32_bit=True, prlimit=302, sysv_ipc=(29, 30, 31, 64, 65, 66, 67, 68, 69, 70, 71, 220),
    ),
    "aarch64": _Abi(
        audit_arch=0xC00000B7, socket=198, unavailable=(425, 437, 217, 218, 219),
        # fchmod, fchmodat, fchmodat2, openat, mknodat
        mode_arg={52: 1, 53: 2, 452: 2, 56: 3, 33: 2},
        x32_bit=False, prlimit=261, sysv_ipc=tuple(range(186, 198)),
    ),
}  # fmt: skip

# One instruction: (label or None, opcode, k, label if true, label if false); None = the next one.
_Line = tuple[str | None, int, int, str | None, str | None]


def _arg(index: int) -> int:
    # The low 32 bits of args[index] (little-endian): socket's domain and a mode are ints.
    return 16 + 8 * index


Sockets = Literal["no-unix", "tcp-only", "none"]


def _socket_lines(sockets: Sockets) -> list[_Line]:
    if sockets == "no-unix":
        return [("socket", _LD_W_ABS, _arg(0), None, None), (None, _JEQ_K, _AF_UNIX, "deny", "allow")]
    if sockets == "none":
        return [("socket", _RET_K, _RET_ERRNO | errno.EPERM, None, None)]
    return [
        ("socket", _LD_W_ABS, _arg(0), None, None),
        (None, _JEQ_K, _AF_INET, "tcp", None),
        (None, _JEQ_K, _AF_INET6, "tcp", "deny"),
        ("tcp", _LD_W_ABS, _arg(1), None, None),
        (None, _AND_K, _SOCK_TYPE_MASK, None, None),  # the type less SOCK_NONBLOCK / SOCK_CLOEXEC
        (None, _JEQ_K, _SOCK_STREAM, None, "deny"),
        (None, _LD_W_ABS, _arg(2), None, None),
        (None, _JEQ_K, 0, "allow", None),
        (None, _JEQ_K, _IPPROTO_TCP, "allow", "deny"),
    ]


def _lines(abi: _Abi, sockets: Sockets = "no-unix") -> list[_Line]:
    lines: list[_Line] = [
        (None, _LD_W_ABS, _ARCH, None, None),
        (None, _JEQ_K, abi.audit_arch, None, "kill"),
        (None, _LD_W_ABS, _NR, None, None),
    ]
    if abi.x32_bit:
        lines.append((None, _JGE_K, _X32_SYSCALL_BIT, "deny", None))
    lines += [(None, _JEQ_K, nr, "unavailable", None) for nr in abi.unavailable]
    if sockets != "no-unix":  # bubblewrap's own IPC namespace holds these
        lines += [(None, _JEQ_K, nr, "unavailable", None) for nr in abi.sysv_ipc]
    lines.append((None, _JEQ_K, abi.socket, "socket", None))
    lines += [(None, _JEQ_K, nr, f"mode{index}", None) for nr, index in abi.mode_arg.items()]
    lines.append((None, _JEQ_K, abi.prlimit, "prlimit", None))
    lines += [
        (None, _RET_K, _RET_ALLOW, None, None),
        # Classic BPF only jumps forward: each check below ends at the returns that follow it.
    ]
    lines += _socket_lines(sockets)
    for index in sorted(set(abi.mode_arg.values())):
        lines += [
            (f"mode{index}", _LD_W_ABS, _arg(index), None, None),
            (None, _JSET_K, _SETID_BITS, "deny", "allow"),
        ]
    lines += [
        # prlimit64(pid, resource, new_limit, old_limit): pid 0 (itself) or no new limit (a read).
        ("prlimit", _LD_W_ABS, _arg(0), None, None),
        (None, _JEQ_K, 0, "allow", None),
        (None, _LD_W_ABS, _arg(2), None, None),
        (None, _JEQ_K, 0, None, "deny"),
        (None, _LD_W_ABS, _arg(2) + 4, None, None),  # a pointer: its high 32 bits too
        (None, _JEQ_K, 0, "allow", "deny"),
        ("allow", _RET_K, _RET_ALLOW, None, None),
        ("deny", _RET_K, _RET_ERRNO | errno.EPERM, None, None),
        ("unavailable", _RET_K, _RET_ERRNO | errno.ENOSYS, None, None),
        ("kill", _RET_K, _RET_KILL_PROCESS, None, None),
    ]
    return lines


def _assemble(lines: list[_Line]) -> bytes:
    """struct sock_filter[] with each label turned into a forward jump offset."""
    where = {label: index for index, (label, *_rest) in enumerate(lines) if label is not None}

    def offset(index: int, label: str | None) -> int:
        return 0 if label is None else where[label] - index - 1

    return b"".join(
        struct.pack("=HBBI", code, offset(index, jt), offset(index, jf), k)
        for index, (_label, code, k, jt, jf) in enumerate(lines)
    )


@functools.cache
def _program(machine: str, sockets: Sockets) -> bytes | None:
    abi = _ABIS.get(machine)
    return None if abi is None else _assemble(_lines(abi, sockets))


def sandbox_filter(sockets: Sockets = "no-unix") -> bytes | None:
    """The compiled filter for this machine's architecture, or None where it is not known.

    ``sockets``: "no-unix" for bubblewrap (its network namespace holds the rest), "tcp-only"
    and "none" for Landlock (see the module docstring)."""
    return _program(platform.machine(), sockets)
