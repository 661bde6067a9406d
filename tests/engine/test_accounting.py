"""Tokens and cost per request, per turn (sub-agents included) and per session."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from codingcode_jupyter.engine.events import Usage
from codingcode_jupyter.engine.models.pricing import cost_usd
from codingcode_jupyter.engine.session import Session
from codingcode_jupyter.engine.tools.base import ToolContext, ToolDefinition
from tests.engine.helpers import AllowAll, Recorder, StaticTools, echo_tool, make_deps
from tests.fakes.anthropic_server import Reply, text, tool_use

U1 = {"input_tokens": 1000, "output_tokens": 200, "cache_creation_input_tokens": 3000, "cache_read_input_tokens": 0}
U2 = {"input_tokens": 50, "output_tokens": 400, "cache_creation_input_tokens": 100, "cache_read_input_tokens": 3000}
# claude-sonnet: $3 in, $15 out, $3.75 cache write, $0.30 cache read per million
COST1 = (1000 * 3 + 200 * 15 + 3000 * 3.75) / 1e6
COST2 = (50 * 3 + 400 * 15 + 100 * 3.75 + 3000 * 0.30) / 1e6


class Task(BaseModel):
    task: str


def fake_subagent_tool() -> ToolDefinition:
    """What a dispatch tool does with its child's usage: add it to the parent turn."""

    async def execute(args: Task, ctx: ToolContext) -> str:
        loop = ctx.run
        assert loop is not None
        child = Usage(input_tokens=700, output_tokens=70)
        loop.add_usage(child, cost_usd("claude-haiku-4-5", child))
        return "child finished"

    return ToolDefinition(name="dispatch_agent", description="Run a sub-agent.", parameters=Task, execute=execute, read_only=True)


def new_session(tmp_path, model="claude-sonnet-5", **kw) -> Session:
    return Session(deps=make_deps(tmp_path), tools=StaticTools([echo_tool(), fake_subagent_tool()]), approver=AllowAll(), model_name=model, **kw)


def test_price_table_matches_the_longest_prefix_and_unknown_is_none():
    usage = Usage(input_tokens=1_000_000, output_tokens=1_000_000)
    assert cost_usd("claude-opus-4-5-20251101", usage) == pytest.approx(30.0)
    assert cost_usd("claude-opus-4-1-20250805", usage) == pytest.approx(90.0)
    assert cost_usd("claude-sonnet-4-5", usage) == pytest.approx(18.0)
    assert cost_usd("claude-3-haiku-20240307", usage) == pytest.approx(1.5)
    assert cost_usd("gpt-4o", usage) is None
    assert cost_usd("demo", usage) == 0.0
    cached = Usage(cache_creation_input_tokens=1_000_000, cache_read_input_tokens=1_000_000)
    assert cost_usd("claude-sonnet-4-5", cached) == pytest.approx(3.75 + 0.30)


async def test_usage_per_request_per_turn_and_per_session(fake_api, tmp_path):
    fake_api.add(
        Reply([tool_use("echo", {"text": "x"})], usage=U1),
        Reply([text("done")], usage=U2),
        Reply([text("again")], usage=U1),
    )
    session = new_session(tmp_path)
    events = Recorder()
    done = await session.run_turn("go", events)

    updates = events.of("usage_updated")
    assert [u.request for u in updates] == [Usage(**U1), Usage(**U2)]
    assert updates[0].turn == Usage(**U1) and updates[1].turn == Usage(**U1) + Usage(**U2)
    assert updates[1].cost_usd == pytest.approx(COST1 + COST2)
    assert done.usage == Usage(**U1) + Usage(**U2)
    assert done.cost_usd == pytest.approx(COST1 + COST2)
    assert done.usage.total_input == 1000 + 3000 + 50 + 100 + 3000

    second = await session.run_turn("more")
    assert second.usage == Usage(**U1) and second.cost_usd == pytest.approx(COST1)
    assert session.usage == Usage(**U1) + Usage(**U2) + Usage(**U1)
    assert session.cost == pytest.approx(2 * COST1 + COST2)

    turns = [r for r in session.transcript.records() if r["type"] == "turn"]
    assert [r["cost_usd"] for r in turns] == pytest.approx([COST1 + COST2, COST1])
    resumed = new_session(tmp_path, id=session.id)
    resumed.load()
    assert resumed.usage == session.usage and resumed.cost == pytest.approx(session.cost)


async def test_sub_agent_usage_is_added_to_the_parent_turn(fake_api, tmp_path):
    fake_api.add(
        Reply([tool_use("dispatch_agent", {"task": "look around"})], usage=U1),
        Reply([text("the child said it finished")], usage=U2),
    )
    session = new_session(tmp_path)
    events = Recorder()
    done = await session.run_turn("delegate", events)
    child = Usage(input_tokens=700, output_tokens=70)
    child_cost = (700 * 1 + 70 * 5) / 1e6  # priced as the child's model (haiku), not the parent's
    assert done.usage == Usage(**U1) + Usage(**U2) + child
    assert done.cost_usd == pytest.approx(COST1 + COST2 + child_cost)
    assert session.usage == done.usage and session.cost == pytest.approx(done.cost_usd)
    # the child's tokens are shown as they arrive
    assert any(u.request == child for u in events.of("usage_updated"))


async def test_unknown_model_cost_is_none_not_zero(fake_api, tmp_path):
    fake_api.add(Reply([text("hi")], usage=U1))
    session = new_session(tmp_path, model="some-future-model")
    done = await session.run_turn("hello")
    assert done.usage == Usage(**U1)
    assert done.cost_usd is None
