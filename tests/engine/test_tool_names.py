"""The tool names a rule may use before the tools are registered: the engine's own, read from its
definitions, and those a front declares (the engine holds none of the notebook's)."""

from __future__ import annotations

import pytest

from codingcode_jupyter.engine.agents.dispatch import dispatch_agent_tool
from codingcode_jupyter.engine.approval.rule_syntax import check_tool_name
from codingcode_jupyter.engine.claude import names
from codingcode_jupyter.engine.mcp.resources import LIST_TOOL, READ_TOOL
from codingcode_jupyter.engine.skills import LOAD_SKILL
from codingcode_jupyter.engine.tools.builtin import builtin_tools
from codingcode_jupyter.engine.tools.tool_search import make_tool_search


def test_the_engines_names_are_its_tools():
    defined = {tool.name for tool in builtin_tools()} | {dispatch_agent_tool().name, make_tool_search(list).name,
                                                        LIST_TOOL, READ_TOOL, LOAD_SKILL}
    assert names.ENGINE_TOOL_NAMES == defined


def test_a_front_declares_its_tools_and_a_rule_misspelling_one_is_told(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(names, "_FRONT_TOOL_NAMES", set())
    # Control: undeclared, the name is taken for a custom tool registered from a cell.
    assert check_tool_name("run_pyhton") is None
    assert "run_python" not in names.known_tool_names()
    names.declare_front_tools(["run_python", "insert_cell"])
    assert check_tool_name("run_python") is None
    assert "did you mean 'run_python'" in (check_tool_name("run_pyhton") or "")
    assert "case-sensitive" in (check_tool_name("Insert_Cell") or "")
