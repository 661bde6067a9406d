"""Servers as a session lives with them: known before they start, started in the background as
the session opens, waited for by a turn up to a bound (a hung one delays it no longer), killed
mid-session, restarted; and
annotations that only count for approval where the person trusts the server."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
from pathlib import Path

import pytest

from codingcode_jupyter.engine.approval.pipeline import ApprovalPipeline
from codingcode_jupyter.engine.events import McpServerChanged, McpWaiting
from codingcode_jupyter.engine.mcp.manager import McpManager
from codingcode_jupyter.engine.runtime import open_session
from codingcode_jupyter.engine.tools.base import ToolCall
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


@pytest.mark.slow
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
        # Why it stopped, as it was when it stopped (not the new start's empty error: "stopped (None)").
        assert "stopped (the server exited" in after.text_content and "None" not in after.text_content
        again = await by_display(manager)["fake:pid"].run({}, ctx(tmp_path))
        assert not again.is_error and int(again.text_content) != pid
        assert manager.status()[0].state == "running"
    finally:
        await manager.aclose()


def hung_with_marker(marker: Path) -> dict:
    """A server that starts (it writes ``marker``) and then never answers."""
    code = f"import sys; open({str(marker)!r}, 'w').close(); sys.stdin.read()"
    return {"command": sys.executable, "args": ["-c", code]}


def wait_bound(project: Path, seconds: float) -> None:
    (project / ".codingcode").mkdir(exist_ok=True)
    (project / ".codingcode" / "settings.json").write_text(json.dumps({"mcpStartupWaitSeconds": seconds}))


@pytest.mark.slow
async def test_a_hung_server_delays_the_turn_only_up_to_the_bound_with_a_notice(fake_api, tmp_path):
    marker = tmp_path.parent / f"{tmp_path.name}-hung-started"
    write_config(tmp_path, {"hung": hung_with_marker(marker), "fake": STDIO_FAKE})
    wait_bound(tmp_path, 1.0)
    seen = []

    def answer(body):
        seen.append({"states": [session.mcp.connection(name).state for name in ("fake", "hung")],
                     "tools": [t["name"] for t in body["tools"]], "first": json.dumps(body["messages"][0])})
        return Reply([text("hello")])

    fake_api.add(answer, answer)
    session = open_session(tmp_path, model="claude-sonnet-5")
    try:
        # Started as the session opens, not held back for the model's first answer.
        await eventually(marker.exists, 30, "the hung server to be spawned")
        await eventually(lambda: session.mcp.connection("fake").state == "running", 30, "the fake server to run")
        events = []
        done = await session.run_turn("hi", events.append)
        assert done.stop_reason == "end_turn"
        [request] = seen
        # The request carries the ready server's tools; it went out while the hung one was still
        # starting (its start timeout is 30 s): the turn waited for the bound, not for the server.
        assert "fake__echo" in request["tools"] and request["states"] == ["running", "starting"]
        assert not any(t.startswith("hung__") for t in request["tools"])
        waits = [e for e in events if isinstance(e, McpWaiting)]
        assert [(w.servers, w.done) for w in waits] == [(["hung"], False), (["hung"], True)]
        assert "Waiting for MCP server hung to start (up to 1 s" in waits[0].text
        assert "hung not ready after 1 s" in waits[1].text
        # The model is told which server is on its way.
        assert "MCP server hung is still starting" in request["first"]
        # The same start is not waited for again by the next turn.
        events.clear()
        await session.run_turn("again", events.append)
        assert not [e for e in events if isinstance(e, McpWaiting)]
        assert session.mcp.connection("hung").state == "starting"
    finally:
        await session.aclose()


@pytest.mark.slow
async def test_a_server_still_starting_is_waited_for_and_its_tools_are_in_the_first_request(fake_api, tmp_path):
    go = tmp_path / "go"
    write_config(tmp_path, {"slow": slow_until(go)})
    wait_bound(tmp_path, 60)  # what is checked is that the turn waits, not how fast this machine starts Python
    seen = []
    fake_api.add(lambda body: seen.append([t["name"] for t in body["tools"]]) or Reply([text("hi")]))
    session = open_session(tmp_path, model="claude-sonnet-5")
    events = []
    try:
        asyncio.get_running_loop().call_later(0.5, go.touch)  # it starts half a second into the wait
        done = await session.run_turn("echo something", events.append)
        assert done.stop_reason == "end_turn"
        assert "slow__echo" in seen[0]
        waits = [e for e in events if isinstance(e, McpWaiting)]
        assert [(w.servers, w.done) for w in waits] == [(["slow"], False)]
    finally:
        await session.aclose()


async def test_a_failed_server_is_not_waited_for(fake_api, tmp_path):
    write_config(tmp_path, {"broken": {"command": sys.executable, "args": ["-c", "raise SystemExit(3)"]}})
    wait_bound(tmp_path, 30)
    fake_api.add(Reply([text("hi")]))
    session = open_session(tmp_path, model="claude-sonnet-5")
    front = ScriptedFront()
    session.mcp.attach_front(front)
    try:
        await eventually(lambda: session.mcp.connection("broken").state == "failed", 30, "the broken server to fail")
        events = []
        await session.run_turn("hi", events.append)
        assert not [e for e in events if isinstance(e, McpWaiting)]
        assert any(isinstance(e, McpServerChanged) and e.state == "failed" for e in front.events)
        assert "MCP server broken is not running" in json.dumps(fake_api.requests[0]["messages"][0])
    finally:
        await session.aclose()


@pytest.mark.slow
async def test_a_slow_servers_tools_join_the_turn_when_it_is_ready(fake_api, tmp_path):
    go = tmp_path / "go"
    write_config(tmp_path, {"slow": slow_until(go)})
    wait_bound(tmp_path, 0.3)
    (tmp_path / "notes.txt").write_text("a note\n")
    states = []

    def read_something(body):
        states.append(session.mcp.status()[0].state)
        return Reply([tool_use("read_file", {"path": "notes.txt"}, id="r1")])

    def wait_for_slow(body):
        # The model answered once: the server is starting. Let it finish, then ask once more.
        go.touch()
        # On the fake API server's thread (the loop keeps running). Not raising on a timeout: a
        # handler that raises only drops the connection; the assertions after the turn say what failed.
        with contextlib.suppress(AssertionError):
            wait_until(lambda: session.mcp.connection("slow").state == "running", 20, "the slow server to run")
        return Reply([tool_use("read_file", {"path": "notes.txt"}, id="r2")])

    fake_api.add(read_something, wait_for_slow, Reply([tool_use("slow__echo", {"text": "ready now"}, id="e1")]),
                 Reply([text("done")]))
    session = open_session(tmp_path, model="claude-sonnet-5")
    front = ScriptedFront()
    session.mcp.attach_front(front)
    try:
        await session.start()
        events = []
        done = await session.run_turn("echo something", events.append)
        assert done.stop_reason == "end_turn"
        first, second, third, _ = fake_api.requests
        assert states == ["starting"]  # started with the session; not ready within the bound
        assert [(w.servers, w.done) for w in events if isinstance(w, McpWaiting)][-1] == (["slow"], True)
        assert "slow__echo" not in [t["name"] for t in first["tools"]] + [t["name"] for t in second["tools"]]
        assert "slow__echo" in [t["name"] for t in third["tools"]]
        assert "MCP server slow is still starting" in json.dumps(first["messages"][0])
        assert any(isinstance(e, McpServerChanged) and e.state == "running" and e.server == "slow" for e in front.events)
        # The model is told in its next request, beside the tool results.
        told = json.dumps(third["messages"][-1])
        assert "MCP server slow is now running; its tools are offered: slow:echo" in told
        assert session.mcp.take_model_notes() == []
    finally:
        await session.aclose()


@pytest.mark.slow
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


@pytest.mark.slow
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
