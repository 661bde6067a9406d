"""MCP servers for real: the fake server over stdio and streamable HTTP, through McpManager."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from codingcode_jupyter.engine.mcp.manager import McpManager
from codingcode_jupyter.engine.state import SessionState
from codingcode_jupyter.engine.tools.base import ToolContext
from codingcode_jupyter.engine.tools.registry import ToolRegistry
from codingcode_jupyter.engine.tools.resolver import SessionToolResolver
from tests.engine.mcp_real import free_port, wait_port
from tests.polling import eventually

FAKE = str(Path(__file__).resolve().parents[1] / "fakes" / "mcp_server.py")
STDIO = {"command": sys.executable, "args": [FAKE, "stdio"]}


def ctx(tmp_path: Path) -> ToolContext:
    return ToolContext.standalone(tmp_path, session_id="s", turn_id=1, state=SessionState())


def by_display(manager: McpManager):
    return {tool.display_name: tool for tool in manager.tools()}


async def call(manager: McpManager, name: str, args: dict, tmp_path: Path):
    return await by_display(manager)[name].run(args, ctx(tmp_path))


@pytest.fixture
async def stdio_manager(tmp_path):
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {"fake": STDIO}}))
    manager = McpManager(tmp_path, call_timeout=3.0, start_timeout=15)
    await manager.start()
    yield manager
    await manager.aclose()


@pytest.fixture
def http_server():
    port = free_port()
    process = subprocess.Popen([sys.executable, FAKE, "http", "--port", str(port)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_port(port, process, 20)
    except (AssertionError, RuntimeError):
        process.kill()
        raise
    yield f"http://127.0.0.1:{port}/mcp", process
    process.kill()
    process.wait()


async def check_every_content_type(manager: McpManager, tmp_path: Path) -> None:
    echo = await call(manager, "fake:echo", {"text": "hi"}, tmp_path)
    assert echo.content == [{"type": "text", "text": "echo: hi"}] and not echo.is_error

    image = await call(manager, "fake:image", {}, tmp_path)
    assert image.content[0] == {"type": "text", "text": "a red dot"}
    assert image.content[1]["type"] == "image"
    assert image.content[1]["source"]["type"] == "base64" and image.content[1]["source"]["media_type"] == "image/png"
    assert image.content[1]["source"]["data"].startswith("iVBOR")

    audio = await call(manager, "fake:audio", {}, tmp_path)
    assert audio.content[0]["type"] == "text" and "audio/wav" in audio.content[0]["text"]

    link = await call(manager, "fake:link", {}, tmp_path)
    assert "file:///data/report.csv" in link.text_content and "report" in link.text_content

    embedded = await call(manager, "fake:embedded", {}, tmp_path)
    assert "file:///notes.txt" in embedded.content[0]["text"] and "the notes" in embedded.content[0]["text"]
    assert "binary resource file:///blob.bin" in embedded.content[1]["text"]

    structured = await call(manager, "fake:structured", {}, tmp_path)
    assert json.loads(structured.text_content) == {"temperature": 21.5, "unit": "C"}

    failed = await call(manager, "fake:fail", {"reason": "no disk"}, tmp_path)
    assert failed.is_error and failed.text_content == "failure: no disk"


async def check_timeout_then_still_usable(manager: McpManager, tmp_path: Path) -> None:
    started = time.monotonic()
    slow = await call(manager, "fake:slow", {"seconds": 30}, tmp_path)
    assert slow.is_error and "timed out after 3 s" in slow.text_content
    # Cut well short of the 30 s the tool sleeps (3 s: a loaded machine answers an echo in over 1 s).
    assert time.monotonic() - started < 15
    assert (await call(manager, "fake:echo", {"text": "still here"}, tmp_path)).text_content == "echo: still here"


async def check_list_changed(manager: McpManager, tmp_path: Path) -> None:
    assert "fake:late" not in by_display(manager)
    version = manager.tools_version
    assert (await call(manager, "fake:add_tool", {}, tmp_path)).text_content == "added late"
    await eventually(lambda: "fake:late" in by_display(manager), what="the late tool to be listed")
    assert manager.tools_version > version
    assert (await call(manager, "fake:late", {"x": 7}, tmp_path)).text_content == "late 7"


def check_tool_definitions(manager: McpManager) -> None:
    tools = by_display(manager)
    echo = tools["fake:echo"]
    assert echo.name == "fake__echo" and echo.source == "mcp" and echo.mcp_server == "fake"
    assert echo.input_schema["properties"]["text"]["type"] == "string" and echo.input_schema["required"] == ["text"]
    # Annotations are carried for the approval card, but a server's readOnlyHint is not trusted.
    assert echo.annotations == {"readOnlyHint": True} and not echo.read_only
    crash = tools["fake:crash"]
    assert crash.annotations == {"destructiveHint": True} and not crash.read_only
    assert [t.display_name for t in manager.tools()] == sorted(tools)


@pytest.mark.slow
async def test_stdio_definitions_every_content_type_timeout_and_list_changed(stdio_manager, tmp_path):
    """One server through all of it, as the HTTP test below (a server start costs ~1 s): what it
    offers as it starts, each content type, a call past the timeout, then a tool list that changes."""
    check_tool_definitions(stdio_manager)
    await check_every_content_type(stdio_manager, tmp_path)
    await check_timeout_then_still_usable(stdio_manager, tmp_path)
    resolver = SessionToolResolver(ToolRegistry(), state=SessionState(), mcp=stdio_manager)
    assert resolver.lookup("fake__late") is None
    await check_list_changed(stdio_manager, tmp_path)
    assert resolver.lookup("fake__late") is not None


@pytest.mark.slow
async def test_stdio_crash_is_an_error_then_restarts(stdio_manager, tmp_path):
    first_pid = (await call(stdio_manager, "fake:pid", {}, tmp_path)).text_content
    crashed = await call(stdio_manager, "fake:crash", {}, tmp_path)
    assert crashed.is_error and "crashed" in crashed.text_content and "mcp-fake.log" in crashed.text_content
    [status] = stdio_manager.status()
    assert status.state == "failed" and status.error
    # The tools stay offered (a stable tools block); calling one restarts the server.
    assert "fake:pid" in by_display(stdio_manager)
    second_pid = (await call(stdio_manager, "fake:pid", {}, tmp_path)).text_content
    assert second_pid.isdigit() and second_pid != first_pid
    assert stdio_manager.status()[0].state == "running"
    log = (tmp_path / ".codingcode" / "logs" / "mcp-fake.log").read_text()
    assert "crashing on purpose" in log and log.count("fake MCP server starting (stdio)") == 2


@pytest.mark.slow
async def test_stdio_concurrent_calls_from_other_tasks_are_bounded(tmp_path):
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {"fake": STDIO}}))
    manager = McpManager(tmp_path, max_concurrency=2)
    await manager.start()
    try:
        slow = by_display(manager)["fake:slow"]
        started = time.monotonic()
        results = await asyncio.gather(*(slow.run({"seconds": 0.2}, ctx(tmp_path)) for _ in range(4)))
        elapsed = time.monotonic() - started
        assert [r.text_content for r in results] == ["slept 0.2"] * 4
        assert elapsed >= 0.38  # two rounds of two, not four at once
    finally:
        await manager.aclose()


@pytest.mark.slow
async def test_servers_that_fail_to_start_do_not_stop_the_others(tmp_path):
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {
        "fake": STDIO,
        "dies": {"command": sys.executable, "args": ["-c", "import sys; print('bye', file=sys.stderr); sys.exit(1)"]},
        "missing": {"command": str(tmp_path / "no-such-program")},
    }}))
    manager = McpManager(tmp_path, start_timeout=20)
    await manager.start()
    try:
        status = {s.name: s for s in manager.status()}
        assert status["fake"].state == "running" and status["fake"].tool_count >= 10
        assert status["dies"].state == "failed" and status["dies"].error
        assert "bye" in status["dies"].log_path.read_text()
        assert status["missing"].state == "failed" and "no-such-program" in status["missing"].error
        assert status["missing"].log_path == tmp_path / ".codingcode" / "logs" / "mcp-missing.log"
        assert (await call(manager, "fake:echo", {"text": "ok"}, tmp_path)).text_content == "echo: ok"
        text = manager.describe()
        assert "dies [stdio] failed" in text and "fake [stdio] running" in text and "fake:echo" in text
        assert {t.mcp_server for t in manager.tools()} == {"fake"}
    finally:
        await manager.aclose()


async def test_server_that_never_answers_times_out(tmp_path):
    from codingcode_jupyter.engine.mcp.client import ServerConnection
    from codingcode_jupyter.engine.mcp.common import McpCallError
    from codingcode_jupyter.engine.mcp.config import StdioServerConfig

    mute = ServerConnection(
        name="mute", project=tmp_path, start_timeout=0.5,
        # Reads (and ignores) every request; exits only when its stdin closes.
        config=StdioServerConfig(command=sys.executable, args=["-c", "import sys; sys.stdin.read()"]),
    )
    await mute.start()
    try:
        assert mute.state == "failed" and "did not answer within 0.5 s" in mute.error
        with pytest.raises(McpCallError, match="not running: did not answer within 0.5 s"):
            await mute.call("anything", {})
    finally:
        await mute.stop()


@pytest.mark.slow
async def test_invalid_entry_is_a_status_and_the_others_start(tmp_path):
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {
        "gh": {"command": "${UNSET_VAR_FOR_TEST}"}, "fake": STDIO}}))
    manager = McpManager(tmp_path)
    await manager.start()
    try:
        fake, gh = manager.status()
        assert fake.name == "fake" and fake.state == "running"
        assert gh.name == "gh" and gh.state == "failed" and "UNSET_VAR_FOR_TEST" in gh.error and ".mcp.json" in gh.error
        assert {t.mcp_server for t in manager.tools()} == {"fake"}
    finally:
        await manager.aclose()


async def test_unreadable_config_is_a_status(tmp_path):
    (tmp_path / ".mcp.json").write_text("{oops")
    manager = McpManager(tmp_path)
    await manager.start()
    [status] = manager.status()
    assert status.state == "failed" and "not valid JSON" in status.error
    assert manager.tools() == []


@pytest.mark.slow
async def test_add_remove_and_deferred_server(tmp_path):
    manager = McpManager(tmp_path)
    try:
        status = await manager.add("lazy", {**STDIO, "deferred": True})
        assert status.state == "running" and status.deferred
        assert all(tool.deferred for tool in manager.tools())
        state = SessionState()
        resolver = SessionToolResolver(ToolRegistry(), state=state, mcp=manager)
        assert [t.name for t in resolver.offered()] == ["tool_search"]
        found = await resolver.lookup("tool_search").run({"query": "echo text"}, ToolContext.standalone(tmp_path, session_id="s", turn_id=1, state=state))
        assert "lazy__echo" in found.text_content
        assert "lazy__echo" in [t.name for t in resolver.offered()]
        with pytest.raises(ValueError, match="'bad'"):
            await manager.add("bad", {"command": "x", "nope": 1})
        assert await manager.remove("lazy") and manager.tools() == [] and manager.status() == []
        assert not await manager.remove("lazy")
    finally:
        await manager.aclose()


@pytest.mark.slow
async def test_http_every_content_type_timeout_and_list_changed(http_server, tmp_path):
    url, _ = http_server
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {"fake": {"type": "http", "url": url, "timeout": 3}}}))
    manager = McpManager(tmp_path)
    await manager.start()
    try:
        [status] = manager.status()
        assert status.state == "running" and status.transport == "http" and status.log_path is None
        await check_every_content_type(manager, tmp_path)
        await check_timeout_then_still_usable(manager, tmp_path)
        await check_list_changed(manager, tmp_path)
    finally:
        await manager.aclose()


@pytest.mark.slow
async def test_http_server_gone_is_a_clear_error(http_server, tmp_path):
    url, process = http_server
    manager = McpManager(tmp_path, start_timeout=5)
    try:
        await manager.add("fake", {"type": "http", "url": url})
        crashed = await call(manager, "fake:crash", {}, tmp_path)
        assert crashed.is_error and "fake" in crashed.text_content
        process.wait(timeout=5)
        again = await call(manager, "fake:echo", {"text": "x"}, tmp_path)
        assert again.is_error and "fake" in again.text_content
        assert manager.status()[0].state == "failed"
    finally:
        await manager.aclose()


@pytest.mark.slow
async def test_legacy_protocol_list_changed_and_crash(tmp_path):
    """Servers of the handshake era (most published ones) send list_changed as a plain notification."""
    from codingcode_jupyter.engine.mcp.client import ServerConnection
    from codingcode_jupyter.engine.mcp.config import StdioServerConfig

    changes = []
    connection = ServerConnection(
        name="old", config=StdioServerConfig(**STDIO), project=tmp_path, log_path=tmp_path / "old.log",
        protocol_mode="legacy", on_tools_changed=lambda: changes.append(1),
    )
    await connection.start()
    try:
        assert connection.state == "running" and "late" not in [t.name for t in connection.tools]
        await connection.call("add_tool", {})
        await eventually(lambda: changes, what="the list_changed notification")
        assert "late" in [t.name for t in connection.tools]
        assert (await connection.call("late", {"x": 1})).content[0].text == "late 1"
        from codingcode_jupyter.engine.mcp.common import McpCallError

        with pytest.raises(McpCallError, match="crashed"):
            await connection.call("crash", {})
        assert connection.state == "failed"
        assert (await connection.call("echo", {"text": "back"})).content[0].text == "echo: back"
        assert connection.restarts == 1
    finally:
        await connection.stop()
    assert connection.state == "stopped"


@pytest.mark.slow
async def test_stdio_env_expansion_and_cwd_reach_the_server(tmp_path, monkeypatch):
    (tmp_path / "sub").mkdir()
    monkeypatch.delenv("GREETING_SOURCE", raising=False)
    (tmp_path / ".mcp.json").write_text(json.dumps({"mcpServers": {"fake": {
        **STDIO, "env": {"GREETING": "${GREETING_SOURCE:-hello there}"}, "cwd": "sub"}}}))
    manager = McpManager(tmp_path)
    await manager.start()
    try:
        where = await call(manager, "fake:where", {}, tmp_path)
        assert where.text_content == f"{(tmp_path / 'sub').resolve()} hello there"
    finally:
        await manager.aclose()
