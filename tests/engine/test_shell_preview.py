"""What the card shows under a command: only what differs from an ordinary call, in words (issue 36)."""

from __future__ import annotations

from codingcode_jupyter.engine.tools.base import ToolContext
from codingcode_jupyter.engine.tools.shell import ExecuteCommandArgs, execute_command_tool


async def _preview(tmp_path, **args) -> str:
    tool = execute_command_tool()
    assert tool.preview is not None
    return await tool.preview(ExecuteCommandArgs(**args), ToolContext.standalone(tmp_path))


async def test_an_ordinary_command_shows_the_command_alone(tmp_path) -> None:
    assert await _preview(tmp_path, command="ls -la") == "$ ls -la"


async def test_another_directory_and_limit_are_said_in_words(tmp_path) -> None:
    (tmp_path / "sub").mkdir()
    text = await _preview(tmp_path, command="make", cwd="sub", timeout_ms=120_000)
    assert text == "$ make\n(runs in sub/, stopped after 2 minutes)"
    assert await _preview(tmp_path, command="make", timeout_ms=1500) == "$ make\n(stopped after 1.5 s)"


async def test_a_missing_directory_says_the_call_would_fail(tmp_path) -> None:
    assert "would fail" in await _preview(tmp_path, command="ls", cwd="nowhere")
