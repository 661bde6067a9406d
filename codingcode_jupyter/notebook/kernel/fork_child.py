"""The confined fork's side of run_python (:mod:`.fork`): confine, run, send back, leave.

Everything it uses is imported with this module, in the kernel: after the fork confines itself it
imports nothing of the package (whose files it may not be allowed to read).

Everything here runs in the child after ``os.fork()``: the kernel's other threads do not exist
here, its sockets and event loop belong to the parent, so nothing below touches them. Output goes
to the child's own pipes, a display to the control pipe, and the child leaves through
``os._exit`` (never ``sys.exit``: the kernel's exit handlers must not run).
"""

from __future__ import annotations

import ast
import io
import os
import pickle
import signal
import sys
import traceback
from types import FrameType
from typing import Any, BinaryIO, MutableMapping, NoReturn

from ...engine.sandbox.landlock import Plan
from ...engine.sandbox.self_confine import ConfinementError, become_subreaper, confine_current_process, kill_descendants
from . import transfer

# Imported here, in the kernel, before any fork: once confined, the child may not read the package's
# files (an editable install lives outside what the plan grants).
from .errors import format_exception
from .values import clip, safe_call

__all__ = ["run_child"]

# The largest kept value sent back (a pickle larger than this is refused by name).
MAX_KEPT_BYTES = 512 << 20


class _TimedOut(BaseException):
    """Raised in the code when its time is up (BaseException: `except Exception` in it won't catch it)."""


class _PipePublisher:
    """IPython's display publisher, for the fork: each display goes to the control pipe."""

    def __init__(self, control: BinaryIO) -> None:
        self.control = control
        self.is_publishing = False

    def publish(self, data: Any, metadata: Any = None, source: Any = None, *, transient: Any = None,
                update: bool = False, **kwargs: Any) -> None:
        transfer.write_frame(self.control, transfer.DISPLAY, {"data": data, "metadata": metadata or {}})

    def clear_output(self, wait: bool = False) -> None:
        pass


def run_child(namespace: MutableMapping[str, Any], shell: Any, code: str, timeout: float, keep: list[str],
              plan: Plan, abi: int, seccomp: bytes, env: dict[str, str], out_w: int, err_w: int,
              ctl_w: int) -> NoReturn:
    control = _own_descriptors(out_w, err_w, ctl_w)
    try:
        os.setsid()  # its own process group: the kernel kills it and what it starts in one call
        become_subreaper()
        confine_current_process(plan, abi=abi, seccomp=seccomp)
    except (ConfinementError, OSError) as error:
        transfer.write_frame(control, transfer.CONFINED, {"error": str(error)})
        os._exit(3)
    transfer.write_frame(control, transfer.CONFINED, {"error": None})
    os.environ.clear()
    os.environ.update(env)
    if shell is not None:
        shell.display_pub = _PipePublisher(control)
    status = 0
    try:
        _run(namespace, code, timeout, control)
        _flush_figures()
        _send_kept(namespace, keep, control)
    except BaseException:  # a failure of ours after the code ran: said, never the kernel's
        status = 1
        transfer.write_frame(control, transfer.FAILURE, {"text": traceback.format_exc(), "timed_out": False})
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        kill_descendants()
    os._exit(status)


def _own_descriptors(out_w: int, err_w: int, ctl_w: int) -> BinaryIO:
    """Stdin from /dev/null, stdout and stderr to the child's pipes, every other descriptor closed
    (Landlock does not govern what is already open: the kernel's sockets, its files)."""
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(out_w, 1)
    os.dup2(err_w, 2)
    control = os.dup2(ctl_w, 3)
    os.closerange(4, os.sysconf("SC_OPEN_MAX") if hasattr(os, "sysconf") else 1 << 16)
    sys.stdout = io.TextIOWrapper(os.fdopen(1, "wb", buffering=0), encoding="utf-8", errors="replace",
                                  line_buffering=True, write_through=True)
    sys.stderr = io.TextIOWrapper(os.fdopen(2, "wb", buffering=0), encoding="utf-8", errors="replace",
                                  line_buffering=True, write_through=True)
    sys.stdin = io.TextIOWrapper(os.fdopen(0, "rb"), encoding="utf-8")
    return os.fdopen(control, "wb", buffering=0)


def _run(namespace: MutableMapping[str, Any], code: str, timeout: float, control: BinaryIO) -> None:
    """Run ``code`` as a cell would (its last expression is its value), within ``timeout`` seconds."""
    filename = "<agent-run_python>"
    try:
        tree = ast.parse(code, filename)
        last = tree.body[-1] if tree.body else None
        tail = None
        if isinstance(last, ast.Expr):
            tree.body.pop()
            tail = compile(ast.Expression(last.value), filename, "eval")
        body = compile(tree, filename, "exec")
    except (SyntaxError, ValueError) as error:
        text = "".join(traceback.format_exception_only(type(error), error))
        transfer.write_frame(control, transfer.FAILURE, {"text": f"The code did not compile:\n{text}", "timed_out": False})
        return
    if not isinstance(namespace, dict):
        raise TypeError("the kernel's namespace is not a dict")

    def expire(signum: int, frame: FrameType | None) -> NoReturn:
        raise _TimedOut()

    signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        exec(body, namespace)
        if tail is not None:
            value = eval(tail, namespace)
            if value is not None:
                shown = clip(safe_call(lambda: repr(value), "<repr failed>"), 10_000)
                transfer.write_frame(control, transfer.VALUE, {"repr": shown})
    except _TimedOut:
        transfer.write_frame(control, transfer.FAILURE, {"text": "", "timed_out": True})
    except BaseException as error:  # SystemExit and KeyboardInterrupt too: the code's failure
        transfer.write_frame(control, transfer.FAILURE, {"text": format_exception(error), "timed_out": False})
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def _flush_figures() -> None:
    """Figures the code drew and did not show: the inline backend shows them at the end of a cell."""
    inline = sys.modules.get("matplotlib_inline.backend_inline")
    if inline is not None:
        try:
            inline.flush_figures()
        except Exception:  # noqa: BLE001 -- a figure that cannot be drawn is the code's problem, not the run's
            pass


def _send_kept(namespace: MutableMapping[str, Any], keep: list[str], control: BinaryIO) -> None:
    for name in keep:
        if name not in namespace:
            transfer.write_frame(control, transfer.REFUSED, {"name": name, "why": "the code left no such name"})
            continue
        try:
            data = pickle.dumps(namespace[name], protocol=5)
        except Exception as error:  # noqa: BLE001 -- any value may refuse to be pickled
            transfer.write_frame(control, transfer.REFUSED, {"name": name, "why": f"it cannot be copied ({error})"})
            continue
        if len(data) > MAX_KEPT_BYTES:
            transfer.write_frame(control, transfer.REFUSED, {"name": name, "why": f"it is {len(data):,} bytes"})
            continue
        encoded = name.encode()
        transfer.write_frame(control, transfer.KEPT, len(encoded).to_bytes(2, "little") + encoded + data)
