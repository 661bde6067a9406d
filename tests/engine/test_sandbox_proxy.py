"""The network allowlist: matching rules, the host-side proxy alone, and end to end through bwrap."""

from __future__ import annotations

import asyncio
import http.server
import os
import shutil
import socket
import threading
from pathlib import Path

import pytest

from codingcode_jupyter.engine.sandbox import AllowlistProxy, CommandSandbox, domain_allowed, validate_domain_patterns
from codingcode_jupyter.engine.settings import SandboxSettings
from tests.engine.sandbox_helpers import needs_bwrap, run

BODY = b"hello-from-loopback-4e1d"


@pytest.mark.parametrize(
    ("host", "patterns", "expected"),
    [
        ("example.com", ["example.com"], True),
        ("EXAMPLE.com.", ["example.com"], True),
        ("api.example.com", ["example.com"], False),
        ("api.example.com", ["*.example.com"], True),
        ("a.b.example.com", ["*.example.com"], True),
        ("example.com", ["*.example.com"], False),
        ("evilexample.com", ["*.example.com"], False),
        ("example.com.evil.org", ["example.com"], False),
        ("127.0.0.1", ["localhost"], False),
        ("127.0.0.1", ["127.0.0.1"], True),
        ("[::1]", ["::1"], True),
        ("", ["example.com"], False),
        ("files.example.org", [], False),
    ],
)
def test_domain_matching(host: str, patterns: list[str], expected: bool) -> None:
    assert domain_allowed(host, patterns) is expected


def test_pattern_validation() -> None:
    assert validate_domain_patterns(["example.com", "*.github.com", "127.0.0.1", "::1", "localhost"]) == []
    problems = validate_domain_patterns(["*", "http://x.com", "x.com:443", "a..b", "*.*.com", ""])
    assert len(problems) == 6
    assert all("'" in problem for problem in problems)


class _Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - the stdlib's naming
        self.send_response(200)
        self.send_header("Content-Length", str(len(BODY)))
        self.end_headers()
        self.wfile.write(BODY)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def web_server():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


async def _ask(proxy: AllowlistProxy, request: bytes) -> bytes:
    """Send one request the way the sandbox's forwarder does: a connection passed over the channel."""
    channel = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    channel.connect(str(proxy.socket_path))
    ours, theirs = socket.socketpair()
    socket.send_fds(channel, [b"c"], [theirs.fileno()])
    theirs.close()
    reader, writer = await asyncio.open_connection(sock=ours)
    writer.write(request)
    await writer.drain()
    data = await asyncio.wait_for(reader.read(), 10)
    writer.close()
    channel.close()
    return data


async def test_proxy_alone_allows_listed_and_refuses_the_rest(web_server: int) -> None:
    proxy = AllowlistProxy(["localhost"])
    proxy.start()
    try:
        ok = await _ask(proxy, f"GET http://localhost:{web_server}/x HTTP/1.1\r\nHost: localhost\r\n\r\n".encode())
        assert ok.startswith(b"HTTP/1.0 200") and ok.endswith(BODY)
        refused = await _ask(proxy, f"GET http://127.0.0.1:{web_server}/ HTTP/1.1\r\n\r\n".encode())
        assert refused.startswith(b"HTTP/1.1 403") and b"allowedDomains" in refused
        tunnel_refused = await _ask(proxy, f"CONNECT 127.0.0.1:{web_server} HTTP/1.1\r\n\r\n".encode())
        assert tunnel_refused.startswith(b"HTTP/1.1 403")
        assert (await _ask(proxy, b"garbage\r\n\r\n")).startswith(b"HTTP/1.1 400")
        assert (await _ask(proxy, b"GET /relative HTTP/1.1\r\n\r\n")).startswith(b"HTTP/1.1 400")
        assert (await _ask(proxy, b"GET ftp://localhost/ HTTP/1.1\r\n\r\n")).startswith(b"HTTP/1.1 400")
        assert (await _ask(proxy, b"CONNECT localhost:99999 HTTP/1.1\r\n\r\n")).startswith(b"HTTP/1.1 400")
        # Allowed, but nothing listens there: a clear 502, not a hang.
        closed = await _ask(proxy, b"CONNECT localhost:1 HTTP/1.1\r\n\r\n")
        assert closed.startswith(b"HTTP/1.1 502")
        assert [(d.host, d.allowed) for d in proxy.decisions][:3] == [
            ("localhost", True), ("127.0.0.1", False), ("127.0.0.1", False),
        ]  # fmt: skip
        tunnel = await _ask(
            proxy,
            f"CONNECT localhost:{web_server} HTTP/1.1\r\n\r\nGET / HTTP/1.0\r\nHost: localhost\r\n\r\n".encode(),
        )
        assert tunnel.startswith(b"HTTP/1.1 200 Connection Established") and tunnel.endswith(BODY)
    finally:
        await proxy.aclose()
    assert not proxy.running


async def test_proxy_starts_under_a_temporary_directory_too_deep_for_a_socket(
    web_server: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    monkeypatch.setattr("tempfile.tempdir", str(deep))
    proxy = AllowlistProxy(["localhost"])
    proxy.start()
    try:
        assert len(str(proxy.socket_path)) < 108
        ok = await _ask(proxy, f"GET http://localhost:{web_server}/x HTTP/1.1\r\nHost: localhost\r\n\r\n".encode())
        assert ok.startswith(b"HTTP/1.0 200")
    finally:
        await proxy.aclose()


async def test_proxy_ignores_what_is_not_a_stream_socket(web_server: int, tmp_path: Path) -> None:
    # A command that got hold of the channel could send any descriptor: none is served but sockets.
    proxy = AllowlistProxy(["localhost"])
    proxy.start()
    try:
        channel = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        channel.connect(str(proxy.socket_path))
        read, write = os.pipe()
        datagram, _ = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
        socket.send_fds(channel, [b"c"], [read, datagram.fileno()])
        # Our read end stays open until the request is written: the proxy may already have closed
        # its copy (ignoring it), and a pipe with no reader left fails the write with EPIPE.
        os.write(write, f"GET http://localhost:{web_server}/ HTTP/1.1\r\n\r\n".encode())
        os.close(read)
        # Still serving, and the pipe's request was never read as one.
        ok = await _ask(proxy, f"GET http://localhost:{web_server}/x HTTP/1.1\r\nHost: localhost\r\n\r\n".encode())
        assert ok.endswith(BODY)
        assert [d.host for d in proxy.decisions] == ["localhost"]
        channel.close()
        os.close(write)
        datagram.close()
    finally:
        await proxy.aclose()


@pytest.mark.slow
@needs_bwrap
async def test_direct_connection_from_inside_fails_even_with_an_allowlist(tmp_path: Path, web_server: int) -> None:
    sandbox = CommandSandbox.create(tmp_path, SandboxSettings.model_validate({"network": {"allowedDomains": ["localhost"]}}))
    try:
        result = await run(sandbox, f"exec 3<>/dev/tcp/127.0.0.1/{web_server} && echo connected")
        assert "connected" not in result.out
    finally:
        await sandbox.aclose()


@pytest.mark.slow
@needs_bwrap
@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
async def test_allowlisted_name_through_the_proxy_works(tmp_path: Path, web_server: int) -> None:
    sandbox = CommandSandbox.create(tmp_path, SandboxSettings.model_validate({"network": {"allowedDomains": ["localhost"]}}))
    assert sandbox.network == "allowlist: localhost"
    assert sandbox.describe().startswith("bubblewrap: on (network allowlist: localhost) — ")
    try:
        listed = await run(sandbox, f"curl -sS --max-time 10 http://localhost:{web_server}/")
        assert listed.out == BODY.decode(), listed.err
        # CONNECT, as HTTPS clients do.
        tunnelled = await run(sandbox, f"curl -sS -p --max-time 10 http://localhost:{web_server}/")
        assert tunnelled.out == BODY.decode(), tunnelled.err
        unlisted = await run(sandbox, f"curl -sS --max-time 10 -o /dev/null -w '%{{http_code}}' http://127.0.0.1:{web_server}/")
        assert unlisted.out == "403"
        python = await run(
            sandbox,
            f"python3 -c \"import urllib.request; print(urllib.request.urlopen('http://localhost:{web_server}/').read())\"",
        )
        assert BODY.decode() in python.out, python.err
        assert sandbox.proxy is not None and any(not d.allowed for d in sandbox.proxy.decisions)
    finally:
        await sandbox.aclose()
    assert sandbox.proxy is None


def test_public_names() -> None:
    import codingcode_jupyter.engine.sandbox as sandbox

    assert set(sandbox.__all__) >= {"CommandSandbox", "SandboxUnavailable", "AllowlistProxy", "domain_allowed"}
    for name in sandbox.__all__:
        assert getattr(sandbox, name) is not None


@pytest.mark.parametrize("host", [
    "evil.com/.allowed.com", "evil.com\x00.allowed.com", "evil.com%2e.allowed.com", "a..allowed.com",
    "evil.com .allowed.com", "evil.com@x.allowed.com", "allowed.com.evil.com", "x.allowed.com:80",
])
def test_hosts_that_only_end_like_an_allowed_domain_are_refused(host: str) -> None:
    assert not domain_allowed(host, ["*.allowed.com", "allowed.com"])


async def test_a_domain_deny_rule_narrows_what_the_allowlist_lets_through(web_server: int, tmp_path: Path,
                                                                          monkeypatch) -> None:
    """WebFetch(domain:…) deny rules join the proxy's rules: a command is refused what the person
    denied the fetch tool, even where an allowed pattern covers it; the control stays allowed."""
    import json

    from codingcode_jupyter.engine.deps import sandbox_settings
    from codingcode_jupyter.engine.project_settings import ProjectSettings

    monkeypatch.setenv("CODINGCODE_TRUST", "1")
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / "settings.json").write_text(json.dumps({
        "permissions": {"allow": ["WebFetch(domain:localhost)", "WebFetch(domain:127.0.0.1)"],
                        "deny": ["WebFetch(domain:127.0.0.1)"]}}))
    network = sandbox_settings(ProjectSettings(tmp_path).current(), tmp_path).network
    assert network.deniedDomains == ["127.0.0.1"], network
    proxy = AllowlistProxy(network.allowedDomains or [], denied_domains=network.deniedDomains or [])
    proxy.start()
    try:
        ok = await _ask(proxy, f"GET http://localhost:{web_server}/x HTTP/1.1\r\nHost: localhost\r\n\r\n".encode())
        assert ok.startswith(b"HTTP/1.0 200"), ok[:100]
        refused = await _ask(proxy, f"GET http://127.0.0.1:{web_server}/ HTTP/1.1\r\n\r\n".encode())
        assert refused.startswith(b"HTTP/1.1 403") and b"deny rule" in refused, refused[:200]
    finally:
        await proxy.aclose()
