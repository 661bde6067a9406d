"""The offline demo model plays its whole session through the real tools."""

from __future__ import annotations

import pytest

from codingcode_jupyter.engine.models.demo import DEMO_FILE
from codingcode_jupyter.engine.session import Session
from codingcode_jupyter.engine.tools.builtin import builtin_tools
from tests.engine.helpers import AllowAll, Recorder, StaticTools, make_deps


class DenyWrites(AllowAll):
    async def decide(self, call, ctx, ask):
        from codingcode_jupyter.engine.approval.types import Verdict

        if call.tool.name == "write_file":
            return Verdict(kind="deny", input=call.input, layer="test", reason="The user denied write_file.")
        return await super().decide(call, ctx, ask)


def _project(tmp_path):
    (tmp_path / "cli.py").write_text("import argparse\n\n\ndef main():\n    pass\n")
    return tmp_path


@pytest.mark.slow
async def test_demo_session_completes_on_a_real_project(tmp_path):
    project = _project(tmp_path)
    session = Session(deps=make_deps(project), tools=StaticTools(builtin_tools()), approver=AllowAll(), model_name="demo")
    events = Recorder()
    done = await session.run_turn("add a --verbose flag", events)
    assert done.stop_reason == "end_turn"
    tools = [e.tool for e in events.of("tool_call_started")]
    assert tools == ["search_files", "read_file", "todo_write", "write_file", "execute_command", "todo_write"]
    assert all(e.status == "ok" for e in events.of("tool_call_finished")), [e.result for e in events.of("tool_call_finished")]
    assert (project / DEMO_FILE).exists()
    # the script it wrote ran and its output reached the final answer
    assert "cli.py: 5 lines" in done.text and "defines: main" in done.text
    assert [i.status for i in session.state.todo] == ["completed"] * 3


async def test_demo_adapts_to_a_denied_edit(tmp_path):
    project = _project(tmp_path)
    session = Session(deps=make_deps(project), tools=StaticTools(builtin_tools()), approver=DenyWrites(), model_name="demo")
    events = Recorder()
    done = await session.run_turn("add a docstring to main", events)
    assert not (project / DEMO_FILE).exists()
    assert "execute_command" not in [e.tool for e in events.of("tool_call_started")]
    assert "won't run anything" in done.text
    # The write step is not left in progress, nor the run step marked done.
    assert [i.status for i in session.state.todo] == ["completed", "pending", "pending"]


@pytest.mark.slow
async def test_demo_on_an_empty_project(tmp_path):
    session = Session(deps=make_deps(tmp_path), tools=StaticTools(builtin_tools()), approver=AllowAll(), model_name="demo")
    done = await session.run_turn("write a summary script")
    assert done.stop_reason == "end_turn" and (tmp_path / DEMO_FILE).exists()


@pytest.mark.slow
async def test_the_demo_picks_a_script_by_the_request_and_says_it_is_one(tmp_path):
    project = _project(tmp_path)
    (project / "test_cli.py").write_text("def test_ok():\n    assert True\n")
    cases = {
        "what files are in this project?": (["search_files", "read_file"], "2 Python files"),
        "explain test_cli.py": (["search_files", "read_file"], "`test_cli.py` has 2 lines and defines `test_ok`"),
        "run the tests": (["search_files", "todo_write", "execute_command", "todo_write"], "They pass"),
        "what is the capital of France?": ([], "A script cannot answer that"),
    }
    for prompt, (tools, said) in cases.items():
        session = Session(deps=make_deps(project), tools=StaticTools(builtin_tools()), approver=AllowAll(), model_name="demo")
        events = Recorder()
        done = await session.run_turn(prompt, events)
        first = "".join(e.text for e in events.of("text_delta")).splitlines()[0]
        assert "scripted" in first and "does not understand" in first, first
        assert [e.tool for e in events.of("tool_call_started")] == tools, prompt
        assert said in done.text, (prompt, done.text)
        assert ".." not in done.text.replace("...", "") and "ANTHROPIC_API_KEY" not in done.text
    assert not (project / DEMO_FILE).exists()  # none of these asked for a change
