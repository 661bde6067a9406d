"""The kernel the ACP process drives, through jupyter_client: one it starts in the project, or one
that runs already (``--existing CONNECTION_FILE``: a notebook's, whose variables the editor then shares).

The link runs the set-up cell (:data:`.wire.SETUP_CODE`), opens the comm, and from then on
sends requests on it (each answered by a reply with its id), turns as cells, and hands every
other message the kernel sends on the comm (events, questions, a turn's end) to ``on_message``.
A kernel that dies fails what waits on it and says so to ``on_message`` (``{"type": "dead"}``).
Nothing it starts writes to this process's stdout, which is the editor's channel.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import os
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any, Callable

from ..engine.deadline import within
from .wire import PROTOCOL, SETUP_CODE, TARGET

__all__ = ["KernelError", "KernelLink", "READY_WAIT", "HELLO_WAIT"]

log = logging.getLogger(__name__)

# A kernel's start, and the set-up cell's first import of the package, take seconds on a slow machine.
READY_WAIT = 120.0
HELLO_WAIT = 60.0
# How often the link checks that the kernel is alive.
ALIVE_EVERY = 1.0


class KernelError(Exception):
    """The kernel could not do what was asked (its one-line reason), or is gone."""


class KernelLink:
    """One kernel and the comm to its ACP bridge."""

    def __init__(self, on_message: Callable[[dict[str, Any]], None], *, existing: str | None = None,
                 kernel_name: str | None = None) -> None:
        self.on_message = on_message
        self.existing = existing
        self.kernel_name = kernel_name
        self.km: Any = None
        self.kc: Any = None
        self.comm_id = uuid.uuid4().hex
        self.dead: str | None = None
        self._ids = itertools.count(1)
        self._replies: dict[str, asyncio.Future[Any]] = {}
        self._executions: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._hello: asyncio.Future[None] | None = None
        self._started = False
        self._lock = asyncio.Lock()
        self._tasks: list[asyncio.Task[None]] = []
        self._spec_dir: tempfile.TemporaryDirectory[str] | None = None

    @property
    def started(self) -> bool:
        return self._started

    async def ensure(self, cwd: Path) -> None:
        """Start (or attach to) the kernel once; ``cwd`` is where a kernel started here runs."""
        async with self._lock:
            if self.dead is not None:
                raise KernelError(self.dead)
            if not self._started:
                await self._connect(cwd)
                self._started = True

    async def _connect(self, cwd: Path) -> None:
        from jupyter_client.asynchronous.client import AsyncKernelClient

        if self.existing:
            self.kc = AsyncKernelClient()
            self.kc.load_connection_file(self.existing)
        else:
            self.km = self._manager()
            # The kernel's own output goes where this process's log goes, never to stdout (the editor's channel).
            await self.km.start_kernel(cwd=str(cwd), env=dict(os.environ), stdout=_log_fd(), stderr=_log_fd())
            self.kc = self.km.client()
        self.kc.start_channels()
        await self.kc.wait_for_ready(timeout=READY_WAIT)
        loop = asyncio.get_running_loop()
        self._hello = loop.create_future()
        self._tasks = [asyncio.ensure_future(reader()) for reader in (self._read_iopub, self._read_shell, self._watch)]
        reply = await self.execute(SETUP_CODE)
        if reply.get("status") != "ok":
            raise KernelError(f"the kernel could not load codingcode_jupyter: {reply.get('ename')}: {reply.get('evalue')}")
        self._send("comm_open", {"comm_id": self.comm_id, "target_name": TARGET, "data": {"protocol": PROTOCOL}})
        await within(asyncio.shield(self._hello), HELLO_WAIT)

    def _manager(self) -> Any:
        """A kernel manager: the named kernelspec, else this Python's ipykernel (which has this package)."""
        from jupyter_client.kernelspec import KernelSpecManager
        from jupyter_client.manager import AsyncKernelManager

        if self.kernel_name:
            return AsyncKernelManager(kernel_name=self.kernel_name)
        self._spec_dir = tempfile.TemporaryDirectory(prefix="codingcode-acp-")
        spec = Path(self._spec_dir.name) / "codingcode-acp"
        spec.mkdir()
        (spec / "kernel.json").write_text(json.dumps({
            "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
            "display_name": "codingcode (ACP)", "language": "python"}))
        return AsyncKernelManager(kernel_name="codingcode-acp",
                                  kernel_spec_manager=KernelSpecManager(kernel_dirs=[self._spec_dir.name]))

    # -- sending ---------------------------------------------------------------------------

    def _send(self, msg_type: str, content: dict[str, Any], channel: str = "shell") -> str:
        message = self.kc.session.msg(msg_type, content)
        getattr(self.kc, f"{channel}_channel").send(message)
        return str(message["header"]["msg_id"])

    async def request(self, op: str, **fields: Any) -> Any:
        """Send ``op`` to the bridge and return its result (KernelError with the kernel's reason)."""
        if self.dead is not None:
            raise KernelError(self.dead)
        request_id = f"r{next(self._ids)}"
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._replies[request_id] = future
        try:
            self._send("comm_msg", {"comm_id": self.comm_id, "data": {"op": op, "id": request_id, **fields}})
            return await future
        finally:
            self._replies.pop(request_id, None)

    def notify(self, op: str, **fields: Any) -> None:
        """Send ``op`` with no reply awaited (an answer, a cancel)."""
        if self._started and self.dead is None:
            self._send("comm_msg", {"comm_id": self.comm_id, "data": {"op": op, **fields}})

    async def execute(self, code: str) -> dict[str, Any]:
        """Run ``code`` as a cell (not kept in the kernel's history) and return its execute_reply's content."""
        if self.dead is not None:
            raise KernelError(self.dead)
        content = {"code": code, "silent": False, "store_history": False, "user_expressions": {},
                   "allow_stdin": False, "stop_on_error": False}
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        message = self.kc.session.msg("execute_request", content)
        self._executions[str(message["header"]["msg_id"])] = future
        self.kc.shell_channel.send(message)
        return await future

    async def interrupt(self) -> None:
        """The kernel's interrupt, as its interrupt button sends it."""
        if self.km is not None:
            await self.km.interrupt_kernel()
        elif self._started:
            self._send("interrupt_request", {}, channel="control")

    # -- receiving -------------------------------------------------------------------------

    async def _read_iopub(self) -> None:
        while True:
            message = await self.kc.get_iopub_msg()
            content = message.get("content") or {}
            if content.get("comm_id") != self.comm_id:
                continue
            if message["msg_type"] == "comm_msg":
                self._take(content.get("data") or {})
            elif message["msg_type"] == "comm_close":
                self._fail("the kernel closed the ACP connection (was the extension unloaded?)")

    def _take(self, data: dict[str, Any]) -> None:
        kind = data.get("type")
        if kind == "hello":
            if self._hello is not None and not self._hello.done():
                self._hello.set_result(None)
        elif kind == "reply":
            future = self._replies.get(str(data.get("id")))
            if future is not None and not future.done():
                if data.get("ok"):
                    future.set_result(data.get("result"))
                else:
                    future.set_exception(KernelError(str(data.get("error") or "the kernel could not do it")))
        else:
            self.on_message(data)

    async def _read_shell(self) -> None:
        while True:
            message = await self.kc.get_shell_msg()
            future = self._executions.pop(str((message.get("parent_header") or {}).get("msg_id")), None)
            if future is not None and not future.done():
                future.set_result(message.get("content") or {})

    async def _watch(self) -> None:
        while True:
            await asyncio.sleep(ALIVE_EVERY)
            if not await self.kc.is_alive():
                self._fail("the kernel died" if self.km is not None else "the kernel stopped answering")
                return

    def _fail(self, why: str) -> None:
        """The kernel is gone: everything waiting on it fails, and the agent is told."""
        if self.dead is not None:
            return
        self.dead = why
        for future in [*self._replies.values(), *self._executions.values(), *([self._hello] if self._hello else [])]:
            if not future.done():
                future.set_exception(KernelError(why))
        self.on_message({"type": "dead", "why": why})

    async def close(self) -> None:
        """Close the comm; shut down a kernel started here (one attached to keeps running)."""
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self.kc is not None:
            if self.dead is None and self._started:
                self._send("comm_close", {"comm_id": self.comm_id, "data": {}})
            self.kc.stop_channels()
        if self.km is not None and self.dead is None:
            await self.km.shutdown_kernel()
        if self._spec_dir is not None:
            self._spec_dir.cleanup()


def _log_fd() -> int:
    """Where a started kernel's own output goes: this process's stderr (the editor's log for the agent)."""
    try:
        return sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):
        import subprocess

        return subprocess.DEVNULL
