"""Running ``%%agent`` as an awaited cell, and waiting for a click while it runs.

Why (measured on ipykernel 6.29 to 7.4): a widget click is a comm message on the kernel's shell channel, which
is busy while a cell runs. On ipykernel >= 7.4 it is dispatched only while the running cell
yields to the event loop, so ``%%agent`` cells are rewritten into ``await <coroutine>`` by
an input transformer and IPython runs them as top-level-await code on the kernel loop. On
ipykernel 6.x nothing is dispatched while a cell runs, so a wait pumps the kernel's shell
messages itself (as jupyter-ui-poll's async mode does), holding back execute requests and
replaying them after the cell. The interrupt button does not cancel an awaiting cell on
7.4, so the cell installs a SIGINT handler that cancels its task for its duration.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
import threading
from typing import Any, AsyncIterator, Awaitable, Callable, Iterator, TypeVar

__all__ = [
    "CELL_FUNCTION",
    "agent_cell_transformer",
    "install_transformer",
    "uninstall_transformer",
    "cancel_on_interrupt",
    "sync_interrupts",
    "wait_answer",
    "kernel_of",
    "ipykernel_major",
    "stdin_allowed",
]

T = TypeVar("T")

CELL_FUNCTION = "__codingcode_agent_cell__"


# -- the input transformer -------------------------------------------------------------


def agent_cell_transformer(lines: list[str]) -> list[str]:
    """Rewrite a ``%%agent`` cell into ``await __codingcode_agent_cell__(line, body)``.

    Help requests (``%%agent?``) and every other cell pass through unchanged.
    """
    start = 0
    while start < len(lines) and not lines[start].strip():
        start += 1
    if start >= len(lines):
        return lines
    first = lines[start].rstrip("\r\n")
    if not (first == "%%agent" or first.startswith(("%%agent ", "%%agent\t"))):
        return lines
    if first.rstrip().endswith("?"):
        return lines
    line = first[len("%%agent") :].strip()
    body = "".join(lines[start + 1 :])
    if not body.strip() and not any(word.startswith("/") and ":" in word for word in line.split()):
        # Left as a cell magic: a terminal keeps reading the request on the next lines, and a
        # notebook cell with no request gets the magic's own usage message. (`%%agent
        # /server:prompt` is a whole request on its magic line.)
        return lines
    # repr() gives a literal Python reads back exactly, whatever the prompt holds.
    return [f"await {CELL_FUNCTION}({line!r}, {body!r})\n"]


def install_transformer(ip: Any, runner: Callable[[str, str], Awaitable[Any]]) -> None:
    """Register the transformer and the hidden coroutine function it calls."""
    if agent_cell_transformer not in ip.input_transformers_cleanup:
        ip.input_transformers_cleanup.append(agent_cell_transformer)
    ip.user_ns[CELL_FUNCTION] = runner
    # Hidden names stay out of %who / %whos.
    ip.user_ns_hidden[CELL_FUNCTION] = runner


def uninstall_transformer(ip: Any) -> None:
    """Remove what :func:`install_transformer` added."""
    while agent_cell_transformer in ip.input_transformers_cleanup:
        ip.input_transformers_cleanup.remove(agent_cell_transformer)
    ip.user_ns.pop(CELL_FUNCTION, None)
    ip.user_ns_hidden.pop(CELL_FUNCTION, None)


# -- interrupts --------------------------------------------------------------------------


@contextlib.asynccontextmanager
async def cancel_on_interrupt(task: "asyncio.Future[Any] | None" = None) -> AsyncIterator[None]:
    """While inside, SIGINT (the interrupt button) cancels ``task`` (default: the current one).

    Installed only on the main thread (signal handlers live there); the previous Python
    handler and the previous wakeup fd are restored afterwards so the kernel's own
    interrupt handling is untouched for other cells.
    """
    task = task or asyncio.current_task()
    loop = asyncio.get_running_loop()
    if task is None or threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGINT)
    try:
        old_fd = signal.set_wakeup_fd(-1)
        signal.set_wakeup_fd(old_fd)
    except (ValueError, OSError):
        old_fd = -1
    try:
        loop.add_signal_handler(signal.SIGINT, task.cancel)
    except (NotImplementedError, RuntimeError, ValueError):
        yield
        return
    restore_hook = _route_handler_interrupts(loop, task)
    try:
        yield
    finally:
        restore_hook()
        loop.remove_signal_handler(signal.SIGINT)
        signal.signal(signal.SIGINT, previous if previous is not None else signal.default_int_handler)
        if old_fd != -1:
            with contextlib.suppress(ValueError, OSError):
                signal.set_wakeup_fd(old_fd)


def _route_handler_interrupts(loop: asyncio.AbstractEventLoop, task: "asyncio.Future[Any]") -> Callable[[], None]:
    """The kernel handles each message (a click, a widget's sync) under SIGINT's default handler
    and swallows the KeyboardInterrupt ("caught in kernel"): an interrupt landing then would be
    lost and the cell would wait on. While the cell waits, such an interrupt cancels ``task``.
    Returns what puts the kernel's own hook back."""
    from IPython import get_ipython

    kernel = getattr(get_ipython(), "kernel", None)
    if kernel is None or not hasattr(kernel, "pre_handler_hook"):
        return lambda: None
    previous = kernel.__dict__.get("pre_handler_hook")
    own = type(kernel).pre_handler_hook

    def cancel(_signum: int, _frame: Any) -> None:
        loop.call_soon_threadsafe(task.cancel)

    def pre_handler_hook() -> None:
        try:
            kernel.saved_sigint_handler = signal.signal(signal.SIGINT, cancel)
        except ValueError:  # not the main thread: the kernel's own behaviour
            own(kernel)

    kernel.pre_handler_hook = pre_handler_hook

    def restore() -> None:
        if previous is not None:
            kernel.pre_handler_hook = previous
        else:
            with contextlib.suppress(AttributeError):
                del kernel.pre_handler_hook

    return restore


@contextlib.contextmanager
def sync_interrupts() -> Iterator[None]:
    """Make SIGINT raise KeyboardInterrupt again, for a blocking call such as ``input()``."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous if previous is not None else signal.default_int_handler)


# -- the kernel we run in ---------------------------------------------------------------


def kernel_of(ip: Any) -> Any | None:
    """The ipykernel kernel behind this shell, or None (terminal IPython, plain Python)."""
    return getattr(ip, "kernel", None) if ip is not None else None


def ipykernel_major() -> int:
    """Major version of the running ipykernel (0 when there is none)."""
    module = sys.modules.get("ipykernel")
    if module is None:
        return 0
    try:
        return int(str(getattr(module, "__version__", "0")).split(".")[0])
    except ValueError:
        return 0


def stdin_allowed(ip: Any) -> bool:
    """Whether ``input()`` can reach a person: terminal IPython, or a frontend that allows stdin."""
    kernel = kernel_of(ip)
    if kernel is None:
        return sys.stdin is not None and sys.stdin.isatty()
    return bool(getattr(kernel, "_allow_stdin", False))


def sent_by_runner(ip: Any) -> bool:
    """Whether the running cell came from a runner (nbconvert, papermill: nbclient), not a notebook editor.

    A notebook editor (JupyterLab, Notebook 7) sends the cell's id with every execute request, for its
    debugger; nbclient sends none and does not allow stdin. Both signals are read, so an editor that
    sends no id but allows stdin still counts as one. Read at the start of a cell: a cell the agent
    runs meanwhile replaces what IPython holds about the running one.
    """
    if kernel_of(ip) is None or stdin_allowed(ip):
        return False
    info = getattr(getattr(getattr(ip, "displayhook", None), "exec_result", None), "info", None)
    return info is not None and getattr(info, "cell_id", None) is None


# -- waiting for a click ------------------------------------------------------------------


# Kernels whose shell messages a wait is already pumping: a wait inside it (a card's, inside
# the whole turn's) just awaits, or two pumps would hold and replay the same requests.
_PUMPING: set[int] = set()


async def wait_answer(future: "asyncio.Future[T]", ip: Any = None) -> T:
    """Await ``future`` so that widget clicks reach the kernel meanwhile."""
    kernel = kernel_of(ip)
    if kernel is None or ipykernel_major() >= 7 or id(kernel) in _PUMPING:
        return await future
    _PUMPING.add(id(kernel))
    try:
        async with _ShellPump(ip, kernel) as pump:
            return await pump.until(future)
    finally:
        _PUMPING.discard(id(kernel))


class _ShellPump:
    """ipykernel 6.x: handle shell messages (comm clicks) while the cell waits.

    Execute requests that arrive meanwhile (Run All queues them) are held back and replayed
    in order once the cell finishes, so cells keep their order.
    """

    def __init__(self, ip: Any, kernel: Any) -> None:
        self.ip = ip
        self.kernel = kernel
        self.held: list[tuple[Any, ...]] = []
        self.parent = _shell_parent(kernel)
        self.original = kernel.shell_handlers.get("execute_request")

    async def __aenter__(self) -> "_ShellPump":
        async def hold(*args: Any) -> None:
            self.held.append(args)
            self._reset_parent()

        self.kernel.shell_handlers["execute_request"] = hold
        return self

    async def __aexit__(self, *exc: Any) -> None:
        self.kernel.shell_handlers["execute_request"] = self.original
        if self.held:
            held, self.held = self.held, []

            def replay(*_: Any) -> None:
                self.ip.events.unregister("post_run_cell", replay)
                asyncio.ensure_future(_replay(self.kernel, held))

            # At the end of this cell: post_run_cell fires once per cell, whereas post_execute
            # also fires around every comm message (a click) and would run them mid-cell.
            self.ip.events.register("post_run_cell", replay)

    def _reset_parent(self) -> None:
        with contextlib.suppress(Exception):
            self.kernel.set_parent(*self.parent)

    async def until(self, future: "asyncio.Future[T]") -> T:
        while not future.done():
            await asyncio.sleep(0.005)
            try:
                result = self.kernel.do_one_iteration()
                if asyncio.iscoroutine(result) or isinstance(result, asyncio.Future):
                    await result
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                self._reset_parent()
        return future.result()


def _shell_parent(kernel: Any) -> tuple[Any, Any]:
    """(ident, header) of the running cell's request, for ``kernel.set_parent``.

    ipykernel 6 keeps both per channel in dicts; passing the whole dict back to
    ``set_parent`` would nest it and break stdin routing (input() would never be answered).
    """
    ident = getattr(kernel, "_parent_ident", None)
    if isinstance(ident, dict):
        ident = ident.get("shell")
    getter = getattr(kernel, "get_parent", None)
    if getter is not None:
        try:
            return ident, getter("shell")
        except TypeError:
            return ident, getter()
    return ident, getattr(kernel, "_parent_header", None)


async def _replay(kernel: Any, held: list[tuple[Any, ...]]) -> None:
    """Run the execute requests held back during a wait, in order (ipykernel 6.x)."""
    shell_stream = getattr(kernel, "shell_stream", None)
    for stream, ident, parent in held:
        kernel.set_parent(ident, parent)
        if getattr(kernel, "_aborting", False):
            kernel._send_abort_reply(stream, parent, ident)
            continue
        result = kernel.execute_request(stream, ident, parent)
        if asyncio.iscoroutine(result):
            await result
        sys.stdout.flush()
        sys.stderr.flush()
        kernel._publish_status("idle", "shell") if shell_stream is not None else kernel._publish_status("idle")
        # What dispatch_shell does after a handler: push the queued execute_reply out now.
        flush = getattr(stream, "flush", None)
        if flush is not None:
            import zmq

            with contextlib.suppress(Exception):
                flush(zmq.POLLOUT)
        await asyncio.sleep(0.001)
