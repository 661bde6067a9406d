"""OAuth 2.1 login to a remote server that answers 401, against a local authorization server.

The "browser" is an HTTP client on this machine: it opens the login link the manager
reported; the authorization server consents at once and redirects to the loopback
callback (same machine) — or, for the paste path, the test reads the redirect address and
hands it to ``complete_login`` as a person would paste it.

Using the stored tokens and refreshing them waits twice for a token to expire (2 s lifetime): that
test is marked slow (CI runs it); the default run keeps both logins and the 401.
"""

from __future__ import annotations

import json
import stat
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from codingcode_jupyter.engine.events import McpLoginRequired
from codingcode_jupyter.engine.mcp.common import McpCallError
from codingcode_jupyter.engine.mcp.manager import McpManager
from codingcode_jupyter.engine.mcp.oauth import LoginError
from tests.engine.mcp_real import ROOT, by_display, ctx, free_port, wait_port
from tests.polling import eventually

SERVER = str(ROOT / "tests" / "fakes" / "oauth_server.py")


@pytest.fixture(scope="module")
def guarded(tmp_path_factory):
    """The guarded MCP server with its authorization server; tokens live 2 s.

    One for the module (a start costs ~1 s): each test logs in with a token store of its own
    and counts what it caused on the server as a difference of its statistics.
    """
    port = free_port()
    log = open(tmp_path_factory.mktemp("oauth") / "oauth-server.log", "w")
    process = subprocess.Popen([sys.executable, SERVER, "--port", str(port), "--token-lifetime", "2"], stdout=log, stderr=log)
    try:
        wait_port(port, process)
        yield f"http://127.0.0.1:{port}"
    finally:
        process.kill()
        process.wait()
        log.close()


def stats(base: str) -> dict:
    return httpx.get(f"{base}/stats").json()


async def running(manager: McpManager, name: str, seconds: float = 15) -> None:
    await eventually(lambda: manager.connection(name).state == "running", seconds,
                     lambda: f"{name} to run; the servers: {manager.describe()}")


async def expired(token_file: Path) -> None:
    """Until the stored access token has expired, by the time the client itself keeps with it
    (at or after the server's: the server counts from an earlier whole second)."""
    def past() -> bool:
        expires_at = json.loads(token_file.read_text())["expires_at"]
        return expires_at is not None and time.time() > expires_at

    await eventually(past, 10, f"the token in {token_file.name} to expire")


async def loopback_login(guarded: str, tmp_path: Path) -> tuple[dict, Path]:
    """Log in once through the loopback callback; returns the entry and the token directory."""
    before = stats(guarded)
    tokens = tmp_path / "home" / ".codingcode" / "mcp-tokens"
    manager = McpManager(tmp_path, token_dir=tokens, start_timeout=15)
    entry = {"type": "http", "url": f"{guarded}/mcp"}
    try:
        status = await manager.add("guarded", entry)
        assert status.state == "needs_login" and status.login_url.startswith(f"{guarded}/authorize?")
        [login] = [e for e in manager.take_events() if isinstance(e, McpLoginRequired)]
        assert login.url == status.login_url and login.redirect_uri.startswith("http://127.0.0.1:")
        assert "log in:" in manager.describe()
        # Before the login, a call says what to do instead of failing obscurely.
        with pytest.raises(McpCallError, match="needs the user to log in first: open http"):
            await manager.connection("guarded").call("secret", {})
        async with httpx.AsyncClient(follow_redirects=True) as browser:
            page = await browser.get(login.url)
        assert page.status_code == 200 and "Logged in to guarded" in page.text
        await running(manager, "guarded")
        result = await by_display(manager)["guarded:secret"].run({}, ctx(tmp_path))
        assert result.text_content == "the guarded answer"
        stored = tokens / "guarded.json"
        assert stat.S_IMODE(stored.stat().st_mode) == 0o600 and stat.S_IMODE(tokens.stat().st_mode) == 0o700
        assert "access_token" in stored.read_text()
    finally:
        await manager.aclose()
    assert stats(guarded)["logins"] == before["logins"] + 1
    return entry, tokens


@pytest.mark.slow
async def test_login_through_the_loopback_callback_is_stored(guarded, tmp_path):
    await loopback_login(guarded, tmp_path)


@pytest.mark.slow
async def test_login_through_the_loopback_callback_then_stored_and_refreshed(guarded, tmp_path):
    before = stats(guarded)
    entry, tokens = await loopback_login(guarded, tmp_path)

    # A new kernel: the stored tokens are used, and refreshed once they expire, with no new login.
    await expired(tokens / "guarded.json")
    again = McpManager(tmp_path, token_dir=tokens, start_timeout=15)
    try:
        status = await again.add("guarded", entry)
        assert status.state == "running", status
        assert (await by_display(again)["guarded:secret"].run({}, ctx(tmp_path))).text_content == "the guarded answer"
        await expired(tokens / "guarded.json")  # the refreshed token, in its turn
        assert (await by_display(again)["guarded:secret"].run({}, ctx(tmp_path))).text_content == "the guarded answer"
    finally:
        await again.aclose()
    counts = {key: value - before[key] for key, value in stats(guarded).items()}
    assert counts["logins"] == 1 and counts["refreshes"] >= 2 and counts["registrations"] == 1


@pytest.mark.slow
async def test_login_by_pasting_the_redirect_address(guarded, tmp_path):
    manager = McpManager(tmp_path, token_dir=tmp_path / "tokens", start_timeout=15)
    try:
        status = await manager.add("guarded", {"type": "http", "url": f"{guarded}/mcp"})
        assert status.state == "needs_login"
        assert "guarded:secret" not in by_display(manager)  # no tools are offered before the login
        with pytest.raises(LoginError, match="not the address"):
            manager.complete_login("guarded", "http://127.0.0.1:1/somewhere-else?code=x")
        # The browser runs elsewhere: the loopback page would not load there, but its address can be copied.
        async with httpx.AsyncClient(follow_redirects=False) as browser:
            redirect = (await browser.get(status.login_url)).headers["location"]
        manager.complete_login("guarded", redirect)
        await running(manager, "guarded")
        assert (await by_display(manager)["guarded:secret"].run({}, ctx(tmp_path))).text_content == "the guarded answer"
        with pytest.raises(LoginError, match="no login"):
            manager.complete_login("guarded", redirect)
    finally:
        await manager.aclose()


async def test_a_401_without_oauth_says_so(guarded, tmp_path):
    manager = McpManager(tmp_path, token_dir=tmp_path / "tokens", start_timeout=15)
    try:
        status = await manager.add("guarded", {"type": "http", "url": f"{guarded}/mcp", "oauth": {"enabled": False}})
        assert status.state == "failed" and "HTTP 401" in status.error and "Unauthorized" in status.error, status.error
    finally:
        await manager.aclose()
