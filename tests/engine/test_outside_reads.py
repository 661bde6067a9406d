"""Reads outside the project are asked, as in Claude Code: what a tool reads goes to the model.

Read-only tools (read_file, search_code, search_files) run unasked inside the project and in
the directories the person listed in ``permissions.additionalDirectories``; elsewhere they
are asked in every mode but bypass. A project's own list is a loosening, held back until the
project is trusted.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from codingcode_jupyter.engine.approval.pipeline import ApprovalPipeline
from codingcode_jupyter.engine.user_dir import user_dir
from tests.engine.approval_helpers import call, context
from tests.engine.helpers import write_settings


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A directory beside the project, with a file to read."""
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "notes.txt").write_text("shared notes\n")
    return shared


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / "src").mkdir(parents=True)
    (root / "src" / "app.py").write_text("print('hi')\n")
    return root


async def _evaluate(project: Path, tool: str, tool_input: dict, mode: str = "default"):
    pipeline = ApprovalPipeline(project, python_hooks=[], audit=False)
    return await pipeline.evaluate(call(tool, tool_input), context(project, mode=mode))


async def test_a_read_outside_the_project_is_asked_in_every_mode_but_bypass(project, outside):
    target = str(outside / "notes.txt")
    for mode in ("default", "acceptEdits", "plan"):
        result = await _evaluate(project, "read_file", {"path": target}, mode)
        assert result.kind == "ask" and result.layer == "outside", (mode, result.model_dump())
        assert "outside the project" in result.reason and "sent to the model" in result.reason
    assert (await _evaluate(project, "read_file", {"path": target}, "bypass")).kind == "allow"
    # Inside the project nothing changed (the positive control: the check can tell the two apart).
    inside = await _evaluate(project, "read_file", {"path": "src/app.py"})
    assert inside.kind == "allow" and inside.layer == "readonly"


async def test_every_read_only_tool_and_spelling_that_leaves_the_project_is_asked(project, outside):
    (project / "escape").symlink_to(outside)
    relative = os.path.relpath(outside, project)
    for tool, tool_input in [
        ("read_file", {"path": f"{relative}/notes.txt"}),
        ("read_file", {"path": "escape/notes.txt"}),  # a symlink inside the project leading out
        ("search_code", {"pattern": "notes", "path": str(outside)}),
        ("search_files", {"pattern": "*.txt", "path": str(outside)}),
    ]:
        result = await _evaluate(project, tool, tool_input)
        assert result.kind == "ask" and result.layer == "outside", (tool, tool_input, result.model_dump())


async def test_the_persons_additional_directories_are_read_unasked(project, outside):
    user = user_dir()
    user.mkdir(parents=True, exist_ok=True)
    (user / "settings.json").write_text(json.dumps({"permissions": {"additionalDirectories": [str(outside)]}}))
    result = await _evaluate(project, "read_file", {"path": str(outside / "notes.txt")})
    assert result.kind == "allow" and result.layer == "readonly", result.model_dump()
    # Only that directory: its parent is still outside.
    assert (await _evaluate(project, "search_files", {"pattern": "*", "path": str(outside.parent)})).kind == "ask"


async def test_credential_stores_stay_asked_inside_an_added_directory(project, monkeypatch, tmp_path):
    home = tmp_path / "home"
    (home / ".aws").mkdir(parents=True)
    (home / ".aws" / "credentials").write_text("[default]\n")
    monkeypatch.setenv("HOME", str(home))
    write_settings(project, {"permissions": {"additionalDirectories": ["~"]}}, "settings.local.json")
    assert (await _evaluate(project, "read_file", {"path": str(home / "notes.txt")})).kind == "allow"
    result = await _evaluate(project, "read_file", {"path": "~/.aws/credentials"})
    assert result.kind == "ask" and "credential store" in " ".join(v.reason or "" for v in result.layers)


async def test_a_projects_additional_directories_wait_for_trust(project, outside, monkeypatch):
    monkeypatch.delenv("CODINGCODE_TRUST")
    write_settings(project, {"permissions": {"additionalDirectories": ["../shared"]}})
    untrusted = await _evaluate(project, "read_file", {"path": str(outside / "notes.txt")})
    assert untrusted.kind == "ask" and untrusted.layer == "trust", untrusted.model_dump()
    assert "`../shared`" in untrusted.reason and "%agent trust" in untrusted.reason
    monkeypatch.setenv("CODINGCODE_TRUST", "1")
    trusted = await _evaluate(project, "read_file", {"path": str(outside / "notes.txt")})
    assert trusted.kind == "allow", trusted.model_dump()


async def test_always_allow_on_an_outside_read_offers_a_path_rule(project, outside):
    result = await _evaluate(project, "read_file", {"path": str(outside / "notes.txt")})
    offered = [rule for choice in result.allow_choices for rule in choice]
    assert any(rule.startswith("read_file(") and str(outside) in rule for rule in offered), offered


def _code_tool(ipython: bool = False):
    from pydantic import BaseModel

    from codingcode_jupyter.engine.tools.access import ToolAccess
    from codingcode_jupyter.engine.tools.base import ToolDefinition

    class Args(BaseModel):
        code: str

    async def run(args, ctx):  # pragma: no cover - never run, only judged
        return ""

    # As run_python and run_cells are declared: code that can reach whatever it names.
    return ToolDefinition(name="run_code_here", description="Run code.", parameters=Args, execute=run,
                          access=ToolAccess(code="code", opaque=True, ipython=ipython))


@pytest.mark.parametrize("ipython", [False, True])
def test_a_division_in_code_is_not_a_path_and_a_written_path_still_is(project, ipython):
    """`total / len(rows)` divides (issue 46: the card said "It reads outside the project"); a path
    written in the code, a string literal or a shell line, is still read as one (the control)."""
    from codingcode_jupyter.engine.approval.subject import build_subject

    tool = _code_tool(ipython)
    divided = build_subject(tool, {"code": "mean_amount = total / len(rows)\nhalf = total // 2"}, project)
    assert [ref.raw for ref in divided.paths] == [], [ref.raw for ref in divided.paths]
    for code in ("name = '/etc/hostname'\nprint(len(name))", "x = 1 / 2\np = b'/etc/hostname'"):
        written = build_subject(tool, {"code": code}, project)
        assert "/etc/hostname" in [ref.raw for ref in written.paths], (code, [ref.raw for ref in written.paths])
    if ipython:
        shell = build_subject(tool, {"code": "x = 1 / 2\n!cat /etc/hostname"}, project)
        assert "/etc/hostname" in [ref.raw for ref in shell.paths], [ref.raw for ref in shell.paths]
    # Code that does not parse is read word by word, as before.
    broken = build_subject(tool, {"code": "x = (1 / 2"}, project)
    assert "/" in [ref.raw for ref in broken.paths]
