"""The front contract (engine/front.py), from the engine's side: a turn and an MCP server reach
the person only through a Front's channels."""

from __future__ import annotations

from pathlib import Path

from codingcode_jupyter.engine.events import ApprovalRequested, TurnDone
from codingcode_jupyter.engine.front import Front
from codingcode_jupyter.engine.mcp.elicitation import ElicitationRequest, ElicitationResponse
from codingcode_jupyter.engine.mcp.manager import McpManager
from tests.fakes.anthropic_server import Reply, text, tool_use
from tests.fakes.front import ScriptedFront


def test_the_test_front_is_a_front():
    assert isinstance(ScriptedFront(), Front)


async def _write_turn(fake_api, project: Path, front: ScriptedFront) -> None:
    from codingcode_jupyter.engine.runtime import open_session

    fake_api.add(Reply([tool_use("write_file", {"path": "note.txt", "content": "hi\n"}, id="w")]), Reply([text("done")]))
    session = open_session(project, model="claude-sonnet-5")
    try:
        await session.run_turn("write a note", front)
    finally:
        await session.aclose()


async def test_a_turn_shows_its_events_and_asks_through_the_front(fake_api, project):
    front = ScriptedFront(["allow"])
    await _write_turn(fake_api, project, front)
    [asked] = front.asked
    assert asked.tool == "write_file"
    assert any(isinstance(e, ApprovalRequested) and e.tool_use_id == "w" for e in front.events)
    assert isinstance(front.events[-1], TurnDone)
    assert (project / "note.txt").read_text() == "hi\n"


async def test_the_fronts_no_is_the_answer(fake_api, project):
    front = ScriptedFront(["deny"])  # the control: the same turn, the other answer
    await _write_turn(fake_api, project, front)
    assert len(front.asked) == 1
    assert not (project / "note.txt").exists()


def _form() -> ElicitationRequest:
    return ElicitationRequest(server="srv", message="Your name?")


async def test_an_mcp_servers_request_for_input_goes_to_the_attached_front(tmp_path):
    manager = McpManager(tmp_path)
    front = ScriptedFront(elicited=ElicitationResponse.accept({"name": "Ada"}))
    manager.attach_front(front)
    try:
        assert await manager.elicit(_form()) == ElicitationResponse.accept({"name": "Ada"})
        assert [r.message for r in front.elicitations] == ["Your name?"]
        manager.detach_front(front)
        # No front: declined, and a notice kept for the next one says so.
        answer = await manager.elicit(_form())
        assert answer.action == "decline" and len(front.elicitations) == 1
        assert any("Declined MCP server srv's request for input" in e.text for e in manager.take_events())
    finally:
        await manager.aclose()
