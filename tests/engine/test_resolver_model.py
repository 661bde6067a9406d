"""The model's side: the exact tools block of every request through the real agent loop.

The loop runs against the local Messages API server with a real MCP server (stdio) behind
the resolver: deferred tools are absent until tool_search finds them, a call to one before
that is refused, and every name sent is valid on the wire.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
import pytest_asyncio

from codingcode_jupyter.engine.agent import AgentLoop, Conversation
from codingcode_jupyter.engine.mcp.manager import McpManager
from codingcode_jupyter.engine.models.anthropic import AnthropicModel
from codingcode_jupyter.engine.state import SessionState
from codingcode_jupyter.engine.tools.registry import ToolRegistry
from codingcode_jupyter.engine.tools.resolver import SessionToolResolver, ToolVisibilityPolicy
from tests.engine.helpers import AllowAll, Recorder, echo_tool, make_deps
from tests.fakes.anthropic_server import Reply, text, tool_use
from tests.polling import eventually

FAKE = str(Path(__file__).resolve().parents[1] / "fakes" / "mcp_server.py")
WIRE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
FAKE_TOOLS = ["add_tool", "audio", "crash", "echo", "embedded", "fail", "image", "link", "pid", "slow", "structured", "where"]


def tool_names(request: dict) -> list[str]:
    names = [tool["name"] for tool in request["tools"]]
    assert all(WIRE.match(name) for name in names), names
    assert len(names) == len(set(names))
    return names


# Both tests use the servers of one manager (each start costs ~1 s), so they run in its loop.
# The first adds a tool to `fake`; the second's policy offers none that name could match.
pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def manager(tmp_path_factory):
    project = tmp_path_factory.mktemp("servers")
    stdio = {"command": sys.executable, "args": [FAKE, "stdio"]}
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {"fake": stdio, "lazy": {**stdio, "deferred": True}}}))
    manager = McpManager(project)
    await manager.start()
    yield manager
    await manager.aclose()


def make_loop(tmp_path, resolver, state) -> tuple[AgentLoop, Recorder]:
    events = Recorder()
    loop = AgentLoop(
        model=AnthropicModel("claude-sonnet-5", max_retries=0),
        tools=resolver,
        approver=AllowAll(),
        deps=make_deps(tmp_path),
        session_id="s1",
        state=state,
        emit=events,
    )
    return loop, events


@pytest.mark.slow
async def test_exact_tool_list_of_each_request(fake_api, manager, tmp_path):
    state = SessionState()
    registry = ToolRegistry([echo_tool("echo")])
    resolver = SessionToolResolver(registry, state=state, mcp=manager)
    fake_api.add(
        Reply([tool_use("fake__echo", {"text": "hi"}, id="a"), tool_use("lazy__pid", {}, id="b")]),
        Reply([tool_use("tool_search", {"query": "process id", "max_results": 1}, id="c")]),
        Reply([tool_use("lazy__pid", {}, id="d")]),
        Reply([tool_use("fake__add_tool", {}, id="e")]),
        Reply([text("first turn done")]),
        Reply([tool_use("fake__late", {"x": 3}, id="f")]),
        Reply([text("second turn done")]),
    )
    loop, _ = make_loop(tmp_path, resolver, state)
    conversation = Conversation()
    done = await loop.run(conversation, "go", turn_id=1)
    assert done.text == "first turn done"

    before = ["echo"] + [f"fake__{name}" for name in FAKE_TOOLS] + ["tool_search"]
    after = ["echo"] + [f"fake__{name}" for name in FAKE_TOOLS] + ["lazy__pid", "tool_search"]
    requests = fake_api.requests
    assert [tool_names(r) for r in requests[:3]] == [before, before, after]
    assert tool_names(requests[3]) == after

    # A call to a deferred tool before it was found is refused; the visible one ran.
    results = {b["tool_use_id"]: b for b in requests[1]["messages"][-1]["content"]}
    assert results["a"]["content"][0]["text"] == "echo: hi" and not results["a"].get("is_error")
    assert results["b"]["is_error"] and "Unknown tool" in results["b"]["content"][0]["text"]
    search = requests[2]["messages"][-1]["content"][0]
    assert "lazy__pid (lazy:pid)" in search["content"][0]["text"]
    pid = requests[3]["messages"][-1]["content"][0]
    assert pid["content"][0]["text"].isdigit() and not pid.get("is_error")
    # The tools block sent with each request is an unchanged prefix when the set is unchanged.
    assert requests[0]["tools"] == requests[1]["tools"]

    # list_changed: the next request (once the server's notification is in) offers the new tool.
    await eventually(lambda: "fake__late" in [t.name for t in resolver.offered()], what="the late tool to be offered")
    done = await loop.run(conversation, "again", turn_id=2)
    assert done.text == "second turn done"
    late = ["echo"] + [f"fake__{name}" for name in sorted(FAKE_TOOLS + ["late"])] + ["lazy__pid", "tool_search"]
    assert tool_names(fake_api.requests[5]) == late
    assert fake_api.requests[6]["messages"][-1]["content"][0]["content"][0]["text"] == "late 3"


async def test_policy_shapes_the_request(fake_api, manager, tmp_path):
    state = SessionState()
    policy = ToolVisibilityPolicy(allowed_tools={"echo", "fake:e*", "lazy:*"}, allow_tool_search=False)
    resolver = SessionToolResolver(ToolRegistry([echo_tool("echo")]), state=state, mcp=manager, policy=policy)
    fake_api.add(Reply([tool_use("fake__image", {}, id="x")]), Reply([text("ok")]))
    loop, _ = make_loop(tmp_path, resolver, state)
    await loop.run(Conversation(), "go", turn_id=1)
    # No tool_search, so the deferred server stays unreachable; only the allowed names go out.
    assert tool_names(fake_api.requests[0]) == ["echo", "fake__echo", "fake__embedded"]
    refused = fake_api.requests[1]["messages"][-1]["content"][0]
    assert refused["is_error"] and "Unknown tool" in refused["content"][0]["text"]
