"""Which backend can confine commands on this machine (bubblewrap or Landlock), and if none can, why.

Each backend is probed once per process: bubblewrap by building its namespaces around ``true``,
Landlock by the kernel's ABI. ``sandbox.backend`` "auto" prefers bubblewrap.
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import threading
from typing import Literal

from ..settings import SandboxSettings
from . import landlock
from .launcher import SECCOMP_FD, launcher_argv
from .seccomp import sandbox_filter

__all__ = ["Backend", "BACKEND_NAMES", "base_flags", "choose_backend", "no_filter_reason", "probe_bwrap"]

Backend = Literal["bwrap", "landlock"]
BACKEND_NAMES = {"bwrap": "bubblewrap", "landlock": "Landlock"}

_probe_cache: dict[str, str | None] = {}
_probe_lock = threading.Lock()


def choose_backend(settings: SandboxSettings, bwrap: str | None) -> tuple[Backend, str, str | None]:
    """(backend, why it, the reason none can run or None)."""
    wanted = settings.backend
    filter_reason = no_filter_reason() if sandbox_filter() is None else None
    bwrap_reason: str | None = None
    if wanted in ("auto", "bwrap"):
        if bwrap is None:
            bwrap_reason = "bubblewrap not found on PATH (install the 'bubblewrap' package)"
        else:
            bwrap_reason = filter_reason or probe_bwrap(bwrap)
        if bwrap_reason is None:
            why = "sandbox.backend is bwrap" if wanted == "bwrap" else "bubblewrap can create namespaces here"
            return "bwrap", why, None
        if wanted == "bwrap":
            return "bwrap", "", bwrap_reason
    landlock_filter = sandbox_filter("tcp-only")
    landlock_reason = no_filter_reason() if landlock_filter is None else landlock.probe_landlock(landlock_filter)
    if landlock_reason is None and settings.network.allowedDomains and landlock.landlock_abi() < 4:
        landlock_reason = (f"Landlock ABI {landlock.landlock_abi()} has no TCP rules, so the network allowlist "
                           "(sandbox.network.allowedDomains) cannot be enforced; it needs ABI 4 (Linux 6.7)")
    if landlock_reason is None:
        why = ("sandbox.backend is landlock" if wanted == "landlock"
               else f"Landlock (ABI {landlock.landlock_abi()}) because {bwrap_reason}")
        return "landlock", why, None
    if wanted == "landlock":
        return "landlock", "", landlock_reason
    return "bwrap", "", f"{bwrap_reason}; and {landlock_reason}"


def base_flags() -> list[str]:
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
        # The kernel's Python, where it lives under /tmp (a throwaway checkout's venv): the fresh
        # /tmp would hide the interpreter and the tools the person installed beside it.
        *[arg for root in landlock.python_roots() if root.startswith("/tmp/") for arg in ("--ro-bind", root, root)],
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
    program = sandbox_filter()
    if program is None:
        return no_filter_reason()
    try:
        done = subprocess.run(
            [*launcher_argv(program), bwrap, *base_flags(), "--seccomp", str(SECCOMP_FD), "--", "true"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=10,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"bubblewrap could not be started: {error}"
    if done.returncode != 0:
        detail = done.stderr.decode(errors="replace").strip().splitlines()
        hint = detail[-1] if detail else f"exit status {done.returncode}"
        return f"bubblewrap cannot build the sandbox here ({hint}); user namespaces or seccomp may be blocked"
    return None


def no_filter_reason() -> str:
    return (
        f"no seccomp filter is known for this machine ({platform.machine()}), so host Unix sockets "
        "could not be blocked; the sandbox supports x86_64 and aarch64"
    )
