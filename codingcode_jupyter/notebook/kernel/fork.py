"""run_python in a confined fork of the kernel: the code runs on the person's variables, and
whatever it does stays inside the sandbox commands get.

The kernel forks. The child closes every descriptor but its three pipes (stdout, stderr, and
the control pipe of :mod:`.transfer`), takes the sandbox's Landlock plan with no network and no
socket at all (:mod:`~...engine.sandbox.self_confine`), keeps only the environment commands get
(no API key, no token), and runs the code against the namespace as it was at the fork (copy on
write: nothing it changes reaches the kernel). What it prints streams back; what it displays
(figures included) comes back as display data; its last expression comes back as text; the
names the call asks to keep come back as data (:func:`~.transfer.load_value`) and are bound in
the kernel. Then it kills whatever it started and leaves with ``os._exit``: it never runs the
kernel's exit handlers, never touches the kernel's sockets or its event loop.

What a fork cannot carry runs in the kernel itself, judged and asked as before
(:func:`in_kernel_reason`): code with a top-level ``await`` (it runs on the kernel's event loop),
and code that uses an object a fork does not copy faithfully (a connection, a thread, a GPU
context).
"""

from __future__ import annotations

import ast
import asyncio
import json
import os
import pickle
import select
import signal
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, MutableMapping, Sequence

from ...engine.sandbox.landlock import Plan, landlock_abi
from ...engine.sandbox.launcher import PASSED_ENV
from ...engine.sandbox.seccomp import sandbox_filter
from . import transfer
from .fork_child import run_child

__all__ = ["ForkResult", "fork_unavailable", "in_kernel_reason", "run_in_fork"]

# Modules whose objects do not survive a fork (a socket, a thread, a lock someone else holds, a GPU).
_UNFORKABLE = ("socket", "ssl", "sqlite3", "threading", "_thread", "multiprocessing", "concurrent.futures", "asyncio",
               "zmq", "psycopg", "psycopg2", "pymongo", "redis", "torch.cuda", "tensorflow", "jax")
_probe: dict[str, str | None] = {}


def fork_unavailable() -> str | None:
    """Why this kernel cannot run code in a confined fork (None: it can). Tried once per process:
    a child confines itself and exits."""
    if "result" not in _probe:
        _probe["result"] = _try_confining()
    return _probe["result"]


def _try_confining() -> str | None:
    if not hasattr(os, "fork") or not os.uname().sysname == "Linux":
        return "a confined fork needs Linux"
    seccomp = sandbox_filter("none")
    if seccomp is None:
        return f"no seccomp filter is known for this machine ({os.uname().machine})"
    abi = landlock_abi()
    if abi < 1:
        return "the kernel offers no Landlock (Linux 5.13 or later with the landlock LSM)"
    from ...engine.sandbox.self_confine import ConfinementError, confine_current_process

    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            confine_current_process(Plan(), abi=abi, seccomp=seccomp)
        except ConfinementError:
            code = 3
        finally:
            os._exit(code)
    status = os.waitpid(pid, 0)[1]
    return None if os.waitstatus_to_exitcode(status) == 0 else "the kernel process cannot confine itself here"


def in_kernel_reason(code: str, namespace: MutableMapping[str, Any]) -> str | None:
    """Why ``code`` must run in the kernel itself rather than a fork, or None."""
    try:
        compiled = compile(code, "<check>", "exec", ast.PyCF_ALLOW_TOP_LEVEL_AWAIT | ast.PyCF_ONLY_AST)
    except (SyntaxError, ValueError):
        return None  # the fork reports the syntax error as the kernel would
    if any(isinstance(node, (ast.Await, ast.AsyncFor, ast.AsyncWith)) for node in ast.walk(compiled)):
        return "it awaits at the top level, which runs on the kernel's event loop"
    used = {node.id for node in ast.walk(compiled) if isinstance(node, ast.Name)}
    for name in sorted(used):
        if name not in namespace:
            continue
        module = getattr(type(namespace[name]), "__module__", "") or ""
        if any(module == bad or module.startswith(bad + ".") for bad in _UNFORKABLE):
            return f"`{name}` is a {module}.{type(namespace[name]).__qualname__}, which a fork does not carry"
    return None


@dataclass
class ForkResult:
    """What the child sent back."""

    stdout: str = ""
    stderr: str = ""
    value_repr: str | None = None
    failure: str | None = None
    timed_out: bool = False
    displays: list[dict[str, Any]] = field(default_factory=list)
    kept: dict[str, Any] = field(default_factory=dict)
    refused: dict[str, str] = field(default_factory=dict)
    confinement_error: str | None = None
    exit_status: int = 0


def _child_env(plan: Plan, extra_env: Sequence[str]) -> dict[str, str]:
    # The environment commands get: the fixed allowlist and the person's sandbox.env entries.
    entries = [*PASSED_ENV, *extra_env]
    names = {name for name in entries if not name.endswith("*")}
    prefixes = tuple(name[:-1] for name in entries if name.endswith("*"))
    env = {k: v for k, v in os.environ.items() if k in names or k.startswith(prefixes)}
    env.update(plan.env_set)
    return env


async def run_in_fork(namespace: MutableMapping[str, Any], shell: Any, code: str, *, timeout: float,
                      keep: list[str], plan: Plan, progress: Callable[[str], None],
                      extra_env: Sequence[str] = ()) -> ForkResult:
    """Run ``code`` in a confined fork (see the module docstring); ``progress`` gets whole lines of
    output as they come. Cancelling the call kills the fork."""
    abi, seccomp = landlock_abi(), sandbox_filter("none")
    assert seccomp is not None, "fork_unavailable() is checked first"
    env = _child_env(plan, extra_env)
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    ctl_r, ctl_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: nothing in here returns
        try:
            run_child(namespace, shell, code, timeout, keep, plan, abi, seccomp, env, out_w, err_w, ctl_w)
        finally:
            os._exit(70)
    for fd in (out_w, err_w, ctl_w):
        os.close(fd)
    loop = asyncio.get_running_loop()
    def line(text: str) -> None:
        loop.call_soon_threadsafe(progress, text)

    reader = _Reader(out_r, err_r, ctl_r, line)
    thread = threading.Thread(target=reader.run, name="codingcode-fork-reader", daemon=True)
    thread.start()
    try:
        # The child keeps its own time limit; this one is the floor under a child that stops answering.
        status = await asyncio.shield(loop.run_in_executor(None, _wait, pid, timeout + 5.0))
    except BaseException:
        _kill(pid)
        raise
    finally:
        thread.join(5.0)
    result = reader.result()
    result.exit_status = status
    if status != 0 and result.failure is None and result.confinement_error is None:
        result.failure = f"the confined run ended abnormally (exit status {status})"
    return result


def _wait(pid: int, limit: float) -> int:
    """The child's exit status, killing it (and its group) past ``limit`` seconds."""
    deadline = time.monotonic() + limit
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        if time.monotonic() > deadline:
            _kill(pid)
            return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
        time.sleep(0.005)


def _kill(pid: int) -> None:
    """The fork and its process group (what it started and did not move out of it)."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass


class _Reader:
    """Reads the child's three pipes until they close (on a thread of its own)."""

    def __init__(self, out: int, err: int, ctl: int, line: Callable[[str], None]) -> None:
        self.fds = {out: "stdout", err: "stderr", ctl: "control"}
        self.text: dict[str, list[str]] = {"stdout": [], "stderr": []}
        self.pending: dict[str, str] = {"stdout": "", "stderr": ""}
        self.control = transfer.FrameReader()
        self.line = line

    def run(self) -> None:
        open_fds = set(self.fds)
        while open_fds:
            ready, _, _ = select.select(list(open_fds), [], [])
            for fd in ready:
                chunk = os.read(fd, 1 << 20)
                if not chunk:
                    open_fds.discard(fd)
                    os.close(fd)
                    continue
                self._take(self.fds[fd], chunk)

    def _take(self, which: str, chunk: bytes) -> None:
        if which == "control":
            self.control.feed(chunk)
            return
        text = chunk.decode("utf-8", errors="replace")
        self.text[which].append(text)
        self.pending[which] += text
        if "\n" in self.pending[which]:
            lines, self.pending[which] = self.pending[which].rsplit("\n", 1)
            self.line(lines[-2000:])

    def result(self) -> ForkResult:
        found = ForkResult(stdout="".join(self.text["stdout"]), stderr="".join(self.text["stderr"]))
        for kind, body in self.control.frames:
            if kind == transfer.KEPT:
                size = int.from_bytes(body[:2], "little")
                name = body[2:2 + size].decode()
                try:
                    found.kept[name] = transfer.load_value(body[2 + size:])
                except (pickle.UnpicklingError, AttributeError, ImportError, TypeError, ValueError) as error:
                    found.refused[name] = f"it is not plain data ({error})"
                continue
            data = json.loads(body)
            if kind == transfer.DISPLAY:
                found.displays.append(data)
            elif kind == transfer.VALUE:
                found.value_repr = data["repr"]
            elif kind == transfer.FAILURE:
                found.failure, found.timed_out = data["text"], bool(data.get("timed_out"))
            elif kind == transfer.REFUSED:
                found.refused[data["name"]] = data["why"]
            elif kind == transfer.CONFINED and data.get("error"):
                found.confinement_error = data["error"]
        return found
