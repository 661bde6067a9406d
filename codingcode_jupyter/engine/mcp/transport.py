"""Opening the connection to one server: a child process, streamable HTTP, or legacy SSE.

Two things the SDK's transports do not tell a client, added here:

* when the server went away — :class:`_WatchedRead` calls ``on_closed`` as soon as the
  read stream ends (a stdio server that exited, a closed SSE stream), so the status is
  right before anyone calls a tool;
* which HTTP status a failed request got — the SDK reports any 4xx/5xx as "Server returned
  an error response"; :class:`HttpErrors` keeps the last one so the status can say
  "HTTP 401 Unauthorized" or "HTTP 503 Service Unavailable".
"""

from __future__ import annotations

from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any, AsyncIterator, Callable, Mapping

import anyio
import httpx2
from mcp import StdioServerParameters, stdio_client
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client

from .config import HttpServerConfig, SseServerConfig, StdioServerConfig

__all__ = ["HttpErrors", "open_transport", "stdio_parameters"]


class HttpErrors:
    """The last HTTP error response of one connection (an httpx2 response hook)."""

    def __init__(self) -> None:
        self.last: tuple[int, str, str] | None = None

    async def hook(self, response: httpx2.Response) -> None:
        if response.status_code >= 400:
            self.last = (response.status_code, response.reason_phrase, str(response.request.url))

    def describe(self) -> str | None:
        if self.last is None:
            return None
        status, reason, url = self.last
        return f"HTTP {status} {reason} from {url}"


class _WatchedRead:
    """A read stream that reports its end (EOF or close) once, then behaves as the original."""

    def __init__(self, inner: Any, on_closed: Callable[[], None]) -> None:
        self._inner = inner
        self._on_closed = on_closed
        self._reported = False

    def _closed(self) -> None:
        if not self._reported:
            self._reported = True
            self._on_closed()

    def __getattr__(self, name: str) -> Any:  # last_context and anything else the SDK reads
        return getattr(self._inner, name)

    async def receive(self) -> Any:
        try:
            return await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._closed()
            raise

    def __aiter__(self) -> "_WatchedRead":
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> "_WatchedRead":
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> Any:
        return await self._inner.__aexit__(*exc)


def stdio_parameters(config: StdioServerConfig, project: Path, sandbox: Any, name: str,
                     project_env: Mapping[str, str] | None = None) -> StdioServerParameters:
    """How to start a stdio server: its argv (inside the sandbox when it asks for it) and its
    environment — the project settings' ``env`` under the entry's own ``env``."""
    cwd = project / config.cwd if config.cwd else project
    argv = [config.command, *config.args]
    # The session's sandbox as it is now (its settings may have changed since the session opened).
    sandbox = sandbox() if callable(sandbox) else sandbox
    env = {**(project_env or {}), **(config.env or {})}
    if config.sandbox:
        # Fail closed: a server that asked for the sandbox never starts without it.
        if sandbox is None or not sandbox.active:
            reason = getattr(sandbox, "unavailable_reason", None) or "no sandbox is configured"
            raise RuntimeError(f"server '{name}' asks for the sandbox, which is unavailable: {reason}")
        argv = sandbox.wrap(argv, cwd, pass_env=list(env))
    return StdioServerParameters(command=argv[0], args=argv[1:], env=env or None, cwd=cwd)


def _http_client(headers: dict[str, str] | None, auth: httpx2.Auth | None, errors: HttpErrors,
                 timeout: httpx2.Timeout | None = None) -> httpx2.AsyncClient:
    return httpx2.AsyncClient(
        headers=headers, auth=auth, timeout=timeout or httpx2.Timeout(30.0, read=300.0),
        event_hooks={"response": [errors.hook]},
    )


@asynccontextmanager
async def open_transport(
    config: StdioServerConfig | HttpServerConfig | SseServerConfig,
    *,
    name: str,
    project: Path,
    errlog: Any,
    sandbox: Any = None,
    auth: httpx2.Auth | None = None,
    errors: HttpErrors | None = None,
    on_closed: Callable[[], None] = lambda: None,
    project_env: Mapping[str, str] | None = None,
) -> AsyncIterator[Any]:
    """The (read, write) streams of a connection to the server ``config`` describes."""
    errors = errors or HttpErrors()
    async with AsyncExitStack() as stack:
        if isinstance(config, StdioServerConfig):
            params = stdio_parameters(config, project, sandbox, name, project_env)
            read, write = await stack.enter_async_context(stdio_client(params, errlog=errlog))
        elif isinstance(config, SseServerConfig):

            def factory(headers: dict[str, str] | None = None, timeout: httpx2.Timeout | None = None,
                        auth: httpx2.Auth | None = None) -> httpx2.AsyncClient:
                return _http_client(headers, auth, errors, timeout)

            read, write = await stack.enter_async_context(
                sse_client(config.url, headers=config.headers, auth=auth, httpx_client_factory=factory))
        else:
            http = await stack.enter_async_context(_http_client(config.headers, auth, errors))
            read, write = await stack.enter_async_context(streamable_http_client(config.url, http_client=http))
        yield _WatchedRead(read, on_closed), write
