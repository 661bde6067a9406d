"""execute_command: bash in its own process group, streamed live, killed as a group.

The command runs through :func:`~..processes.run_process` (its own process group, stdin
closed, output captured head-and-tail) inside the sandbox when there is one, with the
project settings' ``env`` set. A non-zero exit is information for the model, not an error.
"""

from __future__ import annotations

import asyncio
import os
import signal
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from .. import telemetry
from ..approval.host_files import settle_host_files
from ..processes import OutputBuffer, Spawn, run_process
from .access import BUILTIN_ACCESS
from .base import ToolContext, ToolDefinition, ToolError, ToolResult
from .files import resolve_arg

__all__ = ["ExecuteCommandArgs", "OutputBuffer", "execute_command_tool", "command_env"]

DEFAULT_TIMEOUT_MS = 30_000
MAX_TIMEOUT_MS = 600_000


class ExecuteCommandArgs(BaseModel):
    """Parameters of execute_command."""

    command: str = Field(min_length=1, description="Shell command, run with bash -c.")
    cwd: str | None = Field(default=None, description="Working directory (default: the project root); relative to the project root.")
    timeout_ms: int = Field(
        default=DEFAULT_TIMEOUT_MS,
        ge=1,
        description=f"Timeout in milliseconds (default {DEFAULT_TIMEOUT_MS}, max {MAX_TIMEOUT_MS}).",
    )
    # Claude Code's Bash tool takes one too; hooks written for it read tool_input.description.
    description: str | None = Field(default=None, max_length=200,
                                    description="What the command does, in 5-10 words (shown to the person).")


def _workdir(args: ExecuteCommandArgs, ctx: ToolContext) -> Path:
    workdir = resolve_arg(ctx, args.cwd) if args.cwd else ctx.resolve(".")
    if not workdir.exists():
        raise ToolError(f"Working directory not found: {workdir}")
    if not workdir.is_dir():
        raise ToolError(f"Working directory is not a directory: {workdir}")
    return workdir


def _spawn(command: str, workdir: Path, sandbox: Any, env: dict[str, str], watch: Any = None) -> Spawn:
    if sandbox is not None and sandbox.active:
        # The watch's walk of the project serves for the masks too; bwrap starts without a launcher,
        # Landlock's from the launcher kept warm.
        spawn = sandbox.spawn_for(command, workdir, env, watch=watch)
        assert isinstance(spawn, Spawn)
        return spawn
    return Spawn(["bash", "-c", command], env)


def command_env(settings_env: dict[str, str]) -> dict[str, str]:
    """The environment a command is started with (the sandbox then keeps its allowlist of it)."""
    env = dict(os.environ)
    # Pagers would wait forever on a closed stdin; colour codes are noise to the model.
    env.update({"PAGER": "cat", "GIT_PAGER": "cat", "NO_COLOR": "1", "TERM": env.get("TERM", "dumb")})
    env.update(settings_env)
    return env


def _exit_label(code: int | None) -> str:
    if code is None:
        return "exit code unknown"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"killed by {name}"
    return f"exit code {code}"


def _format(label: str, out: OutputBuffer, err: OutputBuffer, notes: list[str]) -> str:
    parts = [label, *notes]
    stdout, stderr = out.render(), err.render()
    parts.append("--- stdout ---\n" + (stdout.rstrip("\n") if stdout else "(empty)"))
    parts.append("--- stderr ---\n" + (stderr.rstrip("\n") if stderr else "(empty)"))
    return "\n".join(parts)


async def _execute_command(args: ExecuteCommandArgs, ctx: ToolContext) -> ToolResult:
    workdir = _workdir(args, ctx)
    notes: list[str] = []
    timeout_ms = args.timeout_ms
    if timeout_ms > MAX_TIMEOUT_MS:
        notes.append(f"(timeout_ms {timeout_ms} is above the maximum; clamped to {MAX_TIMEOUT_MS})")
        timeout_ms = MAX_TIMEOUT_MS
    env = command_env(ctx.deps.settings.current().merged.env)
    sandbox = ctx.deps.sandbox()
    # The sandbox's empty mount targets (.mcp.json, .git) leave the project when its last command ends.
    confined = sandbox if sandbox is not None and sandbox.active else None
    with confined.command() if confined is not None else nullcontext():
        # The mounts hold only what exists now: what the command creates that the host runs
        # later is found by comparing before and after, and put to the person (approval/host_files.py).
        watch = confined.watch_host() if confined is not None else None
        try:
            telemetry.command_run(confined is not None)
            spawn = _spawn(args.command, workdir, sandbox, env, watch)
            try:
                run = await run_process(spawn.argv, cwd=workdir, env=spawn.env, timeout=timeout_ms / 1000,
                                        on_output=ctx.progress, pass_fds=spawn.pass_fds, on_start=spawn.close,
                                        start=spawn.start)
            finally:
                spawn.close()  # the descriptors bwrap inherited: its own copies are what it reads
        except OSError as error:
            raise ToolError(f"Could not start the command: {error}") from None
        except asyncio.CancelledError:
            # Interrupted: nobody is asked now, what the command left that the host runs is moved aside.
            if watch is not None:
                watch.quarantine(watch.changes())
            raise
        if watch is not None:
            notes.extend(await settle_host_files(watch, args.command, ctx))
    notes.extend(run.notes)
    out, err, timed_out = run.stdout, run.stderr, run.timed_out
    if timed_out:
        text = _format(f"timed out after {timeout_ms} ms; the command and its children were killed", out, err, notes)
        return ToolResult.text(text, is_error=True)
    return ToolResult.text(_format(_exit_label(run.returncode), out, err, notes))


async def _preview(args: ExecuteCommandArgs, ctx: ToolContext) -> str:
    try:
        workdir = _workdir(args, ctx)
    except ToolError as error:
        return f"$ {args.command}\n(this call would fail: {error})"
    # Only what differs from an ordinary call: another directory than the project's, a longer or
    # shorter limit than the default, in words.
    notes = []
    try:
        where = Path(os.path.realpath(workdir)).relative_to(os.path.realpath(ctx.project_path)).as_posix()
    except ValueError:
        where = str(workdir)
    if where != ".":
        notes.append(f"runs in {where}/")
    timeout_ms = min(args.timeout_ms, MAX_TIMEOUT_MS)
    if timeout_ms != DEFAULT_TIMEOUT_MS:
        notes.append(f"stopped after {_duration(timeout_ms)}")
    return f"$ {args.command}" + (f"\n({', '.join(notes)})" if notes else "")


def _duration(ms: int) -> str:
    seconds = ms / 1000
    if seconds >= 60 and seconds % 60 == 0:
        minutes = int(seconds // 60)
        return f"{minutes} minute{'s' if minutes != 1 else ''}"
    return f"{seconds:g} s"


def execute_command_tool() -> ToolDefinition:
    """The execute_command tool."""
    return ToolDefinition(
        name="execute_command",
        description=(
            "Run a shell command with bash in the project directory (or cwd). stdin is closed. Returns the "
            "exit code, stdout and stderr (each capped, keeping head and tail). A non-zero exit code is "
            f"reported, not raised. Timeout default {DEFAULT_TIMEOUT_MS} ms, max {MAX_TIMEOUT_MS} ms; on "
            "timeout the command and everything it started are killed."
        ),
        parameters=ExecuteCommandArgs,
        execute=_execute_command,
        preview=_preview,
        access=BUILTIN_ACCESS["execute_command"],
    )
