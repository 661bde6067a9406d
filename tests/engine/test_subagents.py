"""dispatch_agent through the real SDK and the local Messages API server.

The server routes every request by its conversation: the first user message tells which
agent sent it (the parent's prompt or the task given to a child), the number of assistant
messages so far tells which step it is at. So concurrent children get the right replies
whatever order their requests arrive in.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any, Callable

import pytest

from codingcode_jupyter.engine.agent import INTERRUPTED_RESULT, AgentLoop, Conversation
from codingcode_jupyter.engine.agents.dispatch import profile_resolver, profile_system_prompt
from codingcode_jupyter.engine.agents.env import DispatchEnv
from codingcode_jupyter.engine.agents.profiles import load_profiles
from codingcode_jupyter.engine.approval.types import Verdict
from codingcode_jupyter.engine.models.anthropic import AnthropicModel
from codingcode_jupyter.engine.state import SessionState
from codingcode_jupyter.engine.tools.files import read_file_tool, write_file_tool
from codingcode_jupyter.engine.tools.registry import ToolRegistry
from codingcode_jupyter.engine.tools.search import search_code_tool, search_files_tool
from codingcode_jupyter.engine.transcript import sessions_dir
from tests.engine.helpers import AllowAll, Recorder, echo_tool, make_deps
from tests.fakes.anthropic_server import Reply, text, tool_use
from tests.polling import eventually

Script = list[Callable[[dict[str, Any]], Reply] | Reply]


def first_text(body: dict[str, Any]) -> str:
    content = body["messages"][0]["content"]
    return content if isinstance(content, str) else content[0]["text"]


def system_text(body: dict[str, Any]) -> str:
    return "".join(block["text"] for block in body.get("system", []))


def router(scripts: dict[str, Script]) -> Callable[[dict[str, Any]], Reply]:
    def route(body: dict[str, Any]) -> Reply:
        key = next(k for k in scripts if k in first_text(body))
        step = sum(1 for m in body["messages"] if m["role"] == "assistant")
        reply = scripts[key][step]
        return reply(body) if callable(reply) and not isinstance(reply, Reply) else reply

    return route


def write_profile(project: Path, name: str, front: str, body: str = "You are a test sub-agent.") -> Path:
    directory = project / ".codingcode" / "agents"
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}.md"
    path.write_text(f"---\n{front}\n---\n{body}\n", encoding="utf-8")
    return path


class Parent:
    """A main agent wired as the runtime wires it: profile resolver, dispatch env, prompt."""

    def __init__(self, project: Path, approver: Any = None, extra_tools: list | None = None, mode: str = "default") -> None:
        self.project = project
        self.events = Recorder()
        self.approver = approver or AllowAll()
        registry = ToolRegistry(
            [read_file_tool(), write_file_tool(), search_code_tool(), search_files_tool(), *(extra_tools or [])]
        )
        home = project / "_home"
        self.env = DispatchEnv(
            project=project,
            registry=registry,
            catalog=lambda: load_profiles(project, home=home),
            model_factory=lambda name: AnthropicModel(name, max_retries=0),
        )
        catalog = self.env.catalog()
        self.loop = AgentLoop(
            model=AnthropicModel("claude-sonnet-5", max_retries=0),
            tools=profile_resolver(registry, None, state=SessionState(), can_dispatch=True),
            approver=self.approver,
            session_id="parent-session",
            state=SessionState(),
            system=profile_system_prompt(project, None, self.env.dispatchable(catalog, 0, None)),
            emit=self.events,
            deps=make_deps(project, dispatch=self.env),
            mode=mode,  # type: ignore[arg-type]
        )
        self.conversation = Conversation()

    async def run(self, prompt: str, turn_id: int = 1):
        return await self.loop.run(self.conversation, prompt, turn_id)


def tool_names(body: dict[str, Any]) -> list[str]:
    return [tool["name"] for tool in body.get("tools", [])]


async def test_child_has_its_own_prompt_context_and_tools(fake_api, tmp_path):
    (tmp_path / "notes.txt").write_text("the secret is 42\n")
    fake_api.default = router({
        "PARENT": [
            Reply([text("Delegating."), tool_use("dispatch_agent", {"agent": "explore", "prompt": "CHILD: find the secret"}, id="d1")]),
            Reply([text("The secret is 42.")]),
        ],
        "CHILD": [
            Reply([tool_use("read_file", {"path": "notes.txt"}, id="r1")], usage={"input_tokens": 100, "output_tokens": 7}),
            Reply([text("notes.txt:1 says the secret is 42")], usage={"input_tokens": 200, "output_tokens": 9}),
        ],
    })
    parent = Parent(tmp_path)
    done = await parent.run("PARENT: what is the secret?")
    assert done.stop_reason == "end_turn" and done.text == "The secret is 42."

    parent_requests = [r for r in fake_api.requests if "PARENT" in first_text(r)]
    child_requests = [r for r in fake_api.requests if "CHILD" in first_text(r)]
    assert len(parent_requests) == 2 and len(child_requests) == 2
    # The main agent's prompt lists the profiles; it is offered dispatch_agent.
    assert "- explore: " in system_text(parent_requests[0]) and "- plan: " in system_text(parent_requests[0])
    assert "dispatch_agent" in tool_names(parent_requests[0])
    # The child: its profile's prompt, only its profile's tools, none of the parent's conversation.
    child_system = system_text(child_requests[0])
    assert child_system.startswith("You are explore") and "main/explore#1" in child_system
    assert "You are codingcode" not in child_system and "Sub-agents:" not in child_system
    assert sorted(tool_names(child_requests[0])) == ["read_file", "search_code", "search_files"]
    assert [m["role"] for m in child_requests[0]["messages"]] == ["user"]
    assert first_text(child_requests[0]) == "CHILD: find the secret"
    assert "the secret is 42" in json.dumps(child_requests[1]["messages"][-1])  # the real read_file ran
    # The child's final message is the tool result the parent reads.
    result = parent_requests[1]["messages"][-1]["content"][0]
    assert result["tool_use_id"] == "d1" and not result.get("is_error")
    assert result["content"][0]["text"] == "notes.txt:1 says the secret is 42"
    # Its tokens count into the parent's turn (parent: 2 x 10 in / 5 out).
    assert done.usage.input_tokens == 20 + 300 and done.usage.output_tokens == 10 + 16
    assert done.cost_usd == pytest.approx((320 * 3.0 + 26 * 15.0) / 1_000_000)
    # Its events stream through the parent's sink, labelled with its name and the parent session.
    child_events = [e for e in parent.events if e.agent == "main/explore#1"]
    assert {e.type for e in child_events} >= {"turn_started", "text_delta", "tool_call_started", "turn_done"}
    assert all(e.session_id == "parent-session" for e in child_events)
    assert any("main/explore#1" in e.text for e in parent.events.of("tool_progress") if e.tool_use_id == "d1")
    assert ("r1", "ok") in parent.approver.outcomes and ("d1", "ok") in parent.approver.outcomes
    # Its conversation is kept next to the session's transcript, not in it.
    saved = sessions_dir(tmp_path) / "parent-session" / "agents" / "main__explore-1.jsonl"
    records = [json.loads(line) for line in saved.read_text().splitlines()]
    assert records[0]["type"] == "subagent" and records[0]["parent_tool_use_id"] == "d1"
    assert records[-1]["type"] == "turn" and records[-1]["stop_reason"] == "end_turn"


class DenyWrites(AllowAll):
    """Denies write_file, as a person clicking Deny would; remembers who asked."""

    def __init__(self) -> None:
        super().__init__()
        self.asked: list[tuple[str, str, str]] = []

    async def decide(self, call, ctx, ask) -> Verdict:
        self.asked.append((call.definition.name, ctx.agent, ctx.session_id))
        if call.definition.name == "write_file":
            return Verdict(kind="deny", reason="The user denied write_file.", layer="user", by="user")
        return await super().decide(call, ctx, ask)


async def test_denied_tool_inside_a_child(fake_api, tmp_path):
    write_profile(tmp_path, "writer", "description: Writes files.\ntools: [write_file, read_file]")
    fake_api.default = router({
        "PARENT": [
            Reply([tool_use("dispatch_agent", {"agent": "writer", "prompt": "CHILD: write x.txt"}, id="d1")]),
            Reply([text("It could not write.")]),
        ],
        "CHILD": [
            Reply([tool_use("write_file", {"path": "x.txt", "content": "hi"}, id="w1")]),
            Reply([text("I was not allowed to write x.txt.")]),
        ],
    })
    approver = DenyWrites()
    parent = Parent(tmp_path, approver=approver)
    await parent.run("PARENT: make x.txt")
    assert not (tmp_path / "x.txt").exists()
    assert ("write_file", "main/writer#1", "parent-session") in approver.asked
    child_second = [r for r in fake_api.requests if "CHILD" in first_text(r)][1]
    denied = child_second["messages"][-1]["content"][0]
    assert denied["is_error"] and denied["content"][0]["text"] == "The user denied write_file."
    assert ("w1", "denied") in approver.outcomes
    finished = [e for e in parent.events.of("tool_call_finished") if e.tool_use_id == "w1"]
    assert finished[0].status == "denied" and finished[0].agent == "main/writer#1"
    parent_second = [r for r in fake_api.requests if "PARENT" in first_text(r)][1]
    assert parent_second["messages"][-1]["content"][0]["content"][0]["text"] == "I was not allowed to write x.txt."


async def test_profile_plan_mode_denies_writes_even_when_the_session_allows(fake_api, tmp_path):
    write_profile(tmp_path, "sneaky", "description: x\ntools: [write_file]\npermission_mode: plan")
    fake_api.default = router({
        "PARENT": [Reply([tool_use("dispatch_agent", {"agent": "sneaky", "prompt": "CHILD: go"}, id="d1")]), Reply([text("ok")])],
        "CHILD": [Reply([tool_use("write_file", {"path": "y.txt", "content": "x"}, id="w1")]), Reply([text("denied")])],
    })
    from codingcode_jupyter.engine.approval.pipeline import ApprovalPipeline

    # A bypass session: only the profile's mode stands in the way.
    parent = Parent(tmp_path, approver=ApprovalPipeline(tmp_path, audit=False), mode="bypass")
    await parent.run("PARENT: go")
    assert not (tmp_path / "y.txt").exists()
    child_second = [r for r in fake_api.requests if "CHILD" in first_text(r)][1]
    result = child_second["messages"][-1]["content"][0]
    assert result["is_error"] and "plan mode" in result["content"][0]["text"]


async def test_a_project_profile_cannot_loosen_the_mode(fake_api, tmp_path):
    write_profile(tmp_path, "loose", "description: x\ntools: [read_file]\npermission_mode: bypass")
    fake_api.default = router({
        "PARENT": [Reply([tool_use("dispatch_agent", {"agent": "loose", "prompt": "CHILD: go"}, id="d1")]), Reply([text("ok")])],
        "CHILD": [Reply([tool_use("read_file", {"path": "nothing.txt"})]), Reply([text("done")])],
    })
    approver = DenyWrites()
    parent = Parent(tmp_path, approver=approver, mode="plan")
    seen: list[Any] = []
    original = approver.decide

    async def spy(call, ctx, ask):
        seen.append((call.definition.name, ctx.mode))
        return await original(call, ctx, ask)

    approver.decide = spy  # type: ignore[method-assign]
    await parent.run("PARENT: go")
    # The child's read_file is judged in the session's plan mode, not its profile's bypass.
    assert seen == [("dispatch_agent", "plan"), ("read_file", "plan")]


async def test_two_children_run_in_parallel(fake_api, tmp_path):
    log: list[tuple[str, str]] = []
    write_profile(tmp_path, "worker", "description: Echoes.\ntools: [echo]")
    fake_api.default = router({
        "PARENT": [
            Reply([
                tool_use("dispatch_agent", {"agent": "worker", "prompt": "ALPHA task"}, id="da"),
                tool_use("dispatch_agent", {"agent": "worker", "prompt": "BETA task"}, id="db"),
            ]),
            Reply([text("both done")]),
        ],
        "ALPHA": [Reply([tool_use("echo", {"text": "A", "delay": 0.4})]), Reply([text("alpha answer")])],
        "BETA": [Reply([tool_use("echo", {"text": "B", "delay": 0.4})]), Reply([text("beta answer")])],
    })
    parent = Parent(tmp_path, extra_tools=[echo_tool(log=log)])
    done = await parent.run("PARENT: do both")
    assert done.text == "both done"
    # Both children were working before either finished.
    assert [entry[0] for entry in log[:2]] == ["start", "start"]
    answer = [r for r in fake_api.requests if "PARENT" in first_text(r)][1]["messages"][-1]["content"]
    assert [(b["tool_use_id"], b["content"][0]["text"]) for b in answer] == [("da", "alpha answer"), ("db", "beta answer")]
    names = {e.agent for e in parent.events.of("turn_started")} - {"main"}
    assert names == {"main/worker#1", "main/worker#2"}
    # Each child's stream is its own.
    for name in names:
        streamed = "".join(e.text for e in parent.events.of("text_delta") if e.agent == name)
        assert streamed in ("alpha answer", "beta answer")
    assert done.usage.input_tokens == 20 + 40  # two parent requests + two requests per child


async def test_interrupt_during_a_child_cancels_it_and_keeps_transcripts_valid(fake_api, tmp_path):
    write_profile(tmp_path, "slowpoke", "description: Slow.\ntools: [echo]")
    fake_api.default = router({
        "PARENT": [
            Reply([tool_use("dispatch_agent", {"agent": "slowpoke", "prompt": "CHILD: wait"}, id="d1")]),
            Reply([text("resumed fine")]),
        ],
        "CHILD": [Reply([tool_use("echo", {"text": "zzz", "delay": 30}, id="e1")])],
    })
    parent = Parent(tmp_path, extra_tools=[echo_tool()])
    task = asyncio.create_task(parent.run("PARENT: start"))
    await eventually(lambda: any(e.type == "tool_call_started" and e.agent == "main/slowpoke#1" for e in parent.events),
                     what="the child to start its tool call")
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, 5)
    # The child was cancelled: its call and its turn ended as interrupted.
    child_finished = [e for e in parent.events.of("tool_call_finished") if e.agent == "main/slowpoke#1"]
    assert child_finished and child_finished[0].status == "interrupted"
    child_done = [e for e in parent.events.of("turn_done") if e.agent == "main/slowpoke#1"]
    assert child_done and child_done[0].stop_reason == "interrupted"
    # The parent's transcript answers the dispatch call.
    last = parent.conversation.messages[-1]
    assert last["role"] == "user" and last["content"][0]["tool_use_id"] == "d1"
    assert last["content"][0]["is_error"] and last["content"][0]["content"][0]["text"] == INTERRUPTED_RESULT
    # The child's own transcript is valid too.
    saved = sessions_dir(tmp_path) / "parent-session" / "agents" / "main__slowpoke-1.jsonl"
    messages = [json.loads(line)["message"] for line in saved.read_text().splitlines() if '"message"' in line]
    assert messages[-1]["content"][0]["tool_use_id"] == "e1"
    # The parent's tokens and the child's are both in the interrupted turn.
    parent_done = [e for e in parent.events.of("turn_done") if e.agent == "main"]
    assert parent_done[-1].stop_reason == "interrupted" and parent_done[-1].usage.input_tokens == 20
    # And the conversation goes on.
    fake_api.default = router({"PARENT": [None, Reply([text("resumed fine")])]})  # type: ignore[list-item]
    done = await parent.run("continue", 2)
    assert done.text == "resumed fine"


async def test_nesting_needs_permission_and_stops_at_depth_two(fake_api, tmp_path):
    write_profile(tmp_path, "lead", "description: Delegates.\ntools: [read_file, dispatch_agent]")
    write_profile(tmp_path, "leaf", "description: No tool list at all.")
    fake_api.default = router({
        "PARENT": [Reply([tool_use("dispatch_agent", {"agent": "lead", "prompt": "L1 go"})]), Reply([text("top done")])],
        "L1": [Reply([tool_use("dispatch_agent", {"agent": "lead", "prompt": "L2 go"})]), Reply([text("l1 done")])],
        "L2": [Reply([text("l2 done")])],
    })
    parent = Parent(tmp_path)
    assert (await parent.run("PARENT: nest")).text == "top done"
    by_key = {key: [r for r in fake_api.requests if key in first_text(r)][0] for key in ("L1", "L2")}
    assert "dispatch_agent" in tool_names(by_key["L1"]) and "Sub-agents:" in system_text(by_key["L1"])
    # Depth 2: the same profile, which allows dispatching, gets no dispatch_agent.
    assert "dispatch_agent" not in tool_names(by_key["L2"]) and "Sub-agents:" not in system_text(by_key["L2"])
    assert "main/lead#1/lead#1" in system_text(by_key["L2"])
    # A sub-agent without a tool list gets every tool but dispatch_agent.
    env = parent.env
    leaf = env.catalog().get("leaf")
    names = [t.name for t in profile_resolver(env.registry, leaf, state=SessionState(), can_dispatch=bool(env.dispatchable(env.catalog(), 1, leaf))).offered()]
    assert "read_file" in names and "write_file" in names and "dispatch_agent" not in names


async def test_bad_profiles_are_error_results(fake_api, tmp_path):
    broken = write_profile(tmp_path, "broken", "description: x\nmax_steps: lots")
    fake_api.default = router({
        "PARENT": [
            Reply([
                tool_use("dispatch_agent", {"agent": "broken", "prompt": "x"}, id="b"),
                tool_use("dispatch_agent", {"agent": "ghost", "prompt": "x"}, id="g"),
                tool_use("dispatch_agent", {"agent": "explore", "prompt": ""}, id="e"),
            ]),
            Reply([text("ok")]),
        ],
    })
    parent = Parent(tmp_path)
    await parent.run("PARENT: try")
    results = {b["tool_use_id"]: b for b in fake_api.requests[-1]["messages"][-1]["content"]}
    assert all(b.get("is_error") for b in results.values())
    assert str(broken) in results["b"]["content"][0]["text"] and "max_steps" in results["b"]["content"][0]["text"]
    assert "No agent profile named 'ghost'" in results["g"]["content"][0]["text"]
    assert "prompt" in results["e"]["content"][0]["text"]
    assert len(fake_api.requests) == 2  # no child ever reached the model


async def test_child_model_error_and_step_limit(fake_api, tmp_path):
    from tests.fakes.anthropic_server import HTTPError

    write_profile(tmp_path, "short", "description: x\ntools: [echo]\nmax_steps: 2")
    write_profile(tmp_path, "failing", "description: x\ntools: [echo]\nmodel: claude-haiku-4-5")
    fake_api.default = router({
        "PARENT": [
            Reply([
                tool_use("dispatch_agent", {"agent": "short", "prompt": "LOOPER"}, id="s"),
                tool_use("dispatch_agent", {"agent": "failing", "prompt": "FAILER"}, id="f"),
            ]),
            Reply([text("ok")]),
        ],
        "LOOPER": [Reply([text("partial"), tool_use("echo", {"text": "x"})])] * 3,
        "FAILER": [lambda body: HTTPError(400, "invalid_request_error", f"bad model {body['model']}")],  # type: ignore[list-item]
    })
    parent = Parent(tmp_path, extra_tools=[echo_tool()])
    await parent.run("PARENT: go")
    results = {b["tool_use_id"]: b for b in fake_api.requests[-1]["messages"][-1]["content"]}
    assert not results["s"].get("is_error") and "stopped at its limit of 2 steps" in results["s"]["content"][0]["text"]
    assert results["f"]["is_error"] and "Sub-agent 'main/failing#1' failed" in results["f"]["content"][0]["text"]
    assert "claude-haiku-4-5" in results["f"]["content"][0]["text"]  # the profile's model was used


async def test_child_calls_pass_the_real_pipeline_labelled_with_the_child(fake_api, tmp_path):
    from codingcode_jupyter.engine.approval.audit import AuditLog
    from codingcode_jupyter.engine.approval.pipeline import ApprovalPipeline

    write_profile(tmp_path, "writer", "description: Writes files.\ntools: [write_file]")
    fake_api.default = router({
        "PARENT": [Reply([tool_use("dispatch_agent", {"agent": "writer", "prompt": "CHILD: write z.txt"}, id="d1")]), Reply([text("ok")])],
        "CHILD": [Reply([tool_use("write_file", {"path": "z.txt", "content": "z"}, id="w1")]), Reply([text("denied, stopping")])],
    })
    pipeline = ApprovalPipeline(tmp_path)
    parent = Parent(tmp_path, approver=pipeline)
    asked = []

    async def ask(request):
        asked.append(request)
        return "deny"

    parent.loop.ask = ask
    await parent.run("PARENT: go")
    assert not (tmp_path / "z.txt").exists()
    # One card, for the child's write (dispatch_agent itself is read-only), labelled with the child.
    assert [(r.tool, r.agent, r.session_id) for r in asked] == [("write_file", "main/writer#1", "parent-session")]
    cards = parent.events.of("approval_requested")
    assert [c.agent for c in cards] == ["main/writer#1"]
    # Audit entries carry the sub-agent and the parent session.
    records = [r for r in AuditLog(tmp_path).read(None) if r.get("tool_use_id") == "w1"]
    assert {r["event"] for r in records} == {"decision", "outcome"}
    assert all(r["agent"] == "main/writer#1" and r["session_id"] == "parent-session" for r in records)
    dispatch_records = [r for r in AuditLog(tmp_path).read(None) if r.get("tool_use_id") == "d1"]
    assert dispatch_records and all(r["agent"] == "main" for r in dispatch_records)


def test_a_profile_mode_tightens_the_turns_mode_never_loosens():
    from codingcode_jupyter.engine.modes import decide_mode

    assert decide_mode(session="bypass", profile="plan").mode == "plan"
    assert decide_mode(session="default", profile="bypass").mode == "default"
    assert decide_mode(cell="acceptEdits", profile="default").mode == "default"
    assert decide_mode(cell="acceptEdits").source == "the cell's --mode"
