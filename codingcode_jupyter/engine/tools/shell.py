"""execute_command: bash in its own process group, streamed live, killed as a group.

The command gets its own session (so its process group is ours to kill, background
children included), stdin closed, and output captured head-and-tail so a chatty command
never dies of its own output. A non-zero exit is information for the model, not an error.
"""

from __future__ import annotations

import asyncio
import codecs
import os
import signal
from collections import deque
from pathlib import Path

from pydantic import BaseModel, Field

from .access import ToolAccess
from .base import ToolContext, ToolDefinition, ToolError, ToolResult
from .files import resolve_arg

__all__ = ["ExecuteCommandArgs", "OutputBuffer", "execute_command_tool"]

DEFAULT_TIMEOUT_MS = 30_000
MAX_TIMEOUT_MS = 600_000
MAX_STREAM_CHARS = 30_000
# After the command exits, how long to wait for children that still hold its output pipes.
DRAIN_GRACE_S = 0.5
TERM_GRACE_S = 2.0
READ_SIZE = 65536


class OutputBuffer:
    """Keeps the first and last ``limit/2`` characters of a stream and counts what fell between."""

    def __init__(self, limit: int = MAX_STREAM_CHARS) -> None:
        self.head_limit = limit // 2
        self.tail_limit = limit - self.head_limit
        self.head: list[str] = []
        self.head_len = 0
        self.tail: deque[str] = deque()
        self.tail_len = 0
        self.cut = 0

    def add(self, text: str) -> None:
        if self.head_len < self.head_limit:
            take = text[: self.head_limit - self.head_len]
            self.head.append(take)
            self.head_len += len(take)
            text = text[len(take):]
        if not text:
            return
        self.tail.append(text)
        self.tail_len += len(text)
        while self.tail_len > self.tail_limit:
            first = self.tail[0]
            excess = self.tail_len - self.tail_limit
            if len(first) <= excess:
                self.tail.popleft()
                self.tail_len -= len(first)
                self.cut += len(first)
            else:
                self.tail[0] = first[excess:]
                self.tail_len -= excess
                self.cut += excess

    def render(self) -> str:
        head, tail = "".join(self.head), "".join(self.tail)
        if self.cut:
            return f"{head}\n[... {self.cut} characters cut ...]\n{tail}"
        return head + tail


class ExecuteCommandArgs(BaseModel):
    """Parameters of execute_command."""

    command: str = Field(min_length=1, description="Shell command, run with bash -c.")
    cwd: str | None = Field(default=None, description="Working directory (default: the project root); relative to the project root.")
    timeout_ms: int = Field(
        default=DEFAULT_TIMEOUT_MS,
        ge=1,
        description=f"Timeout in milliseconds (default {DEFAULT_TIMEOUT_MS}, max {MAX_TIMEOUT_MS}).",
    )


def _workdir(args: ExecuteCommandArgs, ctx: ToolContext) -> Path:
    workdir = resolve_arg(ctx, args.cwd) if args.cwd else ctx.resolve(".")
    if not workdir.exists():
        raise ToolError(f"Working directory not found: {workdir}")
    if not workdir.is_dir():
        raise ToolError(f"Working directory is not a directory: {workdir}")
    return workdir


def _argv(command: str, workdir: Path, ctx: ToolContext) -> list[str]:
    sandbox = ctx.deps.sandbox() if ctx.deps is not None else None
    if sandbox is not None and sandbox.active:
        return list(sandbox.argv_for(command, workdir))
    return ["bash", "-c", command]


def _signal_group(pgid: int, sig: int) -> bool:
    try:
        os.killpg(pgid, sig)
        return True
    except (ProcessLookupError, PermissionError):
        return False


async def _kill_group(proc: asyncio.subprocess.Process, pgid: int) -> None:
    """SIGTERM the whole group, give it a moment, then SIGKILL whatever is left."""
    if not _signal_group(pgid, signal.SIGTERM):
        return
    try:
        await asyncio.wait_for(_exited(proc), TERM_GRACE_S)
    except (asyncio.TimeoutError, asyncio.CancelledError):
        pass
    # Background children may ignore SIGTERM or outlive the leader; the group goes regardless.
    _signal_group(pgid, signal.SIGKILL)


async def _exited(proc: asyncio.subprocess.Process) -> int:
    """The exit status as soon as the process ends.

    ``Process.wait()`` on Python 3.11 also waits for the output pipes to close, which a
    background child can hold open for ever; the return code is known earlier.
    """
    delay = 0.01
    while proc.returncode is None:
        await asyncio.sleep(delay)
        delay = min(delay * 2, 0.1)
    return proc.returncode


async def _pump(stream: asyncio.StreamReader, buffer: OutputBuffer, ctx: ToolContext) -> None:
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    pending = ""
    while True:
        chunk = await stream.read(READ_SIZE)
        if not chunk:
            break
        text = decoder.decode(chunk)
        buffer.add(text)
        pending += text
        if "\n" in pending:
            complete, _, pending = pending.rpartition("\n")
            ctx.progress(complete)
    rest = pending + decoder.decode(b"", final=True)
    if rest:
        buffer.add(rest[len(pending):])
        ctx.progress(rest)


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
    env = dict(os.environ)
    # Pagers would wait forever on a closed stdin; colour codes are noise to the model.
    env.update({"PAGER": "cat", "GIT_PAGER": "cat", "NO_COLOR": "1", "TERM": env.get("TERM", "dumb")})
    try:
        proc = await asyncio.create_subprocess_exec(
            *_argv(args.command, workdir, ctx),
            cwd=workdir,
            env=env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
        )
    except OSError as error:
        raise ToolError(f"Could not start the command: {error}") from None
    pgid = proc.pid  # start_new_session makes the child its group leader
    out, err = OutputBuffer(), OutputBuffer()
    assert proc.stdout is not None and proc.stderr is not None
    pumps = asyncio.gather(_pump(proc.stdout, out, ctx), _pump(proc.stderr, err, ctx))
    timed_out = False
    try:
        try:
            await asyncio.wait_for(_exited(proc), timeout_ms / 1000)
        except asyncio.TimeoutError:
            timed_out = True
            await _kill_group(proc, pgid)
        try:
            await asyncio.wait_for(asyncio.shield(pumps), DRAIN_GRACE_S)
        except asyncio.TimeoutError:
            # The command is done but something it started still holds the pipes.
            notes.append("(background processes still held the output after the command ended; they were stopped)")
            await _kill_group(proc, pgid)
            try:
                await asyncio.wait_for(pumps, TERM_GRACE_S)
            except asyncio.TimeoutError:
                pumps.cancel()
    except asyncio.CancelledError:
        await asyncio.shield(_kill_group(proc, pgid))
        pumps.cancel()
        raise
    if timed_out:
        text = _format(f"timed out after {timeout_ms} ms; the command and its children were killed", out, err, notes)
        return ToolResult.text(text, is_error=True)
    return ToolResult.text(_format(_exit_label(proc.returncode), out, err, notes))


async def _preview(args: ExecuteCommandArgs, ctx: ToolContext) -> str:
    try:
        workdir = _workdir(args, ctx)
    except ToolError as error:
        return f"$ {args.command}\n(this call would fail: {error})"
    return f"$ {args.command}\n(in {workdir}, timeout {min(args.timeout_ms, MAX_TIMEOUT_MS)} ms)"


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
        access=ToolAccess(command="command", cwd="cwd"),
    )
