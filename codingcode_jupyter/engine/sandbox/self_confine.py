"""Confine the calling process itself: the Landlock backend's steps, for a fork of the kernel.

Commands run confined by a launcher that confines itself and then execs them
(:mod:`.landlock`). Code the agent runs in the kernel cannot be exec'd: it runs on the person's
live variables in a fork of the kernel, which confines itself here before it runs anything, with
the same plan commands get (:meth:`~.bwrap.CommandSandbox.compared_landlock_plan`):

1. the parent's death kills it (PR_SET_PDEATHSIG);
2. every capability leaves the bounding and ambient sets, and no_new_privs is set, so nothing it
   runs can gain one;
3. the Landlock domain of the plan: each rule's path opened with O_PATH and granted only if it is
   still the path planned (a link swapped in since cannot widen the domain); TCP bind/connect
   handled with no port granted (no network), abstract Unix sockets and signals scoped;
4. capset with every set empty (a kernel run as root keeps nothing);
5. the seccomp filter (``sandbox_filter("none")``: no socket at all).

Descriptors already open are not governed by Landlock: the caller closes every one it does not
need before calling this. Each step that fails raises :class:`ConfinementError`, and the caller
must then run nothing.
"""

from __future__ import annotations

import ctypes
import os
import signal
import struct
import time
from typing import Callable

from .landlock import NET_BIND_TCP, NET_CONNECT_TCP, SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL, Plan, fs_rights

__all__ = ["ConfinementError", "confine_current_process", "become_subreaper", "kill_descendants"]

_PR_SET_PDEATHSIG, _PR_CAPBSET_DROP, _PR_SET_NO_NEW_PRIVS = 1, 24, 38
_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, _PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 47, 4, 22, 2
_PR_SET_CHILD_SUBREAPER = 36
_CREATE_RULESET, _ADD_RULE, _RESTRICT_SELF = 444, 445, 446
_PATH_BENEATH = 1
# Rights Landlock accepts on a file (not a directory): execute, write, read, truncate, ioctl.
_FILE_RIGHTS = 0x7 | 0x4000 | 0x8000
_CAPSET = {"x86_64": 126, "aarch64": 91}


class ConfinementError(OSError):
    """A step of the confinement failed: nothing may run in this process."""


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> int:
    if result < 0:
        error = ctypes.get_errno()
        raise ConfinementError(error, f"{what} failed: {os.strerror(error)}")
    return result


def confine_current_process(plan: Plan, *, abi: int, seccomp: bytes) -> None:
    """Put this process in the Landlock domain of ``plan`` under the seccomp filter (see the module
    docstring); ``abi`` is the kernel's Landlock ABI (at least 1)."""
    libc = _libc()
    prctl, syscall = libc.prctl, libc.syscall
    prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    _check(prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "PR_SET_PDEATHSIG")
    for cap in range(64):
        if prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 and ctypes.get_errno() == 22:
            break  # past the last capability this kernel knows
    prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    _check(prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "PR_SET_NO_NEW_PRIVS")
    _landlock(syscall, plan, abi)
    capset = _CAPSET.get(os.uname().machine)
    if capset is None:
        raise ConfinementError(0, f"capset: unknown machine {os.uname().machine}")
    head = ctypes.create_string_buffer(struct.pack("=Ii", 0x20080522, 0))
    data = ctypes.create_string_buffer(24)
    _check(syscall(capset, head, data), "capset")
    program = ctypes.create_string_buffer(seccomp, len(seccomp))
    fprog = _SockFprog(len(seccomp) // 8, ctypes.cast(program, ctypes.c_void_p))
    _check(prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.addressof(fprog), 0, 0), "seccomp")


def _landlock(syscall: Callable[..., int], plan: Plan, abi: int) -> None:
    handled_net = (NET_BIND_TCP | NET_CONNECT_TCP) if abi >= 4 else 0
    scoped = (SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL) if abi >= 6 else 0
    fs = fs_rights(abi)
    attr = struct.pack("=QQQ", fs, handled_net, scoped)
    size = 24 if scoped else 16 if handled_net else 8
    ruleset = _check(syscall(_CREATE_RULESET, ctypes.create_string_buffer(attr[:size], size), ctypes.c_size_t(size),
                             ctypes.c_uint32(0)), "landlock_create_ruleset")
    try:
        for rights, path in plan.rules:
            try:
                fd = os.open(path, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC)
            except OSError:
                continue  # gone since the plan was made: nothing to grant
            try:
                if os.readlink(f"/proc/self/fd/{fd}") != path:
                    continue  # not what was planned any more (a link swapped in)
                if not os.path.isdir(f"/proc/self/fd/{fd}"):
                    rights &= _FILE_RIGHTS
                rights &= fs
                if rights:
                    rule = ctypes.create_string_buffer(struct.pack("=Qi", rights, fd), 12)
                    _check(syscall(_ADD_RULE, ruleset, _PATH_BENEATH, rule, ctypes.c_uint32(0)),
                           f"landlock_add_rule {path}")
            finally:
                os.close(fd)
        _check(syscall(_RESTRICT_SELF, ruleset, ctypes.c_uint32(0)), "landlock_restrict_self")
    finally:
        os.close(ruleset)


def become_subreaper() -> None:
    """Adopt what this process's children leave running, so :func:`kill_descendants` finds it."""
    libc = _libc()
    libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    _check(libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0), "PR_SET_CHILD_SUBREAPER")


def kill_descendants() -> None:
    """Kill every process below this one and reap them (background jobs the code started): nothing
    it ran may go on writing after it ends."""
    while True:
        found, todo = [], [os.getpid()]
        while todo:
            pid = todo.pop()
            try:
                tasks = os.listdir(f"/proc/{pid}/task")
            except OSError:
                continue
            for tid in tasks:
                try:
                    with open(f"/proc/{pid}/task/{tid}/children") as handle:
                        kids = [int(x) for x in handle.read().split()]
                except (OSError, ValueError):
                    continue
                found += kids
                todo += kids
        for pid in found:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        try:
            while os.waitpid(-1, os.WNOHANG)[0] > 0:
                pass
        except ChildProcessError:
            return
        if not found:
            return
        time.sleep(0.005)
