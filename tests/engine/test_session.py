"""Sessions: transcripts on disk, resume after a restart, model choice."""

from __future__ import annotations

import json

from codingcode_jupyter.engine.session import Session, list_sessions
from codingcode_jupyter.engine.transcript import MessageRecord
from tests.engine.helpers import AllowAll, Recorder, StaticTools, echo_tool, make_deps
from tests.fakes.anthropic_server import Reply, text, tool_use


def new_session(tmp_path, **kw) -> Session:
    return Session(deps=make_deps(tmp_path), tools=StaticTools([echo_tool()]), approver=AllowAll(), model_name="claude-sonnet-5", **kw)


async def test_conversation_continues_and_resumes_from_disk(fake_api, tmp_path):
    fake_api.add(
        Reply([tool_use("echo", {"text": "hi"}, id="t1")]),
        Reply([text("First answer.")]),
        Reply([text("Second answer.")]),
    )
    session = new_session(tmp_path)
    await session.run_turn("first question")
    await session.run_turn("second question")
    # the second turn's request carries the whole first turn
    assert [m["role"] for m in fake_api.requests[-1]["messages"]] == ["user", "assistant", "user", "assistant", "user"]

    # a new process: nothing in memory but the transcript
    resumed = new_session(tmp_path, id=session.id)
    resumed.load()
    assert resumed.conversation.messages == session.conversation.messages
    assert resumed.turns == 2 and resumed.usage == session.usage
    fake_api.add(Reply([text("Third.")]))
    await resumed.run_turn("third question")
    sent = fake_api.requests[-1]["messages"]
    assert sent[0]["content"][0]["text"] == "first question" and sent[-1]["content"][0]["text"] == "third question"

    infos = list_sessions(tmp_path)
    assert [i.id for i in infos] == [session.id]
    assert infos[0].turns == 3 and infos[0].first_prompt == "first question"


async def test_transcript_survives_a_torn_line_and_unanswered_tool_use(tmp_path):
    session = new_session(tmp_path)
    session.transcript.write(MessageRecord(message={"role": "user", "content": "q"}))
    session.transcript.write(
        MessageRecord(message={"role": "assistant", "content": [{"type": "tool_use", "id": "x", "name": "echo", "input": {}}]})
    )
    with open(session.transcript.path, "a") as handle:
        handle.write('{"type": "message", "mess')  # a crash mid-write
    resumed = new_session(tmp_path, id=session.id)
    resumed.load()
    last = resumed.conversation.messages[-1]
    assert last["role"] == "user" and last["content"][0]["tool_use_id"] == "x" and last["content"][0]["is_error"]


async def test_todo_list_is_restored(fake_api, tmp_path):
    from pydantic import BaseModel

    from codingcode_jupyter.engine.events import TodoItem, TodoUpdated
    from codingcode_jupyter.engine.tools.base import ToolDefinition

    class Plan(BaseModel):
        step: str

    async def plan(args, ctx):
        ctx.emit(TodoUpdated(session_id=ctx.session_id, turn_id=ctx.turn_id, items=[TodoItem(step=args.step, status="in_progress")]))
        return "ok"

    tool = ToolDefinition(name="plan", description="plan", parameters=Plan, execute=plan)
    session = Session(deps=make_deps(tmp_path), tools=StaticTools([tool]), approver=AllowAll(), model_name="claude-sonnet-5")
    fake_api.add(Reply([tool_use("plan", {"step": "write tests"})]), Reply([text("ok")]))
    await session.run_turn("x")
    resumed = Session(deps=make_deps(tmp_path), tools=StaticTools([tool]), approver=AllowAll(), id=session.id)
    resumed.load()
    assert resumed.state.todo == [TodoItem(step="write tests", status="in_progress")]
    lines = [json.loads(line) for line in session.transcript.path.read_text().splitlines()]
    assert lines[0]["type"] == "session" and any(line["type"] == "todo" for line in lines)


async def test_no_key_falls_back_to_the_demo_with_a_notice(tmp_path, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    session = Session(deps=make_deps(tmp_path), tools=StaticTools([]), approver=AllowAll())
    events = Recorder()
    done = await session.run_turn("hello", events)
    notice = events.of("notice")[0].text
    assert "ANTHROPIC_API_KEY" in notice and session.last_model == "demo"
    assert done.stop_reason == "end_turn"


async def test_totals_include_the_turn_when_turn_done_is_emitted(fake_api, tmp_path):
    """A front rendering TurnDone shows session totals that already include that turn."""
    fake_api.add(Reply([text("hi")], usage={"input_tokens": 7, "output_tokens": 3}))
    session = new_session(tmp_path)
    seen = []
    await session.run_turn("x", lambda e: seen.append(session.usage.output_tokens) if e.type == "turn_done" else None)
    assert seen == [3] and session.usage.input_tokens == 7


async def test_interrupted_turn_still_counts_its_tokens(fake_api, tmp_path):
    import asyncio

    fake_api.add(Reply([tool_use("echo", {"text": "x", "delay": 30})], usage={"input_tokens": 11, "output_tokens": 2}))
    session = new_session(tmp_path)
    started = asyncio.Event()
    task = asyncio.create_task(session.run_turn("x", lambda e: started.set() if e.type == "tool_call_started" else None))
    await asyncio.wait_for(started.wait(), 10)
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        pass
    assert session.usage.input_tokens == 11
    turns = [r for r in session.transcript.records() if r.get("type") == "turn"]
    assert turns[-1]["stop_reason"] == "interrupted" and turns[-1]["usage"]["input_tokens"] == 11


async def test_the_settings_model_is_the_projects_default_and_a_cell_overrides_it(fake_api, tmp_path):
    from codingcode_jupyter.engine.runtime import open_session
    from codingcode_jupyter.engine.session import TurnOptions
    from tests.engine.helpers import write_settings
    from tests.fakes.anthropic_server import Reply, text

    write_settings(tmp_path, {"model": "claude-project-default"})
    fake_api.add(Reply([text("one")]), Reply([text("two")]), Reply([text("three")]))
    session = open_session(tmp_path)
    try:
        await session.run_turn("hi")
        await session.run_turn("again", options=TurnOptions(model="claude-cell-choice"))
        write_settings(tmp_path, {"model": "claude-edited-default"})  # read when the file changes
        await session.run_turn("once more")
    finally:
        await session.aclose()
    assert [r["model"] for r in fake_api.requests] == ["claude-project-default", "claude-cell-choice",
                                                      "claude-edited-default"]


def test_a_transcript_written_by_the_previous_version_loads(tmp_path):
    """Lines as the version with dict records wrote them (every type), plus one of a type a later
    version might add and a torn line: the session replays them; the unknown one is kept, not replayed."""
    import json as _json

    from codingcode_jupyter.engine.session import list_sessions
    from codingcode_jupyter.engine.transcript import OtherRecord, Transcript, TurnRecord, sessions_dir

    lines = [
        {"ts": 1.0, "type": "session", "id": "20250101-000000-abcd", "created": "2025-01-01T00:00:00+00:00",
         "project": str(tmp_path), "model": "claude-old"},
        {"ts": 2.0, "type": "message", "message": {"role": "user", "content": "first question"}},
        {"ts": 3.0, "type": "message", "message": {"role": "assistant", "content": [
            {"type": "tool_use", "id": "t1", "name": "echo", "input": {"text": "x" * 50}}]}},
        {"ts": 4.0, "type": "message", "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": "y" * 5000}]}]}},
        {"ts": 5.0, "type": "message", "message": {"role": "assistant", "content": [{"type": "text", "text": "done"}]}},
        {"ts": 6.0, "type": "todo", "items": [{"step": "step one", "status": "in_progress"}]},
        {"ts": 7.0, "type": "turn", "turn_id": 1, "model": "claude-old", "stop_reason": "end_turn",
         "usage": {"input_tokens": 10, "output_tokens": 5}, "cost_usd": 0.5},
        {"ts": 8.0, "type": "compaction", "reason": "manual", "arg_limit": 2000, "shortened": ["t1"]},
        {"ts": 9.0, "type": "usage", "reason": "compaction", "usage": {"input_tokens": 3, "output_tokens": 1},
         "cost_usd": 0.25},
        {"ts": 10.0, "type": "bookmark", "name": "a later version's record"},
    ]
    path = sessions_dir(tmp_path) / "20250101-000000-abcd.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("".join(_json.dumps(line) + "\n" for line in lines) + '{"type": "message", "mess')
    session = Session(deps=make_deps(tmp_path), tools=StaticTools([echo_tool()]), approver=AllowAll(),
                      id="20250101-000000-abcd")
    session.load()
    assert session.model_name == "claude-old" and session.turns == 1
    assert session.usage.input_tokens == 13 and session.cost == 0.75
    assert [item.step for item in session.state.todo] == ["step one"]
    messages = session.conversation.messages
    assert [m["role"] for m in messages] == ["user", "assistant", "user", "assistant"]
    assert len(_json.dumps(messages[2])) < 2000  # the compaction record was replayed: the result is a trace
    records = Transcript(path).read()
    assert isinstance(records[-2], OtherRecord) and records[-2].model_extra == {"name": "a later version's record"}
    assert records[-1].type == "corrupt" and isinstance(records[6], TurnRecord)
    info = list_sessions(tmp_path)[0]
    assert (info.model, info.turns, info.first_prompt) == ("claude-old", 1, "first question")
