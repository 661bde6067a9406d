"""run_python: code run in the user's namespace, on the kernel's main thread."""

from __future__ import annotations

import ast
import asyncio
import contextlib
import inspect
import io
import itertools
import linecache
import signal
import threading
import time
import traceback
import types
from dataclasses import dataclass
from types import FrameType
from typing import Annotated, Any, Iterator, NoReturn

from pydantic import BaseModel, Field, StringConstraints

from ...engine.deadline import within
from ...engine.tools.base import ToolContext, ToolResult
from .. import async_cell
from .errors import format_exception
from .namespace import KernelAccess
from .values import clip, safe_call

MAX_OUTPUT_CHARS = 20_000
MAX_CODE_CHARS = 200_000
DEFAULT_TIMEOUT = 120.0
MAX_TIMEOUT = 3600.0
_run_counter = itertools.count(1)


class RunPythonArgs(BaseModel):
    """Parameters of run_python."""

    code: str = Field(min_length=1, max_length=MAX_CODE_CHARS, description="Python code to run in the notebook's namespace.")
    timeout: float = Field(
        default=DEFAULT_TIMEOUT, gt=0, le=MAX_TIMEOUT,
        description=f"Seconds before the code is stopped (default {DEFAULT_TIMEOUT:.0f}, max {MAX_TIMEOUT:.0f}).",
    )
    keep: list[Annotated[str, StringConstraints(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")]] = Field(
        default_factory=list, max_length=50,
        description=("Names whose values the notebook should have afterwards. The code runs in a confined copy of "
                     "the notebook's namespace: what it binds or changes stays there, except these names, copied "
                     "back when they hold data (numbers, text, containers, dates, numpy arrays, pandas frames)."),
    )


class _RunTimeout(BaseException):
    """Raised inside the code when its time is up (BaseException: `except Exception` in it won't swallow it)."""


class _Capture(io.TextIOBase):
    """A stdout/stderr that keeps the head and the tail and streams whole lines as progress."""

    def __init__(self, ctx: ToolContext, label: str, limit: int = MAX_OUTPUT_CHARS) -> None:
        self.ctx, self.label, self.limit = ctx, label, limit
        self.head: list[str] = []
        self.head_len = 0
        self.tail: list[str] = []
        self.tail_len = 0
        self.dropped = 0
        self.pending = ""

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        if self.head_len < self.limit // 2:
            self.head.append(text)
            self.head_len += len(text)
        else:
            self.tail.append(text)
            self.tail_len += len(text)
            while self.tail_len > self.limit // 2 and len(self.tail) > 1:
                dropped = self.tail.pop(0)
                self.tail_len -= len(dropped)
                self.dropped += len(dropped)
        self.pending += text
        if "\n" in self.pending:
            lines, self.pending = self.pending.rsplit("\n", 1)
            with contextlib.suppress(Exception):
                self.ctx.progress(lines[-2000:])
        return len(text)

    def value(self) -> str:
        middle = f"\n[... {self.dropped} characters of output cut ...]\n" if self.dropped else ""
        return "".join(self.head) + middle + "".join(self.tail)


def _split_last_expression(tree: ast.Module) -> tuple[ast.Module, ast.Expression | None]:
    last = tree.body[-1] if tree.body else None
    if isinstance(last, ast.Expr):
        tree.body.pop()
        return tree, ast.Expression(last.value)
    return tree, None


@contextlib.contextmanager
def _time_limit(seconds: float) -> Iterator[None]:
    """SIGALRM-based limit for code on the main thread; a no-op elsewhere."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(signum: int, frame: FrameType | None) -> NoReturn:
        raise _RunTimeout()

    previous = signal.signal(signal.SIGALRM, expire)
    old_timer = signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous if previous is not None else signal.SIG_DFL)
        if old_timer[0]:
            signal.setitimer(signal.ITIMER_REAL, *old_timer)


@dataclass
class Execution:
    """What running a piece of code did."""

    stdout: str = ""
    stderr: str = ""
    value: Any = None
    has_value: bool = False
    failure: BaseException | None = None
    timed_out: bool = False
    compile_error: str | None = None
    elapsed: float = 0.0


async def execute(access: KernelAccess, code: str, timeout: float, ctx: ToolContext) -> Execution:
    """Run ``code`` in the user's namespace as a cell would (its last expression is its value)."""
    filename = f"<agent-run_python-{next(_run_counter)}>"
    flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
    try:
        tree = compile(code, filename, "exec", ast.PyCF_ONLY_AST | flags)
        body, last = _split_last_expression(tree)
        body_code = compile(body, filename, "exec", flags)
        last_code = compile(last, filename, "eval", flags) if last is not None else None
    except (SyntaxError, ValueError) as error:
        return Execution(compile_error="".join(traceback.format_exception_only(type(error), error)))
    # Registered so tracebacks (and inspect.getsource of functions it defines) show the code.
    linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)

    out, err = _Capture(ctx, "stdout"), _Capture(ctx, "stderr")
    ns = access.user_ns
    if not isinstance(ns, dict):
        # exec and eval take only a real dict as globals (IPython's user_ns is one).
        raise TypeError("the kernel's namespace is not a dict")
    started = time.monotonic()
    result = Execution()

    async def run(compiled: types.CodeType, mode: str) -> Any:
        if compiled.co_flags & inspect.CO_COROUTINE:
            # Top-level await: runs on the loop; the turn's cancellation reaches it.
            remaining = max(0.01, timeout - (time.monotonic() - started))
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                return await within(eval(compiled, ns), remaining)
        remaining = max(0.01, timeout - (time.monotonic() - started))
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            with async_cell.sync_interrupts(), _time_limit(remaining):
                if mode == "exec":
                    exec(compiled, ns)
                    return None
                return eval(compiled, ns)

    if ctx.cancelled.is_set():
        raise asyncio.CancelledError()
    try:
        await run(body_code, "exec")
        if last_code is not None:
            result.value = await run(last_code, "eval")
            result.has_value = result.value is not None
    except KeyboardInterrupt:
        # The interrupt button: stop the turn, as it stops a cell.
        ctx.cancelled.set()
        raise asyncio.CancelledError() from None
    except (_RunTimeout, asyncio.TimeoutError) as error:
        result.failure, result.timed_out = error, True
    except asyncio.CancelledError:
        raise
    except BaseException as error:  # SystemExit too: the code's failure, not the kernel's
        result.failure = error
    result.elapsed = time.monotonic() - started
    result.stdout, result.stderr = out.value(), err.value()
    return result


def execution_text(result: Execution, timeout: float) -> str:
    """What the model reads of an execution."""
    if result.compile_error is not None:
        return f"The code did not compile:\n{result.compile_error}"
    sections = []
    if result.stdout:
        sections.append(f"[stdout]\n{result.stdout.rstrip()}")
    if result.stderr:
        sections.append(f"[stderr]\n{result.stderr.rstrip()}")
    if result.has_value:
        value = result.value
        sections.append(f"[result] {clip(safe_call(lambda: repr(value), '<repr failed>'), 10_000)}")
    if result.timed_out:
        sections.append(f"[error] Stopped after {timeout:g} s (timeout). Changes made before that remain.")
    elif result.failure is not None:
        sections.append("[error]\n" + format_exception(result.failure).rstrip())
    if not sections:
        sections.append("(ran without output)")
    sections.append(f"({result.elapsed:.2f} s)")
    return "\n".join(sections)


async def run_python(access: KernelAccess, args: RunPythonArgs, ctx: ToolContext) -> ToolResult:
    """Run the code in the kernel itself (what a confined fork cannot run, or where there is none)."""
    result = await execute(access, args.code, args.timeout, ctx)
    failed = result.compile_error is not None or result.failure is not None
    return ToolResult.text(execution_text(result, args.timeout), is_error=failed)


def confined_plan(access: KernelAccess, code: str, ctx: ToolContext) -> str | None:
    """Why this call runs in a confined fork (None: in the kernel itself): the sandbox is on, the
    kernel can confine a fork, and the code needs nothing a fork cannot carry. The approval
    pipeline reads the same answer (``ToolDefinition.runs_confined``)."""
    from .fork import fork_unavailable, in_kernel_reason

    try:
        sandbox_settings = ctx.deps.settings.current().merged.sandbox
    except Exception:  # noqa: BLE001 -- unreadable settings: the pipeline denies; nothing runs confined
        return None
    sandbox = ctx.deps.sandbox()
    if not sandbox_settings.enabled or not sandbox_settings.confineKernelCode or sandbox is None:
        return None
    if fork_unavailable() is not None or in_kernel_reason(code, access.user_ns) is not None:
        return None
    return "confined fork"


async def run_python_preview(args: RunPythonArgs, ctx: ToolContext) -> str:
    return args.code
