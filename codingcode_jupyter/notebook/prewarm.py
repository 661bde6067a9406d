"""Loading the engine in the background once ``%load_ext`` returns, so the first ``%%agent``
cell does not have to.

``%load_ext`` stays cheap by deferring the engine; without this the deferred cost (the
engine, the widgets, the anthropic SDK: 2 to 3 s measured) lands on the first ``%%agent`` cell. A
daemon thread does that work while the person reads or types, one step at a time:

* A step is one import (or one warm-up the engine offers). Imports are thread-safe: a cell
  that imports a module the thread is loading waits for that module, nothing more.
* The person's own cells come first. While one runs, the thread stops before its next
  step and goes on once the kernel has been idle for :data:`IDLE_S`, so cells queued by
  Run All never compete with it. Inside a step (the SDK's import alone is one step of a
  second or more) it also steps aside, between two of the step's imports, while a cell
  computes: see :meth:`Prewarm._give_way`. A cell that waits (for I/O, a sleep, a lock)
  does not need the interpreter, so the step goes on meanwhile; that is also what keeps a
  cell that needs a module the paused step is halfway through importing from waiting for
  good.
* Whoever needs the engine (the first ``%%agent`` cell, an ``%agent`` line) asks for it
  with :meth:`Prewarm.ready` or :meth:`Prewarm.wait`: the thread then no longer stops for
  cells, and the caller waits only for the steps not done yet.

A step that fails is skipped, and a wait gives up after :data:`MAX_WAIT_S` (a step that
hangs must not hang every cell): the cell then imports what it needs itself and shows the
real error, if any, there.

A project whose ``.mcp.json`` configures servers has them started by a step right after the
engine's: the MCP client is imported on this thread (off the kernel's event loop), the
servers are spawned or connected on the loop, and the first session there takes them, so
their tools are in the model's first request (a turn waits a few seconds at most for one
still starting). A project the person has not trusted starts none until they trust it.

With an API key set, the last step opens the connection to the API the first turn will
send on (a TLS handshake, tens of milliseconds or more away from the API), on the kernel's
event loop where turns run; ``CODINGCODE_PRECONNECT=0`` leaves it to the first turn.

Some steps load what only a later moment needs (the command parser, for the first command
judged): those come last, nobody waits for them, and they run only while no cell runs at
all, a wanted engine or not, so that they never compete with a first ``%%agent`` cell. If a
cell needs one first, it imports it itself. The engine's own work of that kind (a running MCP
server's result validation) joins them through :mod:`codingcode_jupyter.engine.later`.
"""

from __future__ import annotations

import _imp
import asyncio
import builtins
import concurrent.futures
import gc
import importlib
import os
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

__all__ = ["Prewarm", "default_steps", "later_steps", "start", "stop_pausing", "current", "ready", "wait", "WAITING_TEXT", "ENV_VAR", "PRECONNECT_ENV_VAR"]

# Set to 0 to keep the engine for the first %%agent cell (as before prewarming existed).
ENV_VAR = "CODINGCODE_PREWARM"
# Set to 0 to let the first turn open its own connection to the API.
PRECONNECT_ENV_VAR = "CODINGCODE_PRECONNECT"
WAITING_TEXT = "⏳ Loading the agent (it started loading with %load_ext)…"
# A wait shorter than this is not worth a line in the cell.
QUIET_WAIT_S = 0.1
# The thread takes its next step once no cell ran for this long. Queued cells (Run All)
# follow each other within milliseconds, so it does not slip in between them.
IDLE_S = 0.1
# The longest anyone waits for the thread; the steps take seconds, this is for one that hangs.
MAX_WAIT_S = 60.0
# Inside a step, whether a cell computes is looked at no more often than this, by watching
# the CPU time of the cell's thread for SAMPLE_S: the step waits while the cell used at
# least COMPUTING_SHARE of it. A waiting cell uses none; a computing one on a loaded machine
# gets only its share of a core (a quarter on two cores shared by eight processes), so the
# bar is low. (A thread's CPU clock is Linux's; elsewhere a step is never paused.)
CHECK_EVERY_S = 0.05
SAMPLE_S = 0.01
COMPUTING_SHARE = 0.1
_THREAD_CLOCK = getattr(time, "pthread_getcpuclockid", None)

Step = tuple[str, Callable[[], Any]]


def _importer(name: str) -> Step:
    return name, lambda: importlib.import_module(name)


def _engine_warm_up(project: str | None) -> Step:
    def run() -> None:
        from ..engine.runtime import warm_up
        from .kernel.names import declare_kernel_tools

        declare_kernel_tools()  # before warm_up reads the project's settings (their rules may name them)
        warm_up(project)
        loading = current()
        if loading is not None:
            from ..engine.later import set_taker

            # What the engine would warm on a thread of its own (a server's result validation) waits for
            # the later steps instead of slowing the loading a first cell waits for.
            set_taker(loading.add_later)

    return "engine warm-up", run


def _sdk_import() -> None:
    from ..engine.models.clients import has_api_key

    if has_api_key():  # without a key the session runs the demo model and never loads the SDK
        importlib.import_module("anthropic")


def _sdk_warm_up() -> None:
    from ..engine.models.clients import has_api_key

    if has_api_key():  # without a key the session runs the demo model and never loads the SDK
        from ..engine.models.anthropic import warm_up

        warm_up()


def _off(name: str) -> bool:
    return os.environ.get(name, "1").strip().lower() in ("0", "false", "no", "off")


def _preconnect(loop: asyncio.AbstractEventLoop | None) -> Step:
    def run() -> None:
        from ..engine.models.clients import has_api_key

        # Without a loop (a terminal runs each turn in a loop of its own) a connection would not outlive it.
        if loop is None or loop.is_closed() or not has_api_key() or _off(PRECONNECT_ENV_VAR):
            return
        from ..engine.models.clients import preconnect

        # Not awaited: the connection opens whenever the loop is free, a turn that comes first opens its own.
        asyncio.run_coroutine_threadsafe(preconnect(), loop)

    return "API connection", run


def _mcp_servers(project: str | None, loop: asyncio.AbstractEventLoop | None) -> Step:
    def run() -> None:
        # Without a loop (a terminal runs each turn in a loop of its own) the servers would not outlive it.
        if project is None or loop is None or loop.is_closed():
            return
        from ..engine.runtime import start_servers_early

        start_servers_early(project, loop)

    return "MCP servers", run


def _view_warm_up() -> None:
    from .view import render_markdown

    render_markdown("*warm* `up`")  # the Markdown parser compiles its patterns on first use


def _tables_checked() -> None:
    from ..engine.approval import builtin_rules, readonly_commands

    builtin_rules.examples_checked()
    readonly_commands.examples_checked()


def later_steps() -> list[Step]:
    """What the first cell does not need before its first answer (see the module docstring)."""
    return [
        # The shell parser builds its parse tables at import; the rule tables' examples are
        # checked with it. The first command judged needs both, a session's opening neither.
        _importer("bashlex"),
        ("approval tables' examples", _tables_checked),
    ]


def default_steps(project: str | None = None, session_warm_up: Callable[[], Any] | None = None,
                  loop: asyncio.AbstractEventLoop | None = None) -> list[Step]:
    """What the first ``%%agent`` cell (in ``project``, most likely) needs, in the order it needs it.

    ``session_warm_up`` is the shell's own part (its kernel tools joining the process's tools);
    ``loop`` the event loop the cells' turns run on.
    """
    return [
        # The engine in three steps rather than one, so a cell that starts meanwhile shares
        # the interpreter for less (0.1 to 0.2 s each).
        _importer("codingcode_jupyter.engine.project_settings"),
        _importer("codingcode_jupyter.engine.approval.pipeline"),
        _importer("codingcode_jupyter.engine.runtime"),
        _engine_warm_up(project),
        # Early: a server takes a second or more to start, in its own process, while the rest loads.
        _mcp_servers(project, loop),
        *([("kernel tools", session_warm_up)] if session_warm_up is not None else []),
        ("codingcode_jupyter.notebook.view", _view_warm_up),
        _importer("codingcode_jupyter.notebook.references"),
        _importer("codingcode_jupyter.notebook.login"),
        ("anthropic SDK", _sdk_import),
        ("anthropic SDK warm-up", _sdk_warm_up),
        _preconnect(loop),
    ]



def _settle(waiter: "asyncio.Future[None]") -> None:
    if not waiter.done():
        waiter.set_result(None)


@dataclass
class Prewarm:
    """The background loading of ``steps``; see the module docstring."""

    steps: list[Step]
    # Run after ``steps``, only while no cell runs; nobody waits for them.
    later: list[Step] = field(default_factory=list)
    # Seconds each finished step took, and the error of each failed one, by label.
    timings: dict[str, float] = field(default_factory=dict)
    errors: dict[str, BaseException] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._lock = threading.Condition()
        # The threads of the cells running now (a thread once per cell it runs).
        self._cell_threads: list[int] = []
        # The later steps run (they step aside for any cell, a wanted engine or not).
        self._later = False
        self._next_check = 0.0
        # The collector was turned off by a step (see _collector_paused) and is still off.
        self._paused_collector = False
        # When the kernel last stopped running a cell (monotonic), and since when it was quiet.
        self._quiet_since = time.monotonic()
        self._wanted = False
        self._done: concurrent.futures.Future[None] = concurrent.futures.Future()
        self._thread = threading.Thread(target=self._run, name="codingcode-prewarm", daemon=True)
        self._shell: Any = None
        self.started = 0.0
        self.finished = 0.0
        # Every step, the later ones too, has run (the hooks on the shell are no longer needed).
        self.all_done = False

    def start(self) -> "Prewarm":
        self.started = time.perf_counter()
        self._quiet_since = time.monotonic()
        self._thread.start()
        return self

    @property
    def done(self) -> bool:
        return self._done.done()

    # -- the thread --------------------------------------------------------------------

    def _run(self) -> None:
        restore = self._hook_imports()
        try:
            try:
                for label, step in self.steps:
                    self._wait_turn()
                    self._step(label, step)
            finally:
                self.finished = time.perf_counter()
                self._done.set_result(None)  # never cancelled: waiters get futures of their own
            self._later = True
            try:
                index = 0
                while True:
                    with self._lock:  # what add_later appends meanwhile runs too
                        if index >= len(self.later):
                            self.all_done = True
                            break
                        label, step = self.later[index]
                    index += 1
                    self._wait_turn(wanted_or_not=True)
                    self._step(label, step)
            finally:
                self.all_done = True
        finally:
            restore()

    def add_later(self, label: str, step: Callable[[], Any]) -> bool:
        """Run ``step`` among the later steps (while no cell runs); False when those are over."""
        with self._lock:
            if self.all_done:
                return False
            self.later.append((label, step))
            return True

    def _step(self, label: str, step: Callable[[], Any]) -> None:
        began = time.perf_counter()
        self._collector_paused()
        try:
            step()
        except Exception as error:  # the cell that needs it will raise it properly
            self.errors[label] = error
        finally:
            # What a step loaded (modules, classes, schemas: some 200,000 objects in all)
            # lives as long as the process. Left to the collector, each full pass over it
            # costs 0.1 to 0.25 s, several during the loading and the next one in the first
            # or second turn; frozen, no pass looks at it again.
            gc.freeze()
            self._collector_resumed()
        self.timings[label] = time.perf_counter() - began

    # The collector is off during a step that nobody's cell runs beside (the person is
    # thinking, or the only cell waits for the loading): the passes it would make over the
    # objects the step creates cost the step 10 to 15 % (the SDK's import: 0.3 s of 2.5 s
    # on a slow machine), and what a step leaves as garbage is small (the SDK's import:
    # about 700 objects, 0.4 MB), frozen with the rest. A cell that starts meanwhile turns
    # it back on, so a person's own garbage is collected as always.

    def _collector_paused(self) -> None:
        with self._lock:
            if (not self._cell_threads or self._wanted) and gc.isenabled():
                gc.disable()
                self._paused_collector = True

    def _collector_resumed(self) -> None:
        with self._lock:
            if self._paused_collector:
                self._paused_collector = False
                gc.enable()

    def _wait_turn(self, wanted_or_not: bool = False) -> None:
        """Until nobody's cell runs and none ran for :data:`IDLE_S`, or someone wants the engine
        (unless ``wanted_or_not``)."""
        with self._lock:
            while wanted_or_not or not self._wanted:
                if not self._cell_threads:
                    quiet = time.monotonic() - self._quiet_since
                    if quiet >= IDLE_S:
                        return
                    self._lock.wait(IDLE_S - quiet)
                else:
                    self._lock.wait()

    # -- stepping aside inside a step ------------------------------------------------------

    def _hook_imports(self) -> Callable[[], None]:
        """Have the thread's every import statement look first whether to give way (see
        :meth:`_give_way`) for as long as the steps run; returns what undoes it."""
        if _THREAD_CLOCK is None:
            return lambda: None
        original = builtins.__import__
        me = threading.get_ident()

        def hooked(name: str, globals: Any = None, locals: Any = None, fromlist: Any = (), level: int = 0) -> Any:
            if self._cell_threads and threading.get_ident() == me:
                self._give_way()
            return original(name, globals, locals, fromlist, level)

        # A pass-through: whose import it is, the import guard reads from the frames around it.
        from ..import_guard import pass_through

        pass_through(hooked)
        builtins.__import__ = hooked

        def restore() -> None:
            if builtins.__import__ is hooked:  # unless someone hooked it after us
                builtins.__import__ = original

        return restore

    def _give_way(self) -> None:
        """Wait while a person's cell computes, in the middle of a step, at an import statement.

        No import lock of this statement is taken yet; the thread holds the locks of the
        modules it is halfway through, and a cell that imports one of those waits for it: that
        cell no longer computes, so the step goes on. Never inside an import finder (the global
        import lock would make every other thread's import wait), nor for a wanted engine
        (except in the later steps).
        """
        if time.monotonic() < self._next_check or _imp.lock_held():
            return
        with self._lock:
            while self._cell_threads and (self._later or not self._wanted):
                threads = list(self._cell_threads)
                before = _cpu_times(threads)
                self._lock.wait(SAMPLE_S)
                after = _cpu_times(threads)
                if sum(after[t] - before[t] for t in after if t in before) < SAMPLE_S * COMPUTING_SHARE:
                    break
        self._next_check = time.monotonic() + CHECK_EVERY_S

    # -- the person's cells (IPython events, on the main thread) --------------------------

    def cell_started(self, *_: Any) -> None:
        with self._lock:
            self._cell_threads.append(threading.get_ident())
            if self._paused_collector:
                self._paused_collector = False
                gc.enable()

    def cell_finished(self, *_: Any) -> None:
        with self._lock:
            # IPython skips pre_run_cell for a cell it cannot transform, not post_run_cell.
            me = threading.get_ident()
            if me in self._cell_threads:
                self._cell_threads.remove(me)
            self._quiet_since = time.monotonic()
            self._lock.notify_all()
        if self.all_done and self._shell is not None:
            # On the main thread, where the hooks are called (IPython iterates over a copy).
            self.detach(self._shell)
            self._shell = None

    def _want(self) -> None:
        with self._lock:
            self._wanted = True
            self._lock.notify_all()

    # -- waiting for it ----------------------------------------------------------------

    def wait(self, timeout: float | None = MAX_WAIT_S) -> bool:
        """Block until every step ran (True), or ``timeout`` passed (False)."""
        if self.done or threading.current_thread() is self._thread:
            return True  # a step itself asks: what it needs is what it is doing
        self._want()
        try:
            self._done.result(timeout)
        except concurrent.futures.TimeoutError:
            return False
        return True

    async def ready(self, on_wait: Callable[[], Callable[[], None]] | None = None) -> None:
        """Wait without blocking the event loop until every step ran (at most :data:`MAX_WAIT_S`).

        ``on_wait`` is called if the wait lasts longer than :data:`QUIET_WAIT_S`; it shows
        that the cell waits and returns what to call when the wait is over.
        """
        if self.done:
            return
        # Here, not at the top: `%load_ext` imports this module and must not import the engine.
        from ..engine.deadline import within

        self._want()
        loop = asyncio.get_running_loop()
        waiter = loop.create_future()

        def wake(_: Any) -> None:
            try:
                loop.call_soon_threadsafe(_settle, waiter)
            except RuntimeError:
                pass  # that loop is closed: nobody waits any more

        self._done.add_done_callback(wake)
        try:
            await within(asyncio.shield(waiter), QUIET_WAIT_S)
            return
        except asyncio.TimeoutError:
            pass
        finish = on_wait() if on_wait is not None else None
        try:
            await within(waiter, MAX_WAIT_S - QUIET_WAIT_S)
        except asyncio.TimeoutError:
            pass
        finally:
            if finish is not None:
                finish()

    def attach(self, shell: Any) -> None:
        """Stop between steps while the person's cells run on ``shell`` (until every step ran)."""
        if self.all_done:
            return
        self._shell = shell
        for event, callback in self._hooks():
            if callback not in shell.events.callbacks[event]:
                shell.events.register(event, callback)

    def detach(self, shell: Any) -> None:
        for event, callback in self._hooks():
            if callback in shell.events.callbacks[event]:
                shell.events.unregister(event, callback)

    def _hooks(self) -> list[tuple[str, Callable[..., None]]]:
        return [("pre_run_cell", self.cell_started), ("post_run_cell", self.cell_finished)]


def _cpu_times(threads: list[int]) -> dict[int, float]:
    """CPU seconds each of ``threads`` used so far (those still alive)."""
    times: dict[int, float] = {}
    for ident in threads:
        try:
            times[ident] = time.clock_gettime(_THREAD_CLOCK(ident))  # type: ignore[misc]
        except (OSError, OverflowError):
            pass  # the thread ended
    return times


# -- the process's prewarm --------------------------------------------------------------

_CURRENT: Prewarm | None = None


def start(shell: Any, steps: list[Step] | None = None, *, project: str | None = None,
          session_warm_up: Callable[[], Any] | None = None) -> Prewarm | None:
    """Start loading the engine for ``shell`` (once per process); None when turned off."""
    global _CURRENT
    if _off(ENV_VAR):
        return None
    if _CURRENT is None:
        try:
            loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()  # a kernel's, running the cell
        except RuntimeError:
            loop = None
        _CURRENT = (Prewarm(default_steps(project, session_warm_up, loop), later_steps()) if steps is None
                    else Prewarm(steps))
        _CURRENT.attach(shell)
        _CURRENT.start()
    else:
        _CURRENT.attach(shell)  # loaded again after %unload_ext
    return _CURRENT


def stop_pausing(shell: Any) -> None:
    """Leave ``shell``'s cells alone (``%unload_ext``): the thread, if still running, no longer waits for them."""
    if _CURRENT is not None:
        _CURRENT.detach(shell)
        _CURRENT.cell_finished()


def current() -> Prewarm | None:
    return _CURRENT


def wait(timeout: float | None = MAX_WAIT_S) -> bool:
    """Block until the process's prewarm (if any) is done; see :meth:`Prewarm.wait`."""
    prewarm = _CURRENT
    return True if prewarm is None else prewarm.wait(timeout)


async def ready(*, show: bool = True) -> Any:
    """Wait for the process's prewarm (if any), with a line in the cell while it lasts (``show``).

    Returns the line's display handle (None when nothing was shown): the cell's own output
    takes its place, so the saved notebook keeps no empty output. The interrupt button stops
    the wait (the thread goes on) as it stops a turn.
    """
    prewarm = _CURRENT
    if prewarm is None or prewarm.done:
        return None
    from . import async_cell
    from .failures import AgentInterrupted

    shown: list[Any] = []

    def show_line() -> Callable[[], None]:
        from IPython.display import display

        handle = display({"text/plain": WAITING_TEXT}, raw=True, display_id=True)
        if handle is not None:
            shown.append(handle)

        def clear() -> None:
            if handle is not None:
                handle.update({"text/plain": ""}, raw=True)

        return clear

    waiting = asyncio.ensure_future(prewarm.ready(show_line if show else None))
    try:
        async with async_cell.cancel_on_interrupt(waiting):
            await waiting
    except asyncio.CancelledError:
        if not waiting.cancelled():
            raise
        raise AgentInterrupted() from None
    return shown[0] if shown else None
