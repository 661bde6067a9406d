"""The network allowlist: a host-side HTTP proxy that only lets listed domains through.

A sandboxed command has no network of its own (``--unshare-net``), and may not create Unix
sockets (the seccomp filter), so it cannot dial the proxy. Instead, when
``sandbox.network.allowedDomains`` is set, the launcher connects one channel to
:class:`AllowlistProxy`'s Unix socket on the host and hands it into the sandbox; inside, a
tiny forwarder (:data:`FORWARDER_SOURCE`) listens on ``127.0.0.1:PORT`` so the usual
``HTTP_PROXY`` / ``HTTPS_PROXY`` variables work for curl, pip, git and Python, and passes
each accepted connection itself over the channel (``SCM_RIGHTS``). The proxy then talks to
the client directly; nothing is relayed inside.

The proxy understands ``CONNECT host:port`` (HTTPS and any TLS) and plain-HTTP requests in
absolute form (``GET http://host/path``). Anything else, and any host not on the list, is
refused with a 4xx answer that says why. The proxy runs its own event loop in a daemon
thread so it keeps serving while the kernel's loop is busy with a cell.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import os
import shutil
import socket
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Awaitable, Callable, Sequence
from urllib.parse import urlsplit

from ..deadline import within
from ..domains import domain_allowed, normalise_host, validate_domain_patterns

__all__ = [
    "AllowlistProxy",
    "ProxyDecision",
    "FORWARDER_SOURCE",
    "domain_allowed",
    "validate_domain_patterns",
]

_HEAD_LIMIT = 64 * 1024
_HEAD_TIMEOUT = 30.0
_CONNECT_TIMEOUT = 15.0
_FDS_PER_MESSAGE = 16


@dataclass(frozen=True)
class ProxyDecision:
    """One request the proxy saw: where it wanted to go and whether it was let through."""

    method: str
    host: str
    port: int
    allowed: bool


class _Refused(Exception):
    def __init__(self, status: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.status, self.reason, self.message = status, reason, message


def _split_host_port(target: str, default_port: int) -> tuple[str, int]:
    if target.startswith("["):
        host, _, rest = target[1:].partition("]")
        port_text = rest[1:] if rest.startswith(":") else ""
    elif target.count(":") == 1:
        host, _, port_text = target.partition(":")
    else:
        host, port_text = target, ""
    try:
        port = int(port_text) if port_text else default_port
    except ValueError:
        raise _Refused(400, "Bad Request", f"bad port in '{target}'") from None
    if not host or not 0 < port < 65536:
        raise _Refused(400, "Bad Request", f"bad target '{target}'")
    return host, port


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while chunk := await reader.read(65536):
            writer.write(chunk)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        try:
            if writer.can_write_eof():
                writer.write_eof()
        except (OSError, RuntimeError):
            pass


def _readable(loop: asyncio.AbstractEventLoop, sock: socket.socket) -> asyncio.Future[None]:
    """Done when ``sock`` has something to read (asyncio has no awaitable recvmsg)."""
    future: asyncio.Future[None] = loop.create_future()

    def ready() -> None:
        if not future.done():
            future.set_result(None)

    loop.add_reader(sock, ready)
    future.add_done_callback(lambda _: loop.remove_reader(sock))
    return future


class AllowlistProxy:
    """An HTTP CONNECT / plain-HTTP proxy that only reaches listed domains.

    Its Unix socket carries no HTTP: each connection is a channel over which a sandbox sends
    the client connections to serve, as file descriptors.
    """

    socket_name = "proxy.sock"

    def __init__(
        self, allowed_domains: Sequence[str], on_decision: Callable[[ProxyDecision], None] | None = None,
        denied_domains: Sequence[str] = (),
    ) -> None:
        self.allowed_domains = list(allowed_domains)
        self.denied_domains = list(denied_domains)
        # Told of every allow/refuse (the session writes them to the audit log).
        self.on_decision = on_decision
        self.decisions: collections.deque[ProxyDecision] = collections.deque(maxlen=500)
        self._dir: Path | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._listener: socket.socket | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def socket_dir(self) -> Path:
        """The private directory (mode 0700) holding the socket."""
        if self._dir is None:
            raise RuntimeError("the proxy is not started")
        return self._dir

    @property
    def socket_path(self) -> Path:
        """Where a sandbox's channel connects (the launcher does, on the host)."""
        return self.socket_dir / self.socket_name

    @property
    def running(self) -> bool:
        return self._listener is not None

    def start(self) -> None:
        """Listen on a fresh private socket, served from a daemon thread's event loop."""
        if self._listener is not None:
            return
        self._dir = Path(tempfile.mkdtemp(prefix="codingcode-proxy-", dir=_short_temp_dir(self.socket_name)))
        os.chmod(self._dir, 0o700)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(str(self.socket_path))
        listener.listen(64)
        listener.setblocking(False)
        loop = asyncio.new_event_loop()
        self._loop = loop
        self._thread = threading.Thread(target=loop.run_forever, name="codingcode-sandbox-proxy", daemon=True)
        self._thread.start()
        self._listener = listener
        asyncio.run_coroutine_threadsafe(self._track(self._accept_channels(listener)), loop)

    def close(self) -> None:
        """Stop serving, drop open tunnels, remove the socket directory (idempotent)."""
        loop, thread = self._loop, self._thread
        if loop is not None and not loop.is_closed():
            if loop.is_running():
                try:
                    asyncio.run_coroutine_threadsafe(self._shutdown(), loop).result(timeout=5)
                except Exception:
                    pass
                loop.call_soon_threadsafe(loop.stop)
            if thread is not None:
                thread.join(timeout=5)
            if not loop.is_running():
                loop.close()
        self._loop = self._thread = None
        if self._listener is not None:
            self._listener.close()
            self._listener = None
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    async def aclose(self) -> None:
        """:meth:`close` without blocking the caller's event loop."""
        await asyncio.to_thread(self.close)

    async def _shutdown(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _track(self, work: Awaitable[None]) -> None:
        # Every task is known, so closing the proxy can cancel open tunnels.
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        try:
            await work
        except (ConnectionError, OSError, asyncio.CancelledError):
            pass
        finally:
            if task is not None:
                self._tasks.discard(task)

    async def _accept_channels(self, listener: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        while True:
            channel, _ = await loop.sock_accept(listener)
            loop.create_task(self._track(self._receive(channel)))

    async def _receive(self, channel: socket.socket) -> None:
        """Serve every connection a sandbox sends over ``channel`` until it hangs up."""
        loop = asyncio.get_running_loop()
        with channel:
            channel.setblocking(False)
            while True:
                await _readable(loop, channel)
                try:
                    data, fds, _flags, _address = socket.recv_fds(
                        channel, 64, _FDS_PER_MESSAGE, socket.MSG_CMSG_CLOEXEC
                    )
                except BlockingIOError:
                    continue
                if not data and not fds:
                    return
                for fd in fds:
                    loop.create_task(self._track(self._serve(fd)))

    async def _serve(self, fd: int) -> None:
        try:
            client = socket.socket(fileno=fd)
        except OSError:  # not a socket: whatever it is, it is not served
            os.close(fd)
            return
        if client.type != socket.SOCK_STREAM:
            client.close()
            return
        reader, writer = await asyncio.open_connection(sock=client, limit=_HEAD_LIMIT)
        await self._handle(reader, writer)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        upstream: asyncio.StreamWriter | None = None
        try:
            try:
                upstream_reader, upstream = await self._open(reader, writer)
            except _Refused as refused:
                body = (f"codingcode sandbox proxy: {refused.message}\n").encode()
                writer.write(
                    f"HTTP/1.1 {refused.status} {refused.reason}\r\nContent-Type: text/plain\r\n"
                    f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body
                )
                await writer.drain()
                return
            await asyncio.gather(_pipe(reader, upstream), _pipe(upstream_reader, writer))
        finally:
            for stream in (upstream, writer):
                if stream is not None:
                    stream.close()

    async def _open(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        try:
            head = await within(reader.readuntil(b"\r\n\r\n"), _HEAD_TIMEOUT)
        except asyncio.LimitOverrunError:
            raise _Refused(431, "Request Header Fields Too Large", "request head too large") from None
        except (asyncio.IncompleteReadError, TimeoutError):
            raise _Refused(400, "Bad Request", "incomplete request") from None
        lines = head.decode("latin-1").split("\r\n")
        parts = lines[0].split(" ")
        if len(parts) != 3 or not parts[2].startswith("HTTP/"):
            raise _Refused(400, "Bad Request", f"malformed request line {lines[0][:100]!r}")
        method, target, version = parts
        if method.upper() == "CONNECT":
            host, port = _split_host_port(target, 443)
            request = b""
        else:
            url = urlsplit(target)
            if url.scheme != "http" or not url.netloc:
                raise _Refused(400, "Bad Request", "only CONNECT and absolute http:// URLs go through this proxy")
            host, port = _split_host_port(url.netloc.rpartition("@")[2], 80)
            path = (url.path or "/") + (f"?{url.query}" if url.query else "")
            kept = [
                line
                for line in lines[1:]
                if line
                and line.split(":", 1)[0].strip().lower()
                not in {"proxy-connection", "proxy-authorization", "connection", "keep-alive"}
            ]
            # One request per connection: routing is decided per request line, so a kept-alive
            # connection must not carry a second request to another host.
            request = ("\r\n".join([f"{method} {path} {version}", *kept, "Connection: close"]) + "\r\n\r\n").encode(
                "latin-1"
            )
        host = normalise_host(host)
        denied = bool(self.denied_domains) and domain_allowed(host, self.denied_domains)
        allowed = domain_allowed(host, self.allowed_domains) and not denied
        decision = ProxyDecision(method.upper(), host, port, allowed)
        self.decisions.append(decision)
        if self.on_decision is not None:
            try:
                self.on_decision(decision)
            except Exception:  # an observer's failure must not open or close the network
                logging.getLogger(__name__).exception("proxy decision observer failed")
        if not allowed:
            why = "denied by a deny rule (sandbox.network.deniedDomains)" if denied else "not in sandbox.network.allowedDomains"
            raise _Refused(403, "Forbidden", f"'{host}' is {why}")
        try:
            upstream_reader, upstream = await within(asyncio.open_connection(host, port), _CONNECT_TIMEOUT)
        except (OSError, TimeoutError) as error:
            raise _Refused(502, "Bad Gateway", f"cannot reach {host}:{port}: {error}") from None
        if request:
            upstream.write(request)
            await upstream.drain()
        else:
            writer.write(b"HTTP/1.1 200 Connection Established\r\n\r\n")
            await writer.drain()
        return upstream_reader, upstream


# Runs inside the sandbox with `python -I -S -c SOURCE PORT CHANNEL_FD ARGV...`: listens on
# 127.0.0.1:PORT (the sandbox's own loopback; "fd:N" is a listener the Landlock launcher
# made before its domain refused binding), then execs ARGV; a forked child passes each
# accepted TCP connection to the host proxy over the channel. It needs no Unix socket of its
# own (the seccomp filter refuses them), and dies with the PID namespace when the command
# ends. Stdlib only, no site import, so it starts in a few milliseconds.
FORWARDER_SOURCE = r"""
import os, select, socket, sys
port, channel, argv = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
if port.startswith("fd:"):
    server = socket.socket(fileno=int(port[3:]))
else:
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", int(port)))
    server.listen(128)
parent = os.getpid()
if os.fork() == 0:
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    channel = socket.socket(fileno=channel)
    # Under Landlock there is no PID namespace to end it: it leaves when the command has.
    while os.getppid() == parent:
        if select.select([server], [], [], 1.0)[0]:
            client, _ = server.accept()
            socket.send_fds(channel, [b"c"], [client.fileno()])
            client.close()
    os._exit(0)
os.close(channel)
server.close()
# Python ignores SIGPIPE and SIGXFSZ and an ignored signal stays so across exec: the defaults back.
import _signal
for signum in (_signal.SIGPIPE, _signal.SIGXFSZ): _signal.signal(signum, _signal.SIG_DFL)
os.execvp(argv[0], argv)
"""


# A socket's path must fit sun_path (108 bytes on Linux); a deep TMPDIR (a test's, a hub's per-user
# one) would not leave room, and the proxy would not start. The launcher connects on the host, so
# any private directory does.
_SUN_PATH_MAX = 107


def _short_temp_dir(socket_name: str) -> str | None:
    """``None`` (the usual temporary directory) when a socket fits under it, else the first of
    the short ones that is writable."""
    room = _SUN_PATH_MAX - len(socket_name) - len("/codingcode-proxy-XXXXXXXX/")
    if len(tempfile.gettempdir()) <= room:
        return None
    for candidate in (os.environ.get("XDG_RUNTIME_DIR", ""), "/tmp", "/var/tmp", "/dev/shm"):
        if candidate and len(candidate) <= room and os.access(candidate, os.W_OK | os.X_OK):
            return candidate
    return None
