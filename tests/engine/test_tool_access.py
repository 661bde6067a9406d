"""Tools declare what they reach, and everything that judges or shows a call reads that declaration."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from codingcode_jupyter.__main__ import _tool_definition, check_permission
from codingcode_jupyter.engine.approval.pipeline import ApprovalPipeline
from codingcode_jupyter.engine.tools.access import PathArg, ToolAccess
from codingcode_jupyter.engine.tools.base import AnyArgs, ToolCall, ToolDefinition
from codingcode_jupyter.engine.tools.builtin import builtin_tools
from codingcode_jupyter.notebook.kernel.tools import kernel_tools
from tests.engine.approval_helpers import context, make_project

SHADOW_READS = [
    ("run_python", {"code": "print(open('/etc/shadow').read())"}),
    ("execute_command", {"command": "cat /etc/shadow"}),
]


async def _never(args, ctx):
    raise AssertionError("approval tests never run tools")


def _tools() -> dict[str, ToolDefinition]:
    return {tool.name: tool for tool in [*builtin_tools(), *kernel_tools(namespace={})]}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path)


@pytest.mark.parametrize("tool, tool_input", SHADOW_READS)
async def test_shadow_is_denied_in_bypass_whichever_tool_reads_it(project, tool, tool_input):
    pipeline = ApprovalPipeline(project, python_hooks=[], audit=False)
    call = ToolCall(tool_use_id="t", tool=_tools()[tool], input=tool_input)
    result = await pipeline.evaluate(call, context(project, mode="bypass"))
    assert result.kind == "deny" and result.rule == "builtin:etc-shadow", result.reason


async def test_a_custom_tool_is_judged_on_every_path_its_arguments_name(project):
    custom = ToolDefinition(name="shell_out", description="x", parameters=AnyArgs, execute=_never, source="custom")
    assert custom.access.opaque
    pipeline = ApprovalPipeline(project, python_hooks=[], audit=False)
    result = await pipeline.evaluate(ToolCall(tool_use_id="t", tool=custom, input={"cmd": "cat /etc/shadow"}),
                                     context(project, mode="bypass"))
    assert result.kind == "deny"


async def test_judgement_follows_the_declaration_not_the_name(project):
    """A built-in's declaration under another name is judged exactly as the built-in."""
    tools = _tools()
    shell = dataclasses.replace(tools["execute_command"], name="bash", display_name="bash")
    peek = dataclasses.replace(tools["read_file"], name="peek", display_name="peek")
    pipeline = ApprovalPipeline(project, python_hooks=[], audit=False)

    async def decide(tool, tool_input, mode="default"):
        return (await pipeline.evaluate(ToolCall(tool_use_id="t", tool=tool, input=tool_input),
                                        context(project, mode=mode))).kind

    assert await decide(shell, {"command": "sudo id"}, "bypass") == "deny"
    assert await decide(shell, {"command": "cd / && rm -rf ."}, "bypass") == "deny"
    assert await decide(peek, {"path": "docs/a.md"}) == "allow"  # read-only
    assert await decide(peek, {"path": "/etc/shadow"}, "bypass") == "deny"
    # An edit tool of a cell's own declaring its path: acceptEdits allows it inside the project only.
    writer = ToolDefinition(name="save_note", description="x", parameters=AnyArgs, execute=_never, source="custom",
                            access=ToolAccess(paths=(PathArg("target", "write"),), edits=True))
    assert await decide(writer, {"target": "src/n.txt"}) == "ask"
    assert await decide(writer, {"target": "src/n.txt"}, "acceptEdits") == "allow"
    assert await decide(writer, {"target": "/tmp/elsewhere.txt"}, "acceptEdits") == "ask"


def test_permissions_check_knows_every_tool_a_session_offers(tmp_path):
    """The CLI resolves each tool name to the definition a session uses, so both judge alike."""
    from codingcode_jupyter.engine.runtime import open_session
    from codingcode_jupyter.engine.tools.builtin import global_registry

    # As the notebook front registers them with the first session.
    kernel = kernel_tools(namespace={})
    for tool in kernel:
        global_registry().register(tool)
    try:
        session = open_session(tmp_path, model="demo")
        offered = [tool for tool, _ in session.resolver.visible()]
        assert {"run_python", "insert_cell", "execute_command", "dispatch_agent"} <= {t.name for t in offered}
        for tool in offered:
            if tool.name == "tool_search":
                continue  # offered only alongside deferred tools; never judged by name
            known = _tool_definition(tool.display_name or tool.name)
            assert (known.source, known.access) == (tool.source, tool.access), tool.name
    finally:
        for tool in kernel:
            global_registry().remove(tool.name)


@pytest.mark.parametrize("name, source", [("srv:lookup", "mcp"), ("mcp__srv__lookup", "mcp"), ("my_tool", "custom")])
def test_permissions_check_judges_unknown_tools_as_opaque(name, source):
    tool = _tool_definition(name)
    assert tool.source == source and tool.access.opaque
    if source == "mcp":
        assert tool.display_name == "srv:lookup"


async def test_permissions_check_and_a_live_pipeline_agree(project):
    pipeline = ApprovalPipeline(project, python_hooks=[], audit=False)
    for tool, tool_input in [*SHADOW_READS, ("run_python", {"code": "x = 1"}), ("read_file", {"path": "docs/a.md"}),
                             ("insert_cell", {"code": "print(1)"}), ("list_variables", {})]:
        for mode in ("default", "bypass"):
            cli = await check_permission(project, tool, tool_input, mode, sandbox="on")
            live = await pipeline.evaluate(ToolCall(tool_use_id="t", tool=_tools()[tool], input=tool_input),
                                           context(project, mode=mode))
            assert (cli["decision"], cli["rule"]) == (live.kind, live.rule), (tool, tool_input, mode)


async def test_the_tool_line_and_the_card_show_the_declared_key(fake_api, tmp_path):
    from codingcode_jupyter.engine.agent import AgentLoop, Conversation
    from codingcode_jupyter.engine.models.anthropic import AnthropicModel
    from codingcode_jupyter.engine.state import SessionState
    from tests.engine.helpers import AllowAll, Recorder, StaticTools, make_deps
    from tests.fakes.anthropic_server import Reply, text, tool_use

    # The key is the second argument here: only the declaration can say so.
    lookup = ToolDefinition(name="lookup", description="x", parameters=AnyArgs, execute=_noop, source="custom",
                            access=ToolAccess(key="term", opaque=True, read_only=True))
    fake_api.add(Reply([tool_use("lookup", {"scope": "all", "term": "needle"})]), Reply([text("ok")]))
    events = Recorder()
    loop = AgentLoop(model=AnthropicModel("claude-sonnet-5", max_retries=0), tools=StaticTools([lookup]),
                     approver=AllowAll(), deps=make_deps(tmp_path), session_id="s", state=SessionState(), emit=events)
    await loop.run(Conversation(), "go", 1)
    assert [e.key for e in events.of("tool_call_started")] == ["needle"]


async def _noop(args, ctx):
    return "found"


@pytest.mark.parametrize("code, expected", [
    ("import os\nos.system('sudo id')", "deny"),                                        # a command the code runs
    ("open('/etc/' + 'shadow').read()", "deny"),                                        # folded with ast
    ("import os\nos.chmod('x', 0o4755)", "deny"),                                       # setuid bits
    ("exec(input())", "ask"),                                                           # arbitrary code
    ("import subprocess\nsubprocess.run(['bash', '-c', cmd])", "ask"),                 # a value only known at run time
    ("total = sum(range(10))\nprint(total)", "allow"),                                  # plain code
])
async def test_run_python_code_is_read_with_ast_and_what_stays_unknown_is_asked_in_bypass(project, code, expected):
    """run_python never runs sandboxed: what the reading cannot resolve is asked in every mode."""
    pipeline = ApprovalPipeline(project, python_hooks=[], audit=False)
    call = ToolCall(tool_use_id="t", tool=_tools()["run_python"], input={"code": code})
    result = await pipeline.evaluate(call, context(project, mode="bypass"))
    assert result.kind == expected, result.reason


async def test_an_unresolved_command_is_decided_by_where_it_runs(project):
    from tests.engine.test_approval_pipeline import Sandbox

    pipeline = ApprovalPipeline(project, python_hooks=[], audit=False)
    command = ToolCall(tool_use_id="t", tool=_tools()["execute_command"], input={"command": "cat $(ls docs)"})
    inside = await pipeline.evaluate(command, context(project, mode="bypass", sandbox=Sandbox(True, True)))
    outside = await pipeline.evaluate(command, context(project, mode="bypass", sandbox=Sandbox(True, False)))
    assert inside.kind == "allow"
    assert outside.kind == "ask" and outside.rule == "builtin:unresolved" and "no sandbox will run it" in outside.reason
    # In the sandbox an allow rule covers it as written; outside, it does not.
    rule = ApprovalPipeline(project, python_hooks=[], audit=False, session_rules=["execute_command(cat *)"])
    assert (await rule.evaluate(command, context(project, sandbox=Sandbox(True, True)))).kind == "allow"
    assert (await rule.evaluate(command, context(project, sandbox=Sandbox(True, False)))).kind == "ask"
