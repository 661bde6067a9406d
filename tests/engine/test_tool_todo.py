"""todo_write: validation, replacing the session's list, and the live event."""

from __future__ import annotations

from pathlib import Path

from codingcode_jupyter.engine.events import TodoUpdated
from codingcode_jupyter.engine.state import SessionState
from codingcode_jupyter.engine.tools.base import ToolContext
from codingcode_jupyter.engine.tools.todo import todo_write_tool

todo_write = todo_write_tool()


def make_ctx(tmp_path: Path, events: list) -> ToolContext:
    return ToolContext.standalone(tmp_path, session_id="s1", turn_id=4, agent="main/explore#1",
                       emit=events.append, state=SessionState())


async def test_replaces_list_emits_event_and_renders(tmp_path):
    events: list = []
    ctx = make_ctx(tmp_path, events)
    plan = [{"step": "read code", "status": "completed"}, {"step": "fix bug", "status": "in_progress"},
            {"step": "run   tests", "status": "pending"}]
    result = await todo_write.run({"plan": plan}, ctx)
    assert not result.is_error, result.text_content
    assert result.text_content == "Plan (1/3 completed):\n[x] read code\n[>] fix bug\n[ ] run tests"
    assert [(i.step, i.status) for i in ctx.state.todo] == [
        ("read code", "completed"), ("fix bug", "in_progress"), ("run tests", "pending")]
    (event,) = [e for e in events if isinstance(e, TodoUpdated)]
    assert (event.session_id, event.turn_id, event.agent) == ("s1", 4, "main/explore#1")
    assert [i.step for i in event.items] == ["read code", "fix bug", "run tests"]
    await todo_write.run({"plan": [{"step": "only", "status": "pending"}]}, ctx)
    assert [i.step for i in ctx.state.todo] == ["only"]


async def test_rejects_two_in_progress_without_changing_state(tmp_path):
    events: list = []
    ctx = make_ctx(tmp_path, events)
    await todo_write.run({"plan": [{"step": "keep", "status": "pending"}]}, ctx)
    plan = [{"step": "a", "status": "in_progress"}, {"step": "b", "status": "in_progress"}]
    result = await todo_write.run({"plan": plan}, ctx)
    assert result.is_error and "at most one step may be in_progress" in result.text_content
    assert [i.step for i in ctx.state.todo] == ["keep"] and len(events) == 1


async def test_rejects_bad_plans_with_clear_messages(tmp_path):
    ctx = make_ctx(tmp_path, [])
    too_many = await todo_write.run({"plan": [{"step": f"s{i}", "status": "pending"} for i in range(21)]}, ctx)
    assert too_many.is_error and "plan" in too_many.text_content and "20" in too_many.text_content
    blank = await todo_write.run({"plan": [{"step": "   ", "status": "pending"}]}, ctx)
    assert blank.is_error and "empty" in blank.text_content
    long = await todo_write.run({"plan": [{"step": "x" * 201, "status": "pending"}]}, ctx)
    assert long.is_error and "200" in long.text_content
    status = await todo_write.run({"plan": [{"step": "a", "status": "done"}]}, ctx)
    assert status.is_error and "status" in status.text_content
    missing = await todo_write.run({}, ctx)
    assert missing.is_error and "plan" in missing.text_content


async def test_empty_plan_clears_and_works_without_state(tmp_path):
    events: list = []
    ctx = ToolContext.standalone(tmp_path, session_id="s", turn_id=1, emit=events.append)
    result = await todo_write.run({"plan": []}, ctx)
    assert not result.is_error and "cleared" in result.text_content
    assert isinstance(events[0], TodoUpdated) and events[0].items == []
