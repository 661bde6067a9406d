"""Servers as a session lives with them: known before they start, started in the background,
slow or hung at start-up without delaying the model, killed mid-session, restarted; and
annotations that only count for approval where the person trusts the server."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import time
from pathlib import Path

import pytest

from codingcode_jupyter.engine.approval.pipeline import ApprovalPipeline
from codingcode_jupyter.engine.approval.types import ToolCall
from codingcode_jupyter.engine.events import McpServerChanged
from codingcode_jupyter.engine.mcp import McpManager
from codingcode_jupyter.engine.runtime import open_session
from tests.engine.mcp_real import FAKE, STDIO_FAKE, by_display, ctx
from tests.fakes.anthropic_server import Reply, text, tool_use
from tests.fakes.front import ScriptedFront
from tests.polling import eventually, wait_until

HUNG = {"command": sys.executable, "args": ["-c", "import sys; sys.stdin.read()"]}


def slow_until(go: Path) -> dict:
    """The fake server, slow to start (not broken): it starts once the file ``go`` exists."""
    code = (f"import os, runpy, sys, time\nwhile not os.path.exists({str(go)!r}): time.sleep(0.02)\n"
            f"sys.argv = ['x', 'stdio']; runpy.run_path({FAKE!r}, run_name='__main__')")
    return {"command": sys.executable, "args": ["-c", code]}


def write_config(project, servers) -> None:
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": servers}))


async def test_configured_servers_are_known_before_anything_starts(tmp_path):
    write_config(tmp_path, {"fake": STDIO_FAKE, "broken": {"command": "${NOT_SET_ANYWHERE_FOR_TEST}"}})
    manager = McpManager(tmp_path)
    statuses = {s.name: s for s in manager.status()}
    assert statuses["fake"].state == "stopped" and statuses["broken"].state == "failed"
    assert "NOT_SET_ANYWHERE_FOR_TEST" in statuses["broken"].error
    assert "fake [stdio] stopped" in manager.describe()
    assert manager.connection("fake")._owner is None  # nothing was started to know this


async def test_a_killed_server_is_noticed_then_one_clear_error_then_it_works(tmp_path):
    write_config(tmp_path, {"fake": STDIO_FAKE})
    manager = McpManager(tmp_path, start_timeout=20)
    try:
        await manager.start()
        pid = int((await by_display(manager)["fake:pid"].run({}, ctx(tmp_path))).text_content)
        os.kill(pid, signal.SIGKILL)
        # Noticed as the server's output closes, before anyone calls it.
        await eventually(lambda: manager.status()[0].state == "failed")
        assert "exited" in manager.status()[0].error and "mcp-fake.log" in manager.status()[0].error
        assert any(isinstance(e, McpServerChanged) and e.state == "failed" for e in manager.take_events())
        after = await by_display(manager)["fake:pid"].run({}, ctx(tmp_path))
        assert after.is_error and "stopped" in after.text_content and "call the tool again" in after.text_content
        again = await by_display(manager)["fake:pid"].run({}, ctx(tmp_path))
        assert not again.is_error and int(again.text_content) != pid
        assert manager.status()[0].state == "running"
    finally:
        await manager.aclose()


@pytest.mark.slow
def hung_with_marker(marker: Path) -> dict:
    """A server that starts (it writes ``marker``) and then never answers."""
    code = f"import sys; open({str(marker)!r}, 'w').close(); sys.stdin.read()"
    return {"command": sys.executable, "args": ["-c", code]}


async def test_servers_start_once_the_model_first_answers_and_a_hung_one_delays_nothing(fake_api, tmp_path):
    marker = tmp_path.parent / f"{tmp_path.name}-hung-started"
    write_config(tmp_path, {"hung": hung_with_marker(marker), "fake": STDIO_FAKE})
    seen = {}

    def first(body):
        seen["spawned"] = marker.exists()
        seen["states"] = [parts.mcp.connection(name).state for name in ("fake", "hung")]
        seen["tools"] = [t["name"] for t in body["tools"]]
        return Reply([text("hello")])

    fake_api.add(first)
    session, parts = open_session(tmp_path, model="claude-sonnet-5")
    try:
        await parts.start()
        assert parts.mcp.take_model_notes() == [
            "(Note: MCP server fake is still starting; its tools will be offered when it is ready.)",
            "(Note: MCP server hung is still starting; its tools will be offered when it is ready.)"]
        assert [s.state for s in parts.mcp.status()] == ["stopped", "stopped"]
        started = time.monotonic()
        done = await session.run_turn("hi")
        assert done.stop_reason == "end_turn" and time.monotonic() - started < 10
        # The first request went out before any server process was spawned, without their tools...
        assert seen["spawned"] is False and seen["states"] == ["stopped", "stopped"]
        assert not any("echo" in t for t in seen["tools"])
        # ...and the answer started them: the hung one is started and still starting (its timeout is 30 s).
        await eventually(marker.exists, what="the fake server to be spawned")
        await eventually(lambda: parts.mcp.connection("fake").state == "running", what="the fake server to run")
        assert parts.mcp.connection("hung").state == "starting"
        [note] = parts.mcp.take_model_notes()
        assert note.startswith("(Note: MCP server fake is now running; its tools are offered: fake:")
    finally:
        await parts.aclose()


async def test_a_slow_servers_tools_join_the_turn_when_it_is_ready(fake_api, tmp_path):
    go = tmp_path / "go"
    write_config(tmp_path, {"slow": slow_until(go)})
    (tmp_path / "notes.txt").write_text("a note\n")
    states = []

    def read_something(body):
        states.append(parts.mcp.status()[0].state)
        return Reply([tool_use("read_file", {"path": "notes.txt"}, id="r1")])

    def wait_for_slow(body):
        # The model answered once: the server is starting. Let it finish, then ask once more.
        go.touch()
        # On the fake API server's thread (the loop keeps running). Not raising on a timeout: a
        # handler that raises only drops the connection; the assertions after the turn say what failed.
        with contextlib.suppress(AssertionError):
            wait_until(lambda: parts.mcp.connection("slow").state == "running", 20, "the slow server to run")
        return Reply([tool_use("read_file", {"path": "notes.txt"}, id="r2")])

    fake_api.add(read_something, wait_for_slow, Reply([tool_use("slow__echo", {"text": "ready now"}, id="e1")]),
                 Reply([text("done")]))
    session, parts = open_session(tmp_path, model="claude-sonnet-5")
    front = ScriptedFront()
    parts.mcp.attach_front(front)
    try:
        await parts.start()
        assert parts.mcp.take_model_notes() == ["(Note: MCP server slow is still starting; its tools will be offered "
                                                "when it is ready.)"]
        done = await session.run_turn("echo something", ask=None)
        assert done.stop_reason == "end_turn"
        first, second, third, _ = fake_api.requests
        assert states == ["stopped"]  # held until the model's first answer
        assert "slow__echo" not in [t["name"] for t in first["tools"]] + [t["name"] for t in second["tools"]]
        assert "slow__echo" in [t["name"] for t in third["tools"]]
        assert any(isinstance(e, McpServerChanged) and e.state == "running" and e.server == "slow" for e in front.events)
        [note] = parts.mcp.take_model_notes()
        assert note.startswith("(Note: MCP server slow is now running; its tools are offered: slow:echo")
    finally:
        await parts.aclose()


async def test_restart_and_describe_tools(tmp_path):
    write_config(tmp_path, {"fake": STDIO_FAKE})
    manager = McpManager(tmp_path, start_timeout=20)
    try:
        await manager.start()
        first = (await by_display(manager)["fake:pid"].run({}, ctx(tmp_path))).text_content
        status = await manager.restart("fake")
        assert status.state == "running"
        assert (await by_display(manager)["fake:pid"].run({}, ctx(tmp_path))).text_content != first
        listing = manager.describe_tools("fake")
        assert "fake:echo" in listing and "readOnlyHint=True" in listing and "not trusted" in listing
        assert "read-only (trusted)" not in listing
    finally:
        await manager.aclose()


async def test_read_only_hint_counts_for_approval_only_when_trusted(tmp_path):
    write_config(tmp_path, {"plain": STDIO_FAKE, "trusted": {**STDIO_FAKE, "trustAnnotations": True}})
    manager = McpManager(tmp_path, start_timeout=20)
    pipeline = ApprovalPipeline(tmp_path, audit=False)
    try:
        await manager.start()
        tools = by_display(manager)
        assert not tools["plain:echo"].read_only and tools["trusted:echo"].read_only
        # A hint never loosens anything else: destructive or unannotated tools stay asked.
        assert not tools["trusted:crash"].read_only and not tools["trusted:pid"].read_only
        plain = await pipeline.evaluate(ToolCall(tool_use_id="a", tool=tools["plain:echo"], input={"text": "x"}), ctx(tmp_path))
        trusted = await pipeline.evaluate(ToolCall(tool_use_id="b", tool=tools["trusted:echo"], input={"text": "x"}), ctx(tmp_path))
        assert plain.kind == "ask"
        assert trusted.kind == "allow" and trusted.layer == "readonly"
        assert "read-only (trusted)" in manager.describe_tools("trusted")
    finally:
        await manager.aclose()
