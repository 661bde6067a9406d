"""The agent loop against the real SDK and the local Messages API server."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from codingcode_jupyter.engine.agent import INTERRUPTED_RESULT, AgentLoop, Conversation
from codingcode_jupyter.engine.models.anthropic import AnthropicModel
from codingcode_jupyter.engine.state import SessionState
from tests.engine.helpers import AllowAll, Recorder, StaticTools, echo_tool, make_deps
from tests.fakes.anthropic_server import HTTPError, Reply, StreamError, text, tool_use
from tests.fakes.model import call, scripted, text as scripted_text
from tests.polling import eventually


def make_loop(tmp_path: Path, tools, **kw) -> tuple[AgentLoop, Recorder]:
    events = Recorder()
    model = kw.pop("model", None) or AnthropicModel("claude-sonnet-5", max_retries=kw.pop("max_retries", 0))
    loop = AgentLoop(
        model=model,
        tools=StaticTools(tools),
        approver=kw.pop("approver", AllowAll()),
        deps=kw.pop("deps", None) or make_deps(tmp_path),
        session_id="s1",
        state=SessionState(),
        system="You are a test.",
        emit=events,
        overload_backoff=0.01,
        **kw,
    )
    return loop, events


async def test_multi_step_tool_conversation(fake_api, tmp_path):
    fake_api.add(
        Reply([text("Let me check."), tool_use("echo", {"text": "one"}, id="t1")]),
        Reply([tool_use("echo", {"text": "two"}, id="t2")]),
        Reply([text("All done.")]),
    )
    loop, events = make_loop(tmp_path, [echo_tool()])
    conversation = Conversation()
    done = await loop.run(conversation, "do it", turn_id=1)
    assert done.stop_reason == "end_turn" and done.steps == 3 and done.text == "All done."
    assert "".join(e.text for e in events.of("text_delta")) == "Let me check.All done."
    # the second request carries the first tool result, the third the second
    second = fake_api.requests[1]["messages"]
    assert second[-1]["content"][0] == {
        "type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": "echo: one"}],
        "cache_control": {"type": "ephemeral"},
    }
    assert fake_api.requests[2]["messages"][-1]["content"][0]["tool_use_id"] == "t2"
    assert [m["role"] for m in conversation.messages] == ["user", "assistant", "user", "assistant", "user", "assistant"]
    assert done.usage.input_tokens == 30 and done.usage.output_tokens == 15
    # tools and system carry cache breakpoints
    assert fake_api.requests[0]["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    assert fake_api.requests[0]["system"][0]["cache_control"] == {"type": "ephemeral"}


async def test_parallel_calls_answered_in_one_message_in_call_order(tmp_path):
    log: list = []
    model = scripted([
        call("echo", {"text": "slow", "delay": 0.3}, id="a"),
        call("echo", {"text": "fast", "delay": 0.0}, id="b"),
        call("echo", {"text": "mid", "delay": 0.1}, id="c"),
    ])
    loop, _ = make_loop(tmp_path, [echo_tool(log=log)], model=model)
    await loop.run(Conversation(), "go", 1)
    answer = model.requests[1].messages[-1]
    assert answer["role"] == "user"
    assert [b["tool_use_id"] for b in answer["content"]] == ["a", "b", "c"]
    # read-only calls ran concurrently: all three started before the slow one ended
    assert [entry[0] for entry in log[:3]] == ["start", "start", "start"]


async def test_mutating_calls_run_in_order(tmp_path):
    log: list = []
    model = scripted([call("write", {"text": "1", "delay": 0.1}, id="a"), call("write", {"text": "2"}, id="b")])
    loop, _ = make_loop(tmp_path, [echo_tool("write", read_only=False, log=log)], model=model)
    await loop.run(Conversation(), "go", 1)
    assert log == [("start", "1"), ("end", "1"), ("start", "2"), ("end", "2")]


async def test_validation_error_returned_as_is_error(tmp_path):
    approver = AllowAll()
    model = scripted([call("echo", {"txt": 3}, id="bad")], [scripted_text("sorry")])
    loop, events = make_loop(tmp_path, [echo_tool()], approver=approver, model=model)
    done = await loop.run(Conversation(), "go", 1)
    result = model.requests[1].messages[-1]["content"][0]
    assert result["is_error"] is True
    assert "Invalid arguments for echo" in result["content"][0]["text"] and "text: Field required" in result["content"][0]["text"]
    assert approver.outcomes == []  # nobody was asked about a call that cannot run
    assert done.stop_reason == "end_turn"


async def test_unknown_tool_is_an_error_result(tmp_path):
    model = scripted([call("nope", {}, id="x")])
    loop, _ = make_loop(tmp_path, [echo_tool()], model=model)
    await loop.run(Conversation(), "go", 1)
    result = model.requests[1].messages[-1]["content"][0]
    assert result["is_error"] and "Unknown tool 'nope'" in result["content"][0]["text"]


async def test_mid_stream_overload_is_retried(fake_api, tmp_path):
    fake_api.add(StreamError("overloaded_error", text_before="Hel"), StreamError("overloaded_error"), Reply([text("Hello")]))
    loop, events = make_loop(tmp_path, [])
    done = await loop.run(Conversation(), "hi", 1)
    assert done.stop_reason == "end_turn" and done.text == "Hello"
    assert len(fake_api.requests) == 3
    assert len([e for e in events.of("notice") if "overloaded" in e.text]) == 2


async def test_overload_gives_up_after_retries(fake_api, tmp_path):
    fake_api.add(*[StreamError("overloaded_error") for _ in range(3)])
    loop, events = make_loop(tmp_path, [], overload_retries=2)
    done = await loop.run(Conversation(), "hi", 1)
    assert done.stop_reason == "error"
    assert "overloaded" in events.of("error")[0].message


async def test_missing_key_is_one_clear_sentence(fake_api, tmp_path, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    loop, events = make_loop(tmp_path, [])
    done = await loop.run(Conversation(), "hi", 1)
    assert done.stop_reason == "error"
    message = events.of("error")[0].message
    assert "ANTHROPIC_API_KEY" in message and "\n" not in message


async def test_rejected_key(fake_api, tmp_path):
    fake_api.add(HTTPError(401, "authentication_error", "invalid x-api-key"))
    loop, events = make_loop(tmp_path, [])
    await loop.run(Conversation(), "hi", 1)
    assert "rejected the key" in events.of("error")[0].message


async def test_server_errors_are_retried_by_the_sdk(fake_api, tmp_path):
    # retry-after-ms: the SDK's own backoff (0.5 s, then 1 s) would only make the test wait.
    fake_api.add(HTTPError(529, "overloaded_error", "busy", retry_after_ms=10), HTTPError(500, retry_after_ms=10),
                 Reply([text("fine")]))
    loop, _ = make_loop(tmp_path, [], max_retries=2)
    done = await loop.run(Conversation(), "hi", 1)
    assert done.text == "fine" and len(fake_api.requests) == 3


async def test_max_steps_ends_a_runaway_turn(fake_api, tmp_path):
    fake_api.default = lambda body: Reply([tool_use("echo", {"text": "again"})])
    loop, events = make_loop(tmp_path, [echo_tool()], max_steps=3)
    conversation = Conversation()
    done = await loop.run(conversation, "loop", 1)
    assert done.stop_reason == "max_steps" and len(fake_api.requests) == 3
    assert "max_steps" in events.of("error")[0].message
    # the next turn is accepted: the trailing tool results and the new prompt merge
    fake_api.default = None
    fake_api.add(Reply([text("ok")]))
    await loop.run(conversation, "next", 2)
    roles = [m["role"] for m in fake_api.requests[-1]["messages"]]
    assert all(a != b for a, b in zip(roles, roles[1:]))


async def test_cancel_mid_tool_leaves_a_valid_transcript(fake_api, tmp_path):
    fake_api.add(Reply([tool_use("echo", {"text": "quick"}, id="q"), tool_use("slow", {"text": "x", "delay": 30}, id="s")]))
    approver = AllowAll()
    loop, events = make_loop(tmp_path, [echo_tool(), echo_tool("slow", read_only=False)], approver=approver)
    conversation = Conversation()
    task = asyncio.create_task(loop.run(conversation, "go", 1))
    await eventually(lambda: any(e.type == "tool_call_started" and e.tool == "slow" for e in events),
                     what="the slow call to start")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    answer = conversation.messages[-1]
    assert answer["role"] == "user"
    by_id = {b["tool_use_id"]: b for b in answer["content"]}
    assert by_id["q"]["content"][0]["text"] == "echo: quick"
    assert by_id["s"]["is_error"] and by_id["s"]["content"][0]["text"] == INTERRUPTED_RESULT
    assert ("s", "interrupted") in approver.outcomes
    assert events.of("turn_done")[-1].stop_reason == "interrupted"
    # the API accepts the conversation next time
    fake_api.add(Reply([text("resumed")]))
    done = await loop.run(conversation, "continue", 2)
    assert done.text == "resumed"
    sent = fake_api.requests[-1]["messages"]
    uses = {b["id"] for m in sent if m["role"] == "assistant" for b in m["content"] if b["type"] == "tool_use"}
    answered = {b["tool_use_id"] for m in sent if m["role"] == "user" for b in m["content"] if b["type"] == "tool_result"}
    assert uses == answered


async def test_cancel_mid_stream(fake_api, tmp_path):
    fake_api.add(Reply([text("a long answer " * 50)], delay=0.05))
    loop, events = make_loop(tmp_path, [])
    conversation = Conversation()
    task = asyncio.create_task(loop.run(conversation, "go", 1))
    await eventually(lambda: events.of("text_delta"), what="the first text delta")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    fake_api.add(Reply([text("again")]))
    done = await loop.run(conversation, "retry", 2)
    assert done.text == "again"
    assert [m["role"] for m in fake_api.requests[-1]["messages"]] == ["user"]


async def test_images_in_a_result_reach_the_front(fake_api, tmp_path):
    from pydantic import BaseModel

    from codingcode_jupyter.engine.tools.base import ToolDefinition, ToolResult

    class NoArgs(BaseModel):
        pass

    png = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}
    svg = {"type": "image", "source": {"type": "base64", "media_type": "image/svg+xml", "data": "PHN2Zz4="}}

    async def plot(args, ctx):
        return ToolResult([{"type": "text", "text": "a plot"}, png, svg])

    tool = ToolDefinition(name="plot", description="Plot.", parameters=NoArgs, execute=plot, read_only=True)
    fake_api.add(Reply([tool_use("plot", {}, id="p")]), Reply([text("ok")]))
    loop, events = make_loop(tmp_path, [tool])
    await loop.run(Conversation(), "plot it", 1)
    finished = events.of("tool_call_finished")[0]
    assert finished.images == [{"media_type": "image/png", "data": "iVBORw0KGgo="}]  # no SVG: scripts hide there
    sent = fake_api.requests[1]["messages"][-1]["content"][0]["content"]
    assert png in sent and svg in sent  # the model still gets every block


async def test_server_side_web_search_replaces_the_client_tool(fake_api, tmp_path):
    """With webSearch.backend "anthropic", web_search is the API's own tool; its blocks pass through."""
    from codingcode_jupyter.engine.tools.web import web_search_tool
    from tests.engine.helpers import make_deps

    search_use = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "ipykernel 7.4"}}
    search_result = {
        "type": "web_search_tool_result", "tool_use_id": "srvtoolu_1",
        "content": [{"type": "web_search_result", "url": "https://example.org/a", "title": "A", "encrypted_content": "x"}],
    }
    fake_api.add(Reply([search_use, search_result, text("It was released.")], stop_reason="end_turn"))
    deps = make_deps(tmp_path, settings={"webSearch": {"backend": "anthropic"}})
    loop, events = make_loop(tmp_path, [web_search_tool()], deps=deps)
    conversation = Conversation()
    done = await loop.run(conversation, "what's new in ipykernel?", 1)
    assert fake_api.requests[0]["tools"][0] == {
        "type": "web_search_20250305", "name": "web_search", "max_uses": 5, "cache_control": {"type": "ephemeral"},
    }
    assert done.stop_reason == "end_turn" and done.text == "It was released."
    assert events.of("tool_call_started") == []  # nothing ran on our side
    kinds = [b["type"] for b in conversation.messages[-1]["content"]]
    assert kinds == ["server_tool_use", "web_search_tool_result", "text"]


async def test_client_web_search_without_the_setting(fake_api, tmp_path):
    from codingcode_jupyter.engine.tools.web import web_search_tool

    fake_api.add(Reply([text("ok")]))
    loop, _ = make_loop(tmp_path, [web_search_tool()])
    await loop.run(Conversation(), "hi", 1)
    assert fake_api.requests[0]["tools"][0]["name"] == "web_search" and "input_schema" in fake_api.requests[0]["tools"][0]


async def test_an_empty_answer_leaves_a_conversation_the_api_accepts(fake_api, tmp_path):
    fake_api.add(Reply([], stop_reason="end_turn"), Reply([text("Now with words.")]))
    loop, _ = make_loop(tmp_path, [])
    conversation = Conversation()
    first = await loop.run(conversation, "hello", 1)
    assert first.stop_reason == "end_turn" and first.text == ""
    await loop.run(conversation, "again", 2)
    sent = fake_api.requests[-1]["messages"]
    assert all(message["content"] for message in sent)
    assert [m["role"] for m in sent] == ["user"]
