"""Prompt caching: breakpoints where they belong, and a byte-identical prefix between steps."""

from __future__ import annotations

import json

from pydantic import BaseModel

from codingcode_jupyter.engine.context.session_window import keep_in_window
from codingcode_jupyter.engine.session import Session
from codingcode_jupyter.engine.tools.base import ToolContext, ToolDefinition
from tests.engine.helpers import AllowAll, StaticTools, echo_tool, make_deps
from tests.fakes.anthropic_server import Reply, text, tool_use

CACHE = {"type": "ephemeral"}


def strip(value):
    """The value without cache_control keys (breakpoints move forward; content must not)."""
    if isinstance(value, dict):
        return {k: strip(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [strip(v) for v in value]
    return value


def breakpoints(body: dict) -> list[str]:
    found = []
    for i, tool in enumerate(body.get("tools") or []):
        if "cache_control" in tool:
            found.append(f"tools[{i}]")
    for i, block in enumerate(body.get("system") or []):
        if "cache_control" in block:
            found.append(f"system[{i}]")
    for i, message in enumerate(body["messages"]):
        for j, block in enumerate(message["content"]):
            if "cache_control" in block:
                found.append(f"messages[{i}][{j}]")
    return found


class NoteArgs(BaseModel):
    zebra: str
    apple: int = 1
    mango: list[str] = []


def note_tool() -> ToolDefinition:
    async def execute(args: NoteArgs, ctx: ToolContext) -> str:
        return "noted " + args.zebra * 50

    return ToolDefinition(name="note", description="Take a note.", parameters=NoteArgs, execute=execute, read_only=False)


async def run_session(fake_api, tmp_path, compactor: bool) -> list[dict]:
    fake_api.add(
        Reply([text("one"), tool_use("echo", {"text": "a"}), tool_use("echo", {"text": "b"})]),
        Reply([tool_use("note", {"zebra": "z", "mango": ["m"], "apple": 2})]),
        Reply([text("first turn done")]),
        Reply([tool_use("echo", {"text": "c"})]),
        Reply([text("second turn done")]),
    )
    session = Session(deps=make_deps(tmp_path), tools=StaticTools([echo_tool(), note_tool()]), approver=AllowAll(),
                      model_name="claude-sonnet-5", system="Be careful. " * 30)
    if compactor:
        keep_in_window(session)
    await session.run_turn("first")
    await session.run_turn("second")
    return fake_api.requests


async def check_prefix_and_breakpoints(requests: list[dict]) -> None:
    assert len(requests) == 5
    for before, after in zip(requests, requests[1:]):
        # system and tools: the same bytes, breakpoints included
        assert json.dumps(before["system"]) == json.dumps(after["system"])
        assert json.dumps(before["tools"]) == json.dumps(after["tools"])
        # every message sent before is sent again, byte for byte, at the same place
        old, new = strip(before["messages"]), strip(after["messages"])
        assert len(new) > len(old)
        for i, message in enumerate(old):
            assert json.dumps(message) == json.dumps(new[i]), i
    for body in requests:
        marks = breakpoints(body)
        assert len(marks) <= 4  # the API's limit
        assert f"tools[{len(body['tools']) - 1}]" in marks and "system[0]" in marks
        last = len(body["messages"]) - 1
        assert f"messages[{last}][{len(body['messages'][last]['content']) - 1}]" in marks
        assert body["messages"][last]["content"][-1]["cache_control"] == CACHE
    # from the second request on, where the previous request wrote is marked too (a sure cache read)
    second = requests[1]
    assert breakpoints(second)[-2:] == ["messages[0][0]", "messages[2][1]"]


async def test_consecutive_requests_share_their_prefix_and_carry_breakpoints(fake_api, tmp_path):
    await check_prefix_and_breakpoints(await run_session(fake_api, tmp_path, compactor=False))


async def test_the_compactor_changes_nothing_while_the_conversation_fits(fake_api, tmp_path):
    requests = await run_session(fake_api, tmp_path, compactor=True)
    await check_prefix_and_breakpoints(requests)
    assert not fake_api.count_token_requests  # far from the limit: no counting round trip


def test_tool_schemas_serialise_identically_every_time():
    first = json.dumps([note_tool().to_api(), echo_tool().to_api()])
    second = json.dumps([note_tool().to_api(), echo_tool().to_api()])
    assert first == second
    # keys are canonically ordered when the schema is built, whatever order the fields are declared in
    assert list(note_tool().to_api()["input_schema"]["properties"]) == ["apple", "mango", "zebra"]
