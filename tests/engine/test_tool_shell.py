"""execute_command contracts: exit codes, capture caps, streaming, timeouts and group kills."""

from __future__ import annotations

import asyncio
import contextlib
import time
from pathlib import Path

import pytest

from codingcode_jupyter.engine import processes
from codingcode_jupyter.engine.events import ToolProgress
from codingcode_jupyter.engine.processes import Spawn
from codingcode_jupyter.engine.tools.shell import OutputBuffer, execute_command_tool
from tests.engine.helpers import make_deps
from tests.polling import eventually

execute_command = execute_command_tool()


def alive(pid: int) -> bool:
    """True while the process exists and is not a zombie (PID 1 here may not reap orphans)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


async def wait_dead(pid: int, within: float = 5.0) -> bool:
    return await eventually(lambda: not alive(pid), within, f"process {pid} to die")


async def test_exit_code_stdout_stderr(ctx):
    result = await execute_command.run({"command": "echo out; echo err >&2; exit 3"}, ctx)
    text = result.text_content
    assert not result.is_error
    assert text.startswith("exit code 3")
    assert "--- stdout ---\nout" in text and "--- stderr ---\nerr" in text


async def test_runs_in_project_or_cwd_and_stdin_is_closed(ctx):
    (ctx.project_path / "sub").mkdir()
    here = await execute_command.run({"command": "pwd"}, ctx)
    assert str(ctx.project_path) in here.text_content
    sub = await execute_command.run({"command": "pwd", "cwd": "sub"}, ctx)
    assert str(ctx.project_path / "sub") in sub.text_content
    start = time.monotonic()
    stdin = await execute_command.run({"command": "cat; echo done"}, ctx)
    assert "done" in stdin.text_content and time.monotonic() - start < 5
    missing = await execute_command.run({"command": "pwd", "cwd": "nope"}, ctx)
    assert missing.is_error and "not found" in missing.text_content


async def test_output_capped_head_and_tail_without_killing(ctx):
    command = "for i in $(seq 1 20000); do echo line$i; done; echo err-tail >&2; exit 7"
    result = await execute_command.run({"command": command}, ctx)
    text = result.text_content
    assert text.startswith("exit code 7")  # the process ran to the end despite the cap
    assert "line1\n" in text and "line20000" in text
    assert "line10000\n" not in text
    assert "characters cut" in text
    assert "err-tail" in text
    assert len(text) < 70_000


async def test_output_streamed_as_progress(ctx, events):
    await execute_command.run({"command": "echo one; sleep 0.1; echo two"}, ctx)
    streamed = "\n".join(e.text for e in events if isinstance(e, ToolProgress))
    assert "one" in streamed and "two" in streamed
    assert all(e.tool_use_id == "t1" for e in events if isinstance(e, ToolProgress))


@pytest.mark.slow
async def test_timeout_kills_group_including_background_children(ctx):
    command = "sleep 100 & echo $! > bg.pid; echo started; sleep 100"
    start = time.monotonic()
    result = await execute_command.run({"command": command, "timeout_ms": 700}, ctx)
    assert time.monotonic() - start < 6
    assert result.is_error and "timed out" in result.text_content
    assert "started" in result.text_content  # partial output kept
    pid = int((ctx.project_path / "bg.pid").read_text())
    assert await wait_dead(pid)


async def test_cancellation_kills_group(ctx):
    task = asyncio.create_task(execute_command.run({"command": "sleep 100 & echo $! > bg.pid; sleep 100"}, ctx))
    pid_file = ctx.project_path / "bg.pid"
    await eventually(lambda: pid_file.exists() and pid_file.read_text().strip(), 5, "the background pid")
    pid = int(pid_file.read_text())
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await wait_dead(pid)


async def test_background_child_holding_pipes_does_not_hang(ctx):
    start = time.monotonic()
    result = await execute_command.run({"command": "sleep 100 & echo $! > bg.pid; echo quick"}, ctx)
    assert time.monotonic() - start < 6
    assert result.text_content.startswith("exit code 0") and "quick" in result.text_content
    assert await wait_dead(int((ctx.project_path / "bg.pid").read_text()))


async def test_timeout_clamped_and_bad_values_rejected(ctx):
    result = await execute_command.run({"command": "true", "timeout_ms": 10**9}, ctx)
    assert not result.is_error and "clamped to 600000" in result.text_content
    bad = await execute_command.run({"command": "true", "timeout_ms": -5}, ctx)
    assert bad.is_error and "timeout_ms" in bad.text_content
    empty = await execute_command.run({"command": ""}, ctx)
    assert empty.is_error and "command" in empty.text_content


async def test_sandbox_seam_used_when_active(ctx):
    class FakeSandbox:
        active = True
        commands = 0

        def command(self):  # the real one removes its empty mount targets when the last command ends
            FakeSandbox.commands += 1
            return contextlib.nullcontext()

        def spawn_for(self, command, cwd, env, watch=None):
            return Spawn(["bash", "-c", f"echo SANDBOXED in {cwd}: {command}"], env)

        def watch_host(self):  # the real one lists the host-executed files to compare after the command
            return None

    ctx = ctx.with_turn(deps=make_deps(ctx.project_path, sandbox=FakeSandbox()))
    result = await execute_command.run({"command": "echo hi"}, ctx)
    assert f"SANDBOXED in {ctx.project_path}: echo hi" in result.text_content and FakeSandbox.commands == 1
    FakeSandbox.active = False
    plain = await execute_command.run({"command": "echo hi"}, ctx)
    assert "SANDBOXED" not in plain.text_content


async def test_preview_names_command_and_directory(ctx):
    # The card's title already names the project: the directory is said only when it is another one.
    preview = await execute_command.preview(execute_command.validate({"command": "make test"}), ctx)
    assert preview == "$ make test"
    (ctx.project_path / "docs").mkdir(exist_ok=True)
    inside = await execute_command.preview(execute_command.validate({"command": "make", "cwd": "docs"}), ctx)
    assert inside == "$ make\n(runs in docs/)"


def test_output_buffer_keeps_head_and_tail_and_counts_cut():
    buffer = OutputBuffer(limit=10)
    for piece in ["abc", "defgh", "ijklmnop", "qrstuvwxyz"]:
        buffer.add(piece)
    rendered = buffer.render()
    assert rendered.startswith("abcde") and rendered.endswith("vwxyz")
    assert "[... 16 characters cut ...]" in rendered


async def test_sigterm_ignoring_command_is_killed_on_timeout(ctx, monkeypatch):
    # The group gets SIGTERM, a grace period, then SIGKILL; a short grace keeps the test quick.
    monkeypatch.setattr(processes, "TERM_GRACE_S", 0.2)
    start = time.monotonic()
    result = await execute_command.run({"command": "trap '' TERM; echo $$ > me.pid; sleep 100", "timeout_ms": 300}, ctx)
    assert result.is_error and "timed out" in result.text_content
    assert 0.3 + 0.2 <= time.monotonic() - start < 8  # the timeout, then the grace it ignored
    assert await wait_dead(int((ctx.project_path / "me.pid").read_text()))


async def test_invalid_utf8_and_signal_exit_are_reported(ctx):
    result = await execute_command.run({"command": r"printf 'ok \xff\xfe end\n'; kill -9 $$"}, ctx)
    assert not result.is_error
    assert result.text_content.startswith("killed by SIGKILL")
    assert "ok \ufffd\ufffd end" in result.text_content
