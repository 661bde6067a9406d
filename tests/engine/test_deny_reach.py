"""The person's deny and ask rules hold where the call reaches what they name by another tool
(issue 45, item 4, as far as the judge sees): a Read rule for `cat`, `grep -r` and code that opens
the file; an Edit rule for a command or code that writes it; a Bash rule for a command code runs.
Each with its control: the same call on a path or command the rule does not name."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from codingcode_jupyter.engine.tools.access import ToolAccess
from codingcode_jupyter.engine.tools.base import AnyArgs, ToolDefinition

from .approval_helpers import evaluate


async def _never(args, ctx):
    raise AssertionError("judged only")


RUN_PYTHON = ToolDefinition(name="run_python", description="code", parameters=AnyArgs, execute=_never, source="kernel",
                            access=ToolAccess(code="code", opaque=True, ipython=True))


@pytest.fixture
def project(tmp_path: Path, monkeypatch) -> Path:
    root = tmp_path / "project"
    (root / "secrets").mkdir(parents=True)
    (root / "public").mkdir()
    (root / "secrets" / "prod.json").write_text("{}")
    (root / "public" / "data.json").write_text("{}")
    (root / ".claude").mkdir()
    (root / ".claude" / "settings.json").write_text(json.dumps({"permissions": {
        "deny": ["Read(./secrets/**)", "Edit(./config/**)", "Bash(git push:*)"]}}))
    monkeypatch.setenv("CODINGCODE_TRUST", "1")
    return root


@pytest.mark.parametrize(("tool", "tool_input", "denied"), [
    ("execute_command", {"command": "cat secrets/prod.json"}, True),
    ("execute_command", {"command": "cat public/data.json"}, False),
    ("execute_command", {"command": "grep -rn token secrets"}, True),
    ("execute_command", {"command": "grep -rn token public"}, False),
    ("execute_command", {"command": "echo x > config/app.ini"}, True),
    ("execute_command", {"command": "echo x > public/app.ini"}, False),
    (RUN_PYTHON, {"code": "print(open('secrets/prod.json').read())"}, True),
    (RUN_PYTHON, {"code": "print(open('public/data.json').read())"}, False),
    (RUN_PYTHON, {"code": "import subprocess\nsubprocess.run(['git', 'push'])"}, True),
    (RUN_PYTHON, {"code": "import subprocess\nsubprocess.run(['git', 'status'])"}, False),
    (RUN_PYTHON, {"code": "!git push origin main"}, True),
])
async def test_deny_rules_reach_across_tools(project: Path, tool, tool_input, denied):
    result = await evaluate(project, tool, tool_input, "bypass")
    assert (result.kind == "deny") is denied, result.model_dump()


async def test_an_allow_rule_never_reaches_across_tools(project: Path):
    settings = project / ".claude" / "settings.json"
    settings.write_text(json.dumps({"permissions": {"allow": ["Read(./public/**)", "Bash(git status:*)"]}}))
    # Allowing the file tool to read public/ allows no command, and allowing a command allows no code.
    assert (await evaluate(project, "execute_command", {"command": "rm public/data.json"}, "default")).kind == "ask"
    code = {"code": "import subprocess\nsubprocess.run(['git', 'status'])"}
    assert (await evaluate(project, RUN_PYTHON, code, "default")).kind == "ask"
