"""Logging in to a remote MCP server that answers 401: OAuth 2.1 with PKCE, through the SDK.

The SDK's :class:`OAuthClientProvider` does discovery, dynamic client registration, the
code exchange and refreshing; this module gives it what it needs from us:

* :class:`FileTokenStorage` keeps the tokens and the client registration in the person's
  own directory (``~/.codingcode/mcp-tokens/NAME.json``, mode 0600), never in the project.
* :class:`LoginFlow` is the person's side: when the SDK has an authorization URL, the flow
  reports it (the front shows a link) and waits for the code, which arrives either at a
  loopback callback listener (browser and kernel on one machine) or through
  :meth:`LoginFlow.complete` with the address the browser ended on (pasted by the person
  when the browser runs elsewhere and the loopback page cannot load).
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable
from urllib.parse import parse_qs, urlparse

from mcp.client.auth import OAuthClientProvider
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

from ..deadline import within
from .common import default_token_dir
from .config import OAuthOptions

__all__ = ["FileTokenStorage", "LoginFlow", "LoginPending", "LoginError", "make_oauth", "default_token_dir"]

CALLBACK_PATH = "/callback"
# How long a login link stays good for: a person may take a while, but not forever.
LOGIN_WAIT = 15 * 60


class LoginError(Exception):
    """The login did not complete (refused, timed out, or the pasted address is not the callback)."""


def _write_private(path: Path, text: str) -> None:
    # Written to a 0600 temporary file and renamed, so the tokens are never readable by others,
    # not even for the moment between creating and chmod-ing a file.
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, path)
    except BaseException:
        if os.path.exists(temp):
            os.unlink(temp)
        raise


class FileTokenStorage:
    """The SDK's TokenStorage, in one JSON file per server, bound to the server's URL.

    A file written for another URL (the same name reused for another server) is ignored,
    so one server's tokens are never sent to another.
    """

    def __init__(self, path: Path, server_url: str) -> None:
        self.path = Path(path)
        self.server_url = server_url

    def _load(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) and data.get("server_url") == self.server_url else {}

    def _save(self, **changes: object) -> None:
        data = self._load() or {"server_url": self.server_url}
        data.update(changes)
        _write_private(self.path, json.dumps(data, indent=2))

    async def get_tokens(self) -> OAuthToken | None:
        raw = self._load().get("tokens")
        return OAuthToken.model_validate(raw) if isinstance(raw, dict) else None

    async def set_tokens(self, tokens: OAuthToken) -> None:
        expires_at = time.time() + tokens.expires_in if tokens.expires_in else None
        self._save(tokens=tokens.model_dump(mode="json", exclude_none=True), expires_at=expires_at)

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        raw = self._load().get("client_info")
        return OAuthClientInformationFull.model_validate(raw) if isinstance(raw, dict) else None

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self._save(client_info=client_info.model_dump(mode="json", exclude_none=True))

    def expires_at(self) -> float | None:
        value = self._load().get("expires_at")
        return float(value) if isinstance(value, (int, float)) else None

    def redirect_uri(self) -> str | None:
        """The callback address the stored registration was made with (reused, so it stays valid)."""
        info = self._load().get("client_info") or {}
        uris = info.get("redirect_uris") if isinstance(info, dict) else None
        return str(uris[0]) if isinstance(uris, list) and uris else None


@dataclass
class LoginPending:
    """A login waiting for the person: the link to open and where the browser comes back to."""

    url: str
    redirect_uri: str
    started: float


class _Provider(OAuthClientProvider):
    """The SDK's provider, told when stored tokens expire.

    The SDK learns an expiry only from a token response it received itself; tokens loaded
    from a previous kernel would look valid forever and an expired one would send the person
    through a full login instead of a refresh.
    """

    def __init__(self, *args: object, storage: FileTokenStorage, **kwargs: object) -> None:
        # The SDK's other parameters pass through untouched (its own annotations check them there).
        super().__init__(*args, storage=storage, **kwargs)  # type: ignore[arg-type, misc]
        self._file = storage

    async def _initialize(self) -> None:
        await super()._initialize()
        expires_at = self._file.expires_at()
        if expires_at is not None and self.context.current_tokens is not None:
            self.context.token_expiry_time = expires_at


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class LoginFlow:
    """The person's half of one server's authorization-code login."""

    def __init__(self, name: str, on_pending: Callable[[LoginPending], None], redirect_uri: str,
                 on_settled: Callable[[], None] = lambda: None) -> None:
        self.name = name
        self.on_pending = on_pending
        self.on_settled = on_settled
        self.redirect_uri = redirect_uri
        self.pending: LoginPending | None = None
        self._answer: asyncio.Future[AuthorizationCodeResult] | None = None
        self._listener: asyncio.Server | None = None

    # -- the SDK's two callbacks ------------------------------------------------------------

    async def redirect(self, url: str) -> None:
        """The SDK has a login link: listen for the callback, then tell the person."""
        self._answer = asyncio.get_running_loop().create_future()
        await self._listen()
        self.pending = LoginPending(url=url, redirect_uri=self.redirect_uri, started=time.time())
        self.on_pending(self.pending)

    async def callback(self) -> AuthorizationCodeResult:
        """Wait for the code (loopback or pasted), at most :data:`LOGIN_WAIT` seconds."""
        assert self._answer is not None, "callback() before redirect()"
        try:
            return await within(asyncio.shield(self._answer), LOGIN_WAIT)
        except asyncio.TimeoutError:
            raise LoginError(f"nobody logged in to {self.name} within {LOGIN_WAIT // 60} minutes") from None
        finally:
            self.pending = None
            await self._close()
            self.on_settled()

    # -- how the code arrives ------------------------------------------------------------------

    def complete(self, address: str) -> None:
        """Finish the login with the address the browser was sent back to (the paste path)."""
        if self._answer is None or self._answer.done():
            raise LoginError(f"no login to {self.name} is waiting")
        parsed = urlparse(address.strip())
        query = parse_qs(parsed.query)
        expected = urlparse(self.redirect_uri)
        if parsed.path != expected.path or "state" not in query:
            raise LoginError(f"that is not the address the login sends you back to ({self.redirect_uri}?code=...)")
        self._settle(query)

    def _settle(self, query: dict[str, list[str]]) -> None:
        if self._answer is None or self._answer.done():
            return
        if "error" in query:
            detail = query.get("error_description", query["error"])[0]
            self._answer.set_exception(LoginError(f"the authorization server refused the login: {detail}"))
            return
        code = query.get("code", [""])[0]
        self._answer.set_result(AuthorizationCodeResult(
            code=code, state=query.get("state", [None])[0], iss=query.get("iss", [None])[0]))

    async def _listen(self) -> None:
        port = urlparse(self.redirect_uri).port
        try:
            self._listener = await asyncio.start_server(self._serve, "127.0.0.1", port)
        except OSError:
            self._listener = None  # port taken: the paste path still works

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request_line = (await within(reader.readline(), 10)).decode("latin-1")
            while (await within(reader.readline(), 10)) not in (b"\r\n", b"\n", b""):
                pass
            target = request_line.split(" ")[1] if " " in request_line else ""
            parsed = urlparse(target)
            if parsed.path != urlparse(self.redirect_uri).path:
                body, status = b"Not found", "404 Not Found"
            else:
                self._settle(parse_qs(parsed.query))
                body = f"Logged in to {self.name}. You can close this tab and go back to the notebook.".encode()
                status = "200 OK"
            writer.write(f"HTTP/1.1 {status}\r\ncontent-type: text/plain; charset=utf-8\r\n"
                         f"content-length: {len(body)}\r\nconnection: close\r\n\r\n".encode() + body)
            await writer.drain()
        except (asyncio.TimeoutError, ConnectionError, IndexError):
            pass
        finally:
            writer.close()

    async def _close(self) -> None:
        if self._listener is not None:
            self._listener.close()
            await self._listener.wait_closed()
            self._listener = None

    async def aclose(self) -> None:
        if self._answer is not None and not self._answer.done():
            self._answer.set_exception(LoginError("the server was stopped"))
        await self._close()


def make_oauth(
    name: str, url: str, options: OAuthOptions, token_dir: Path, on_pending: Callable[[LoginPending], None],
    on_settled: Callable[[], None] = lambda: None,
) -> tuple[OAuthClientProvider, LoginFlow, FileTokenStorage]:
    """An httpx2 auth for one server, the login flow it drives, and where it keeps its tokens."""
    storage = FileTokenStorage(Path(token_dir) / f"{name}.json", url)
    redirect_uri = storage.redirect_uri() or (
        f"http://127.0.0.1:{options.callback_port or _free_port()}{CALLBACK_PATH}")
    flow = LoginFlow(name, on_pending, redirect_uri, on_settled)
    metadata = OAuthClientMetadata(
        client_name=options.client_name,
        redirect_uris=[redirect_uri],  # type: ignore[list-item]
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        token_endpoint_auth_method="none",
        scope=options.scope,
    )
    provider = _Provider(url, metadata, storage=storage, redirect_handler=flow.redirect, callback_handler=flow.callback)
    return provider, flow, storage
