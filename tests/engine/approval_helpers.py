"""Shared set-up for the approval tests: a project on disk and real tool definitions."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from codingcode_jupyter.engine.approval.pipeline import ApprovalPipeline
from codingcode_jupyter.engine.tools.base import AnyArgs, ToolCall, ToolContext, ToolDefinition
from codingcode_jupyter.engine.tools.builtin import builtin_tools
from tests.engine.helpers import make_deps, tool_context

TOOLS = {tool.name: tool for tool in builtin_tools()}

SETTINGS = {
    "permissions": {
        "allow": [
            "execute_command(pytest *)",
            "execute_command(ls *)",
            "execute_command(echo *)",
            "execute_command(git status)",
            "read_file(docs/**)",
            "everything:echo",
        ],
    }
}


async def _never(args: Any, ctx: Any) -> str:
    raise AssertionError("tools are never run by approval tests")


def mcp_tool(display: str, read_only_hint: bool = False) -> ToolDefinition:
    server, name = display.split(":", 1)
    return ToolDefinition(name=f"{server}__{name}", description=display, parameters=AnyArgs, execute=_never,
                          source="mcp", display_name=display, mcp_server=server,
                          annotations={"readOnlyHint": read_only_hint})


def make_project(root: Path, settings: dict | None = None) -> Path:
    project = root / "project"
    (project / "docs").mkdir(parents=True)
    (project / "build").mkdir()
    (project / "src").mkdir()
    (project / ".git" / "hooks").mkdir(parents=True)
    (project / ".codingcode").mkdir()
    (project / "docs" / "a.md").write_text("a")
    (project / ".env").write_text("KEY=1")
    (project / "link_shadow").symlink_to("/etc/shadow")
    (project / "keys").symlink_to(os.path.expanduser("~/.ssh"))
    (project / "docs_escape").symlink_to("/etc")
    (project / ".codingcode" / "settings.json").write_text(json.dumps(settings if settings is not None else SETTINGS))
    return project


def context(project: Path, events: list | None = None, *, sandbox: Any = None, mode: str = "default",
            approval_timeout: float | None = None) -> ToolContext:
    return tool_context(project, events=events, deps=make_deps(project, sandbox=sandbox), mode=mode,
                        approval_timeout=approval_timeout)


def call(tool: str | ToolDefinition, tool_input: dict, tool_use_id: str = "t1") -> ToolCall:
    definition = TOOLS[tool] if isinstance(tool, str) else tool
    return ToolCall(tool_use_id=tool_use_id, tool=definition, input=tool_input)


async def evaluate(project: Path, tool: str | ToolDefinition, tool_input: dict, mode: str = "default", **kwargs):
    pipeline = ApprovalPipeline(project, python_hooks=[], **kwargs)
    return await pipeline.evaluate(call(tool, tool_input), context(project, mode=mode))


def check_verdict(result: Any, expected: str, *, one_sentence: bool = False) -> None:
    """The decision is ``expected``; a denial explains itself to the model (one sentence if asked)."""
    assert result.kind == expected, result.model_dump()
    if expected == "deny":
        assert result.reason.startswith("Denied"), result.reason
        assert result.reason.rstrip().endswith("."), result.reason
        if one_sentence:
            assert result.reason.count(". ") <= 1, result.reason
