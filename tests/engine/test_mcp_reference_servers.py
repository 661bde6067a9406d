"""The reference servers people install, as they really speak: PyPI's mcp-server-time, -git and
-fetch (20 consecutive calls each, all must succeed), npm's server-filesystem on the test
project, server-everything over the legacy SSE transport.

The PyPI servers declare no list-change notifications and have no listen method: a client
that subscribed anyway marked them failed and restarted them on every call.

The default run keeps one PyPI server (time: twenty calls in about a second), the npm
filesystem server and the SSE transport (tested nowhere else); git and fetch are marked slow
(CI runs them): fetch alone takes 15-25 s, the server rendering every page through Node.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from codingcode_jupyter.engine.mcp.manager import McpManager
from tests.engine.mcp_real import (
    EVERYTHING,
    FILESYSTEM,
    NODE,
    PY_SERVERS,
    by_display,
    ctx,
    everything_http,
    needs,
    py_server,
)


async def twenty_calls(manager: McpManager, name: str, args: dict, project: Path, expect: str) -> None:
    tool = by_display(manager)[name]
    server = manager.connection(name.split(":")[0])
    for i in range(20):
        result = await tool.run(args, ctx(project))
        assert not result.is_error, f"call {i + 1}: {result.text_content}"
        assert expect in result.text_content
    assert server.state == "running" and server.restarts == 0 and server.error is None


@pytest.mark.slow
@needs(PY_SERVERS / "mcp-server-time", "mcp-server-time")
async def test_time_twenty_calls(tmp_path):
    manager = McpManager(tmp_path, start_timeout=30)
    try:
        status = await manager.add("time", {"command": py_server("mcp-server-time"), "args": ["--local-timezone", "UTC"]})
        assert status.state == "running", status.error
        assert manager.connection("time").protocol_version  # negotiated, whichever era the server speaks
        await twenty_calls(manager, "time:get_current_time", {"timezone": "Europe/Paris"}, tmp_path, "Europe/Paris")
        converted = await by_display(manager)["time:convert_time"].run(
            {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}, ctx(tmp_path))
        assert not converted.is_error and "Asia/Tokyo" in converted.text_content
        bad = await by_display(manager)["time:get_current_time"].run({"timezone": "Mars/Olympus"}, ctx(tmp_path))
        assert bad.is_error and manager.connection("time").state == "running"  # a bad argument loses nothing
    finally:
        await manager.aclose()


@pytest.mark.slow
@needs(PY_SERVERS / "mcp-server-git", "mcp-server-git")
async def test_git_twenty_calls(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "a.txt").write_text("one\n")
    subprocess.run([*git, "add", "a.txt"], check=True)
    subprocess.run([*git, "commit", "-qm", "first commit"], check=True)
    (repo / "a.txt").write_text("two\n")
    manager = McpManager(tmp_path, start_timeout=30)
    try:
        status = await manager.add("git", {"command": py_server("mcp-server-git"), "args": ["--repository", str(repo)]})
        assert status.state == "running", status.error
        await twenty_calls(manager, "git:git_status", {"repo_path": str(repo)}, tmp_path, "a.txt")
        log = await by_display(manager)["git:git_log"].run({"repo_path": str(repo)}, ctx(tmp_path))
        assert not log.is_error and "first commit" in log.text_content
        diff = await by_display(manager)["git:git_diff_unstaged"].run({"repo_path": str(repo)}, ctx(tmp_path))
        assert "+two" in diff.text_content
    finally:
        await manager.aclose()


@pytest.fixture
def local_site():
    """A web page on 127.0.0.1 (the fetch server must never reach further)."""

    class Page(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):  # noqa: N802
            if self.path == "/robots.txt":
                body, kind = b"User-agent: *\nAllow: /\n", "text/plain"
            else:
                body, kind = b"<html><body><h1>Local page</h1><p>Served on loopback.</p></body></html>", "text/html"
            self.send_response(200)
            self.send_header("content-type", kind)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Page)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/page"
    server.shutdown()
    server.server_close()


@pytest.mark.slow
@needs(PY_SERVERS / "mcp-server-fetch", "mcp-server-fetch")
async def test_fetch_twenty_calls_on_a_local_page(tmp_path, local_site):
    manager = McpManager(tmp_path, start_timeout=30)
    try:
        status = await manager.add("fetch", {"command": py_server("mcp-server-fetch"), "args": ["--allow-private-ips"]})
        assert status.state == "running", status.error
        await twenty_calls(manager, "fetch:fetch", {"url": local_site}, tmp_path, "Local page")
    finally:
        await manager.aclose()


@needs(FILESYSTEM, "@modelcontextprotocol/server-filesystem")
async def test_filesystem_on_the_test_project(tmp_path):
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    (project / "src" / "app.py").write_text("print('hello')\n")
    manager = McpManager(project, start_timeout=30)
    try:
        status = await manager.add("fs", {"command": NODE, "args": [str(FILESYSTEM), str(project)]})
        assert status.state == "running", status.error
        tools = by_display(manager)
        here = str(project.resolve())

        async def run(name, args):
            result = await tools[f"fs:{name}"].run(args, ctx(project))
            assert not result.is_error, f"{name}: {result.text_content}"
            return result.text_content

        assert here in await run("list_allowed_directories", {})  # the roots we declared: the project
        assert "print('hello')" in await run("read_text_file", {"path": f"{here}/src/app.py"})
        assert "app.py" in await run("list_directory", {"path": f"{here}/src"})
        await run("write_file", {"path": f"{here}/notes.md", "content": "# Notes\n"})
        await run("edit_file", {"path": f"{here}/notes.md", "edits": [{"oldText": "# Notes", "newText": "# Plans"}]})
        assert (project / "notes.md").read_text() == "# Plans\n"
        await run("create_directory", {"path": f"{here}/docs"})
        await run("move_file", {"source": f"{here}/notes.md", "destination": f"{here}/docs/notes.md"})
        assert "notes.md" in await run("search_files", {"path": here, "pattern": "**/*.md"})
        assert "docs" in await run("directory_tree", {"path": here})
        assert "size" in (await run("get_file_info", {"path": f"{here}/src/app.py"})).lower()
        outside = await tools["fs:read_text_file"].run({"path": "/etc/hostname"}, ctx(project))
        assert outside.is_error  # outside the roots: refused by the server, and nothing breaks
        assert manager.connection("fs").state == "running"
    finally:
        await manager.aclose()


@needs(EVERYTHING, "@modelcontextprotocol/server-everything")
async def test_legacy_sse_transport(tmp_path):
    listening = everything_http("sse", log=tmp_path / "sse.log")
    manager = McpManager(tmp_path, start_timeout=30)
    try:
        status = await manager.add("old", {"type": "sse", "url": f"http://127.0.0.1:{listening.port}/sse"})
        assert status.state == "running" and status.transport == "sse", status.error
        result = await by_display(manager)["old:get-sum"].run({"a": 40, "b": 2}, ctx(tmp_path))
        assert not result.is_error and "42" in result.text_content
    finally:
        await manager.aclose()
        listening.stop()


@needs(FILESYSTEM, "@modelcontextprotocol/server-filesystem")
async def test_filesystem_keeps_the_directory_of_its_arguments_beside_the_project(tmp_path):
    # The server replaces the directories of its arguments with the client's roots: sending only the
    # project took away the one directory the person named in .mcp.json.
    project, data, other = tmp_path / "project", tmp_path / "data", tmp_path / "other"
    for directory in (project, data, other):
        directory.mkdir()
    (data / "facts.txt").write_text("forty-two\n")
    (other / "secret.txt").write_text("not named\n")
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {"fs": {"command": NODE, "args": [str(FILESYSTEM), str(data)]}}}))
    manager = McpManager(project, start_timeout=30)
    try:
        await manager.start()
        assert manager.connection("fs").state == "running", manager.connection("fs").error
        tools = by_display(manager)
        async def allowed() -> str:
            return (await tools["fs:list_allowed_directories"].run({}, ctx(project))).text_content

        # The server asks for the roots after its start and then replaces its directories with them.
        listed = ""
        for _ in range(200):
            listed = await allowed()
            if str(project.resolve()) in listed:
                break
            await asyncio.sleep(0.05)
        assert str(project.resolve()) in listed and str(data.resolve()) in listed, listed
        read = await tools["fs:read_text_file"].run({"path": str(data / "facts.txt")}, ctx(project))
        assert not read.is_error and "forty-two" in read.text_content, read.text_content
        # Only what is named: a directory beside it stays out of reach.
        assert (await tools["fs:read_text_file"].run({"path": str(other / "secret.txt")}, ctx(project))).is_error
        assert f"roots: {project.resolve()} (the project), {data.resolve()} (named in its arguments)" in manager.describe()
    finally:
        await manager.aclose()
