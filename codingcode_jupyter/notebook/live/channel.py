"""The kernel's end of the channel to the notebook pages that run the codingcode-jupyter extension.

The kernel cannot see the notebook: the page holds it. When the agent needs it, the kernel opens
a short-lived comm on ``PING_TARGET``; every page with the extension answers by opening a comm
of its own on ``TARGET`` with a hello (its client id, the notebook's path, whether it has the
focus), or by saying hello again on the comm it already has. A page without the extension
closes the ping and nothing else happens, so no answer within a moment means there is no
extension (VS Code, Colab, terminal IPython, nbconvert, an older JupyterLab).

Requests carry an id and the chosen page's client id; the page replies with the same id.
Messages arrive on the shell channel while the ``%%agent`` cell awaits (the waits go through
``async_cell.wait_answer``, which pumps them on ipykernel 6), and may arrive on another thread
on ipykernel 7, hence ``call_soon_threadsafe``.
"""

from __future__ import annotations

import asyncio
import itertools
import time
import weakref
from dataclasses import dataclass, field
from typing import Any, Callable

from ...engine.deadline import within
from .. import async_cell

__all__ = ["PING_TARGET", "TARGET", "LiveChannel", "NotebookUnavailable", "Page", "PageError", "channel_for"]

TARGET = "codingcode.notebook"
PING_TARGET = "codingcode.notebook.ping"
PROTOCOL = 1
# How long the first hello may take: a page answers in a few ms on a local server and in a
# round trip through a gateway; nothing answers at all where there is no extension.
HELLO_WAIT = 2.0
# A kernel that found no page does not ping again before this many seconds (each tool call
# of a headless run would otherwise wait HELLO_WAIT).
ABSENT_FOR = 30.0
REPLY_WAIT = 30.0
_GRACE = 0.05


class NotebookUnavailable(Exception):
    """No notebook page with the extension answered: the live notebook cannot be reached."""


class PageError(Exception):
    """The page answered a request with an error."""


@dataclass
class Page:
    """One notebook page that said hello."""

    client: str
    comm: Any
    path: str = ""
    focused: bool = False
    dirty: bool = False
    seen: float = field(default_factory=time.monotonic)


class LiveChannel:
    """The pages of one kernel and the requests sent to them."""

    def __init__(self, shell: Any) -> None:
        self.shell = shell
        self.pages: dict[str, Page] = {}
        # Each cell's source as the agent last read it: an edit made from it names it, so a
        # cell the person changed since is a conflict, not an overwrite.
        self.last_read: dict[str, str] = {}
        self._ids = itertools.count(1)
        self._replies: dict[str, asyncio.Future[Any]] = {}
        self._listeners: dict[str, Callable[[dict[str, Any]], None]] = {}
        self._hello: asyncio.Future[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._absent_until = 0.0
        self._registered = False

    # -- pages ---------------------------------------------------------------------------

    def register(self) -> bool:
        """Listen for pages' comms; False where there is no kernel (terminal IPython)."""
        if self._registered:
            return True
        manager = _comm_manager(self.shell)
        if manager is None:
            return False
        manager.register_target(TARGET, self._on_open)
        self._registered = True
        return True

    def _on_open(self, comm: Any, message: dict[str, Any]) -> None:
        comm.on_msg(lambda msg: self._on_message(comm, msg))
        comm.on_close(lambda msg: self._on_close(comm))
        data = (message.get("content") or {}).get("data") or {}
        self._on_data(comm, data)

    def _on_message(self, comm: Any, message: dict[str, Any]) -> None:
        data = (message.get("content") or {}).get("data") or {}
        self._on_data(comm, data)

    def _on_data(self, comm: Any, data: dict[str, Any]) -> None:
        kind = data.get("type")
        if kind == "hello" and isinstance(data.get("client"), str):
            page = Page(
                client=data["client"], comm=comm, path=str(data.get("path") or ""),
                focused=bool(data.get("focused")), dirty=bool(data.get("dirty")),
            )
            self.pages[page.client] = page
            self._absent_until = 0.0
            self._settle(self._hello, None)
        elif kind == "reply" and isinstance(data.get("id"), str):
            future = self._replies.get(data["id"])
            if data.get("ok"):
                self._settle(future, data.get("result"))
            else:
                self._settle(future, PageError(str(data.get("error") or "the page could not do it")))
        elif kind == "answer" and isinstance(data.get("request"), str):
            listener = self._listeners.get(data["request"])
            if listener is not None and self._loop is not None:
                self._loop.call_soon_threadsafe(listener, data)

    def _on_close(self, comm: Any) -> None:
        for client, page in list(self.pages.items()):
            if page.comm is comm:
                del self.pages[client]
                for _request_id, future in list(self._replies.items()):
                    if getattr(future, "client", None) == client:
                        self._settle(future, NotebookUnavailable("the notebook page closed its connection"))

    def _settle(self, future: "asyncio.Future[Any] | None", value: Any) -> None:
        if future is None or self._loop is None:
            return

        def settle() -> None:
            if future.done():
                return
            if isinstance(value, BaseException):
                future.set_exception(value)
            else:
                future.set_result(value)

        self._loop.call_soon_threadsafe(settle)

    def page(self, wanted: Callable[[Page], bool] | None = None) -> Page | None:
        """The page requests go to: the focused one, else the one heard from last (of those ``wanted``)."""
        pages = [page for page in self.pages.values() if wanted is None or wanted(page)]
        if not pages:
            return None
        return max(pages, key=lambda page: (page.focused, page.seen))

    async def connect(self, wait: float = HELLO_WAIT, wanted: Callable[[Page], bool] | None = None) -> Page:
        """A page to talk to (one ``wanted``, when given), asking the pages to say hello first;
        NotebookUnavailable if none does."""
        self._loop = asyncio.get_running_loop()
        if not self.register():
            raise NotebookUnavailable("there is no Jupyter kernel here (a terminal IPython?)")
        if time.monotonic() < self._absent_until and not self.pages:
            raise NotebookUnavailable(_ABSENT)
        self._hello = self._loop.create_future()
        known = dict(self.pages)
        _ping(self.shell)
        try:
            await within(async_cell.wait_answer(asyncio.shield(self._hello), self.shell), wait)
            # Other pages of the same kernel answer within a moment of the first.
            await asyncio.sleep(_GRACE)
        except asyncio.TimeoutError:
            pass
        # Pages that did not say hello again are gone (reloaded, closed).
        for client, page in known.items():
            if self.pages.get(client) is page:
                self.pages.pop(client, None)
        chosen = self.page(wanted)
        if chosen is None and not self.pages:
            self._absent_until = time.monotonic() + ABSENT_FOR
            raise NotebookUnavailable(_ABSENT)
        if chosen is None:
            raise NotebookUnavailable("no page of that notebook answered (it is not open here)")
        return chosen

    # -- requests ------------------------------------------------------------------------

    async def request(
        self, op: str, *, wait: float | None = REPLY_WAIT,
        on_answer: Callable[[dict[str, Any]], None] | None = None, to: Callable[[Page], bool] | None = None,
        **fields: Any,
    ) -> Any:
        """Send ``op`` to the chosen page (one ``to`` accepts, when given) and return its result (PageError,
        NotebookUnavailable)."""
        page = await self.connect(wanted=to)
        request_id = f"r{next(self._ids)}"
        assert self._loop is not None
        future: asyncio.Future[Any] = self._loop.create_future()
        future.client = page.client  # type: ignore[attr-defined]
        self._replies[request_id] = future
        if on_answer is not None:
            self._listeners[request_id] = on_answer
        try:
            page.comm.send({"type": "request", "id": request_id, "to": page.client, "op": op, **fields})
            waiting = async_cell.wait_answer(future, self.shell)
            return await (within(waiting, wait) if wait is not None else waiting)
        except asyncio.CancelledError:
            # The turn was stopped: the page takes back what it still shows for this request.
            self.cancel(page, request_id, "the agent's turn was stopped")
            raise
        except asyncio.TimeoutError:
            # Nobody answered in time: the page takes back what it still shows, as on a stop.
            self.cancel(page, request_id, f"no answer within {wait:.0f} s")
            raise NotebookUnavailable(f"no answer from the notebook page within {wait:.0f} s") from None
        finally:
            self._replies.pop(request_id, None)
            self._listeners.pop(request_id, None)

    def cancel(self, page: Page, request_id: str, reason: str) -> None:
        try:
            page.comm.send({
                "type": "request", "id": f"{request_id}-cancel", "to": page.client, "op": "cancel",
                "request": request_id, "reason": reason,
            })
        except Exception:
            pass


_ABSENT = (
    "the live notebook cannot be reached: no notebook page with the codingcode-jupyter extension answered "
    "(it works in JupyterLab 4 and Notebook 7; VS Code, Colab, terminal IPython and nbconvert have no such page)"
)


def _comm_manager(shell: Any) -> Any | None:
    kernel = async_cell.kernel_of(shell)
    if kernel is None:
        return None
    manager = getattr(kernel, "comm_manager", None)
    if manager is not None:
        return manager
    try:
        import comm

        return comm.get_comm_manager()
    except Exception:
        return None


def _ping(shell: Any) -> None:
    """Ask every page of this kernel to say hello (a comm opened and left for the page to close)."""
    try:
        import comm

        comm.create_comm(target_name=PING_TARGET, data={"protocol": PROTOCOL})
    except Exception:
        # No comm machinery (a kernel without ipykernel's comms): no page can answer.
        pass


_CHANNELS: "weakref.WeakKeyDictionary[Any, LiveChannel]" = weakref.WeakKeyDictionary()


def channel_for(shell: Any) -> LiveChannel:
    """The one channel of ``shell``'s kernel."""
    channel = _CHANNELS.get(shell)
    if channel is None:
        channel = _CHANNELS[shell] = LiveChannel(shell)
    return channel
