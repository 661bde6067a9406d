"""Hooks written for Claude Code run unchanged: what they are told, how their answers are read, every
event; and ours keep their format and fail closed.

The hook used here (tests/data/claude/project/.claude/hooks/record.py) is written for these tests
to Claude Code's documented contract: JSON on stdin, answers by exit code or JSON on stdout.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from codingcode_jupyter.engine.agent import AgentLoop, Conversation
from codingcode_jupyter.engine.agents.dispatch import dispatch_agent_tool
from codingcode_jupyter.engine.approval.pipeline import ApprovalPipeline
from codingcode_jupyter.engine.state import SessionState
from codingcode_jupyter.engine.tools.builtin import builtin_tools
from tests.engine.approval_helpers import call, context, mcp_tool
from tests.engine.claude_helpers import CORPUS
from tests.engine.helpers import Recorder, StaticTools, make_deps
from tests.fakes.model import call as tool_call, scripted

RECORD = f'{sys.executable} "$CLAUDE_PROJECT_DIR/record.py"'


@pytest.fixture
def project(tmp_path, monkeypatch):
    root = tmp_path / "proj"
    (root / "src").mkdir(parents=True)
    shutil.copy(CORPUS / "project" / ".claude" / "hooks" / "record.py", root / "record.py")
    monkeypatch.setenv("CC_TEST_LOG", str(tmp_path / "hooks.log"))
    return root.resolve()


def hooks(project: Path, groups: dict[str, list[dict[str, Any]]], *, ours: bool = False) -> None:
    """Write ``groups`` as the hooks of .claude/settings.json (or of .codingcode/settings.json)."""
    path = project / (".codingcode" if ours else ".claude") / "settings.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps({"hooks": groups}))


def hook(event: str, matcher: str | None = None, command: str | None = None) -> dict[str, Any]:
    group: dict[str, Any] = {"hooks": [{"type": "command", "command": command or f"{RECORD} {event}"}]}
    if matcher is not None:
        group["matcher"] = matcher
    return group


def told(project: Path) -> list[dict[str, Any]]:
    log = project.parent / "hooks.log"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def answers(monkeypatch, **by_event: Any) -> None:
    monkeypatch.setenv("CC_TEST_ANSWERS", json.dumps(by_event))


# -- PreToolUse ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("tool", "ours", "theirs", "shape"), [
    ("execute_command", {"command": "make"}, "Bash", {"command": "make"}),
    ("read_file", {"path": "src/a.py"}, "Read", {"file_path": "{project}/src/a.py"}),
    ("write_file", {"path": "b.txt", "content": "x"}, "Write", {"file_path": "{project}/b.txt", "content": "x"}),
    ("edit_file", {"path": "a", "old_string": "x", "new_string": "y"}, "Edit",
     {"file_path": "{project}/a", "old_string": "x", "new_string": "y"}),
    ("todo_write", {"plan": [{"step": "test", "status": "pending"}]}, "TodoWrite",
     {"todos": [{"content": "test", "status": "pending", "activeForm": "test"}]}),
    ("search_files", {"pattern": "*.py"}, "Glob", {"pattern": "*.py"}),
    ("fetch_url", {"url": "https://x.test/"}, "WebFetch", {"url": "https://x.test/"}),
    ("dispatch_agent", {"agent": "explore", "prompt": "find it\nin src"}, "Task",
     {"description": "find it", "prompt": "find it\nin src", "subagent_type": "explore"}),
])
async def test_a_claude_code_hook_is_told_what_claude_code_tells_it(project, tool, ours, theirs, shape):
    hooks(project, {"PreToolUse": [hook("PreToolUse", "*")]})
    definition = dispatch_agent_tool() if tool == "dispatch_agent" else tool
    await ApprovalPipeline(project, python_hooks=[]).evaluate(call(definition, ours), context(project, mode="bypass"))
    (entry,) = told(project)
    payload = entry["payload"]
    assert entry["CLAUDE_PROJECT_DIR"] == str(project)
    assert payload["hook_event_name"] == "PreToolUse" and payload["tool_name"] == theirs
    assert payload["tool_input"] == json.loads(json.dumps(shape).replace("{project}", str(project)))
    assert payload["session_id"] == "s1" and payload["transcript_path"].endswith("/.codingcode/sessions/s1.jsonl")
    assert payload["cwd"] == str(project) and payload["permission_mode"] == "bypassPermissions"
    assert payload["tool_use_id"] == "t1"


async def test_an_mcp_tool_is_named_mcp__server__tool_with_its_own_arguments(project):
    hooks(project, {"PreToolUse": [hook("PreToolUse", "mcp__.*")]})
    await ApprovalPipeline(project, python_hooks=[]).evaluate(call(mcp_tool("github:create_issue"), {"title": "t"}),
                                                               context(project))
    (entry,) = told(project)
    assert entry["payload"]["tool_name"] == "mcp__github__create_issue"
    assert entry["payload"]["tool_input"] == {"title": "t"}


@pytest.mark.parametrize(("matcher", "tool", "runs"), [
    ("Bash", "execute_command", True),
    ("Bash", "read_file", False),
    ("Edit|Write", "write_file", True),
    ("Edit|Write", "read_file", False),
    ("Edit, Write", "write_file", True),
    ("Notebook.*|Wri.*", "write_file", True),
    ("Read", "read_file", True),
    ("", "read_file", True),
    ("bash", "execute_command", False),  # Claude Code's matchers are case-sensitive
])
async def test_claude_code_matchers(project, matcher, tool, runs):
    hooks(project, {"PreToolUse": [hook("PreToolUse", matcher)]})
    tool_input = {"command": "make"} if tool == "execute_command" else {"path": "a", "content": ""}
    await ApprovalPipeline(project, python_hooks=[]).evaluate(call(tool, tool_input), context(project, mode="bypass"))
    assert bool(told(project)) is runs


async def test_our_matchers_are_globs_over_both_names(project):
    hooks(project, {"PreToolUse": [hook("PreToolUse", "Bash|read_*")]}, ours=True)
    pipeline = ApprovalPipeline(project, python_hooks=[])
    await pipeline.evaluate(call("execute_command", {"command": "make"}), context(project, mode="bypass"))
    await pipeline.evaluate(call("read_file", {"path": "a"}), context(project, mode="bypass"))
    await pipeline.evaluate(call("write_file", {"path": "a", "content": ""}), context(project, mode="bypass"))
    # Ours are told our names.
    assert [t["payload"]["tool_name"] for t in told(project)] == ["execute_command", "read_file"]
    assert told(project)[0]["payload"]["tool_input"] == {"command": "make"}


@pytest.mark.parametrize(("answer", "mode", "kind"), [
    ("exit:2", "bypass", "deny"),
    ("exit:1", "bypass", "allow"),  # Claude Code: any other exit is a non-blocking error
    ({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                             "permissionDecisionReason": "not here"}}, "bypass", "deny"),
    ({"hookSpecificOutput": {"permissionDecision": "ask"}}, "bypass", "ask"),
    ({"hookSpecificOutput": {"permissionDecision": "allow"}}, "default", "allow"),
    ({"decision": "block", "reason": "legacy no"}, "bypass", "deny"),
    ({"decision": "approve", "reason": "legacy yes"}, "default", "allow"),
    ("not json at all", "bypass", "allow"),
    ({"unknownKey": 1}, "default", "ask"),  # ignored, as Claude Code ignores it: the mode decides
])
async def test_claude_code_answers_mean_what_they_mean_there(project, monkeypatch, answer, mode, kind):
    hooks(project, {"PreToolUse": [hook("PreToolUse", "Bash")]})
    answers(monkeypatch, PreToolUse=answer)
    result = await ApprovalPipeline(project, python_hooks=[]).evaluate(call("execute_command", {"command": "make"}),
                                                                        context(project, mode=mode))
    assert result.kind == kind, result.model_dump()
    if kind == "deny":
        assert "says no" in result.reason or "not here" in result.reason or "legacy no" in result.reason


@pytest.mark.parametrize(("answer", "kind"), [("exit:1", "ask"), ("not json", "ask"), ({"decison": "allow"}, "ask"),
                                              ("exit:2", "deny"),
                                              ({"hookSpecificOutput": {"permissionDecision": "deny"}}, "deny"),
                                              ({"decision": "deny", "reason": "ours"}, "deny")])
async def test_our_hooks_keep_failing_closed_and_understand_claude_codes_keys(project, monkeypatch, answer, kind):
    hooks(project, {"PreToolUse": [hook("PreToolUse", "*")]}, ours=True)
    answers(monkeypatch, PreToolUse=answer)
    result = await ApprovalPipeline(project, python_hooks=[]).evaluate(call("execute_command", {"command": "make"}),
                                                                        context(project, mode="bypass"))
    assert result.kind == kind, result.model_dump()


async def test_updated_input_is_translated_back_to_our_arguments(project, monkeypatch):
    hooks(project, {"PreToolUse": [hook("PreToolUse", "Bash|Read")]})
    answers(monkeypatch, PreToolUse={"hookSpecificOutput": {"permissionDecision": "allow",
                                                            "updatedInput": {"command": "make -n", "timeout": 5000}}})
    pipeline = ApprovalPipeline(project, python_hooks=[])
    result = await pipeline.evaluate(call("execute_command", {"command": "make", "cwd": "src"}), context(project))
    assert result.kind == "allow" and result.input == {"command": "make -n", "timeout_ms": 5000, "cwd": "src"}
    # The Bash hook was told the directory the command runs in.
    assert told(project)[0]["payload"]["cwd"] == str(project / "src")
    answers(monkeypatch, PreToolUse={"hookSpecificOutput": {"updatedInput": {"file_path": str(project / "src/b.py")}}})
    result = await pipeline.evaluate(call("read_file", {"path": "src/a.py", "limit": 5}), context(project))
    assert result.input == {"path": str(project / "src/b.py"), "limit": 5}


async def test_a_rewritten_input_is_judged_again(project, monkeypatch):
    hooks(project, {"PreToolUse": [hook("PreToolUse", "Bash")]})
    answers(monkeypatch, PreToolUse={"hookSpecificOutput": {"permissionDecision": "allow",
                                                            "updatedInput": {"command": "sudo rm -rf /"}}})
    result = await ApprovalPipeline(project, python_hooks=[]).evaluate(call("execute_command", {"command": "ls"}),
                                                                        context(project))
    assert result.kind == "deny" and result.rule and result.rule.startswith("builtin:")


# -- the loop: PostToolUse, continue:false, Stop, Notification -----------------------------------


def loop_in(project: Path, model, *, ask=None, mode="bypass", agent="main") -> tuple[AgentLoop, Recorder]:
    events = Recorder()
    loop = AgentLoop(model=model, tools=StaticTools(builtin_tools()), approver=ApprovalPipeline(project, python_hooks=[]), session_id="s1", state=SessionState(), emit=events, deps=make_deps(project),
                     mode=mode, ask=ask, agent=agent)
    return loop, events


def _texts(request) -> str:
    return json.dumps(request.messages)


async def test_post_tool_use_sees_the_result_and_speaks_to_the_model(project, monkeypatch):
    hooks(project, {"PostToolUse": [hook("PostToolUse", "Write|Edit")]})
    answers(monkeypatch, PostToolUse={"decision": "block", "reason": "run the formatter",
                                      "hookSpecificOutput": {"hookEventName": "PostToolUse",
                                                             "additionalContext": "POST-CONTEXT-MARKER"}})
    model = scripted([tool_call("write_file", {"path": "out.txt", "content": "hello"}, id="w1")])
    loop, _ = loop_in(project, model)
    await loop.run(Conversation(), "write it", 1)
    assert (project / "out.txt").read_text() == "hello"
    (entry,) = told(project)
    payload = entry["payload"]
    assert payload["hook_event_name"] == "PostToolUse" and payload["tool_name"] == "Write"
    assert payload["tool_response"]["filePath"] == str(project / "out.txt") and payload["tool_response"]["success"]
    assert payload["tool_input"] == {"file_path": str(project / "out.txt"), "content": "hello"}
    second = _texts(model.requests[1])
    assert "POST-CONTEXT-MARKER" in second and "run the formatter" in second


async def test_post_tool_use_failure_runs_for_a_failing_tool(project):
    hooks(project, {"PostToolUse": [hook("PostToolUse")], "PostToolUseFailure": [hook("PostToolUseFailure")]})
    model = scripted([tool_call("read_file", {"path": "missing.txt"}, id="r1")])
    loop, _ = loop_in(project, model)
    await loop.run(Conversation(), "read it", 1)
    (entry,) = told(project)
    assert entry["argv"] == "PostToolUseFailure" and "missing.txt" in entry["payload"]["error"]


async def test_continue_false_ends_the_turn(project, monkeypatch):
    hooks(project, {"PreToolUse": [hook("PreToolUse", "Bash")]})
    answers(monkeypatch, PreToolUse={"continue": False, "stopReason": "enough for today"})
    model = scripted([tool_call("execute_command", {"command": "make"}, id="c1")], [tool_call("execute_command",
                                                                                              {"command": "make"})])
    loop, events = loop_in(project, model)
    done = await loop.run(Conversation(), "build", 1)
    assert done.stop_reason == "hook" and len(model.requests) == 1
    assert any("enough for today" in e.text for e in events.of("notice"))


async def test_a_stop_hook_runs_at_the_end_of_the_turn_and_can_make_it_go_on(project, monkeypatch):
    hooks(project, {"Stop": [hook("Stop")]})
    monkeypatch.setenv("CC_TEST_ANSWERS", json.dumps({"Stop": {"decision": "block", "reason": "STOP-REASON-MARKER"}}))
    seen: list[bool] = []

    def answer(request):
        active = told(project)[-1]["payload"]["stop_hook_active"] if told(project) else None
        seen.append(active)
        if len(seen) == 2:  # the hook has asked once; let the next stop through
            monkeypatch.setenv("CC_TEST_ANSWERS", "{}")
        return [{"type": "text", "text": "finished"}]

    from codingcode_jupyter.engine.models.function import FunctionModel

    model = FunctionModel(answer, name="claude-sonnet-5")
    loop, _ = loop_in(project, model)
    done = await loop.run(Conversation(), "work", 1)
    assert done.stop_reason == "end_turn" and len(model.requests) == 2
    assert "STOP-REASON-MARKER" in _texts(model.requests[1])
    payloads = [t["payload"] for t in told(project)]
    assert [p["hook_event_name"] for p in payloads] == ["Stop", "Stop"]
    assert [p["stop_hook_active"] for p in payloads] == [False, True]


async def test_a_sub_agent_stopping_runs_subagent_stop(project):
    hooks(project, {"Stop": [hook("Stop")], "SubagentStop": [hook("SubagentStop")]})
    loop, _ = loop_in(project, scripted(), agent="main/explore#1")
    await loop.run(Conversation(), "look", 1)
    (entry,) = told(project)
    assert entry["payload"]["hook_event_name"] == "SubagentStop" and entry["payload"]["agent_type"] == "explore"


async def test_notification_hooks_run_when_a_card_waits(project):
    hooks(project, {"Notification": [hook("Notification")]})
    asked = []

    async def ask(request):
        asked.append(request.tool)
        assert told(project), "the Notification hook runs before the card waits"
        return "deny"

    loop, _ = loop_in(project, scripted([tool_call("execute_command", {"command": "make"}, id="c1")]), ask=ask,
                      mode="default")
    await loop.run(Conversation(), "build", 1)
    (entry,) = told(project)
    assert asked == ["execute_command"]
    assert entry["payload"]["hook_event_name"] == "Notification"
    assert "permission to use execute_command" in entry["payload"]["message"]


# -- the session: UserPromptSubmit, SessionStart, SessionEnd, PreCompact --------------------------


def session_in(project: Path, monkeypatch, model):
    from codingcode_jupyter.engine import session as session_module
    from codingcode_jupyter.engine.context.session_window import keep_in_window
    from codingcode_jupyter.engine.session import Session

    monkeypatch.setattr(session_module, "make_model", lambda name: model)
    session = Session(tools=StaticTools(builtin_tools()), approver=ApprovalPipeline(project, python_hooks=[]),
                      deps=make_deps(project), model_name="claude-sonnet-5")
    keep_in_window(session)
    return session


async def test_user_prompt_submit_adds_context_and_blocks(project, monkeypatch):
    hooks(project, {"UserPromptSubmit": [hook("UserPromptSubmit")], "SessionStart": [hook("SessionStart", "startup")]})
    answers(monkeypatch, UserPromptSubmit="PROMPT-CONTEXT-MARKER", SessionStart="START-CONTEXT-MARKER")
    model = scripted()
    session = session_in(project, monkeypatch, model)
    await session.run_turn("first")
    sent = _texts(model.requests[0])
    assert "PROMPT-CONTEXT-MARKER" in sent and "START-CONTEXT-MARKER" in sent and "first" in sent
    entries = told(project)
    assert [e["argv"] for e in entries] == ["SessionStart", "UserPromptSubmit"]
    assert entries[0]["payload"]["source"] == "startup" and entries[1]["payload"]["prompt"] == "first"
    await session.run_turn("second")  # SessionStart runs once
    assert [e["argv"] for e in told(project)][2:] == ["UserPromptSubmit"]
    answers(monkeypatch, UserPromptSubmit={"decision": "block", "reason": "no secrets in prompts"})
    events = Recorder()
    done = await session.run_turn("password=hunter2", events)
    assert done.stop_reason == "hook" and len(model.requests) == 2
    assert "hunter2" not in json.dumps(session.conversation.messages)
    assert any("no secrets in prompts" in e.text for e in events.of("notice"))


async def test_our_prompt_hook_that_fails_blocks_the_prompt(project, monkeypatch):
    hooks(project, {"UserPromptSubmit": [hook("UserPromptSubmit")]}, ours=True)
    answers(monkeypatch, UserPromptSubmit="exit:1")
    model = scripted()
    done = await session_in(project, monkeypatch, model).run_turn("hello")
    assert done.stop_reason == "hook" and model.requests == []


async def test_pre_compact_runs_with_its_trigger(project, monkeypatch):
    from codingcode_jupyter.engine.context.session_window import compact

    hooks(project, {"PreCompact": [hook("PreCompact", "manual")]})
    session = session_in(project, monkeypatch, scripted())
    await session.run_turn("hello")
    await compact(session, force=True)
    (entry,) = told(project)
    assert entry["payload"]["trigger"] == "manual" and entry["payload"]["hook_event_name"] == "PreCompact"


async def test_session_end_runs_when_the_session_closes(project, monkeypatch):
    from codingcode_jupyter.engine.runtime import open_session

    hooks(project, {"SessionEnd": [hook("SessionEnd")]})
    session = open_session(project, model="demo")
    await session.aclose("clear")
    (entry,) = told(project)
    assert entry["payload"]["reason"] == "clear" and entry["payload"]["session_id"] == session.id


async def test_hooks_of_an_untrusted_project_do_not_run(project, monkeypatch):
    monkeypatch.delenv("CODINGCODE_TRUST")
    hooks(project, {"PreToolUse": [hook("PreToolUse")], "UserPromptSubmit": [hook("UserPromptSubmit")]})
    await ApprovalPipeline(project, python_hooks=[]).evaluate(call("execute_command", {"command": "make"}),
                                                               context(project, mode="bypass"))
    await session_in(project, monkeypatch, scripted()).run_turn("hello")
    assert told(project) == []


async def test_an_unsupported_hook_type_fails_closed_on_pre_tool_use(project):
    hooks(project, {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "agent", "prompt": "check $ARGUMENTS"}]}]})
    result = await ApprovalPipeline(project, python_hooks=[]).evaluate(call("execute_command", {"command": "make"}),
                                                                        context(project, mode="bypass"))
    assert result.kind == "ask" and "agent" in result.reason
