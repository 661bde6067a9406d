"""Running a subprocess with a timeout and bounded output: one helper for commands and hooks.

The child gets its own session, so its process group is ours to kill, background children
included: on a timeout or a cancellation the whole group gets SIGTERM, a moment, then
SIGKILL. Output is captured head-and-tail so a chatty child never dies of its own output,
and the wait never hangs on a grandchild that still holds the pipes after the child exited.
"""

from __future__ import annotations

import asyncio
import codecs
import os
import signal
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Awaitable, Callable, Mapping, Protocol, Sequence

from .deadline import within

__all__ = ["ChildProcess", "OutputBuffer", "ProcessResult", "Spawn", "run_process", "MAX_STREAM_CHARS"]

MAX_STREAM_CHARS = 30_000
# After the child exits, how long to wait for descendants that still hold its output pipes.
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


@dataclass
class Spawn:
    """How to start one process: its argv, its whole environment (None: the caller's) and the
    descriptors it inherits at their own numbers. The caller owns those descriptors and closes
    them (:meth:`close`) once the process started, or when it could not start."""

    argv: list[str]
    env: dict[str, str] | None = None
    pass_fds: tuple[int, ...] = ()
    # Another way to start it (a launcher kept warm): given whether the child reads stdin, the started
    # process, or None when that way cannot serve now and ``argv`` is started instead.
    start: Callable[[bool], Awaitable["ChildProcess | None"]] | None = None

    def close(self) -> None:
        fds, self.pass_fds = self.pass_fds, ()
        for fd in fds:
            try:
                os.close(fd)
            except OSError:
                pass


class ChildProcess(Protocol):
    """What run_process uses of a started child: asyncio's subprocess, or a launcher kept warm."""

    pid: int

    @property
    def returncode(self) -> int | None: ...

    @property
    def stdout(self) -> asyncio.StreamReader | None: ...

    @property
    def stderr(self) -> asyncio.StreamReader | None: ...

    @property
    def stdin(self) -> asyncio.StreamWriter | None: ...


@dataclass
class ProcessResult:
    """How a child ended: its exit status (negative: killed by that signal), its output, and notes."""

    returncode: int | None
    stdout: OutputBuffer
    stderr: OutputBuffer
    timed_out: bool = False
    notes: list[str] = field(default_factory=list)


def _signal_group(pgid: int, sig: int) -> bool:
    try:
        os.killpg(pgid, sig)
        return True
    except (ProcessLookupError, PermissionError):
        return False


async def _exited(proc: ChildProcess) -> int:
    """The exit status as soon as the process ends.

    ``Process.wait()`` on Python 3.11 also waits for the output pipes to close, which a
    background child can hold open for ever; the return code is known earlier.
    """
    # From a millisecond, doubling: a quick command is not held back by the first sleep.
    delay = 0.001
    while proc.returncode is None:
        await asyncio.sleep(delay)
        delay = min(delay * 2, 0.1)
    return proc.returncode


async def _kill_group(proc: ChildProcess, pgid: int) -> None:
    """SIGTERM the whole group, give it a moment, then SIGKILL whatever is left."""
    if not _signal_group(pgid, signal.SIGTERM):
        return
    try:
        await within(_exited(proc), TERM_GRACE_S)
    except (asyncio.TimeoutError, asyncio.CancelledError):
        pass
    # Background children may ignore SIGTERM or outlive the leader; the group goes regardless.
    _signal_group(pgid, signal.SIGKILL)


async def _pump(stream: asyncio.StreamReader, buffer: OutputBuffer, on_output: Callable[[str], None] | None) -> None:
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    pending = ""
    while True:
        chunk = await stream.read(READ_SIZE)
        if not chunk:
            break
        text = decoder.decode(chunk)
        buffer.add(text)
        if on_output is None:
            continue
        pending += text
        if "\n" in pending:
            complete, _, pending = pending.rpartition("\n")
            on_output(complete)
    rest = decoder.decode(b"", final=True)
    if rest:
        buffer.add(rest)
    if on_output is not None and pending + rest:
        on_output(pending + rest)


async def _feed(proc: ChildProcess, data: bytes) -> None:
    assert proc.stdin is not None
    try:
        proc.stdin.write(data)
        await proc.stdin.drain()
    except (BrokenPipeError, ConnectionResetError):
        pass  # the child does not read its input: that is its business
    finally:
        proc.stdin.close()


async def run_process(
    argv: Sequence[str],
    *,
    cwd: Path | str,
    env: Mapping[str, str] | None,
    timeout: float,
    stdin: bytes | None = None,
    on_output: Callable[[str], None] | None = None,
    limit: int = MAX_STREAM_CHARS,
    pass_fds: Sequence[int] = (),
    on_start: Callable[[], None] | None = None,
    start: Callable[[bool], Awaitable[ChildProcess | None]] | None = None,
) -> ProcessResult:
    """Run ``argv`` in its own process group; OSError when it cannot start.

    ``stdin`` None gives the child a closed input; ``pass_fds`` are inherited at their numbers and
    ``on_start`` is called once the child exists (the caller closes its copies of them there).
    ``start``: another way to start it (Spawn.start), ``argv`` being the fallback.
    ``on_output`` receives complete lines of either stream as they arrive. On timeout the group is killed and ``timed_out`` set; on
    cancellation the group is killed and CancelledError goes on up.
    """
    proc: ChildProcess | None = await start(stdin is not None) if start is not None else None
    if proc is None:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            cwd=cwd,
            env=dict(env) if env is not None else None,
            stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
            pass_fds=tuple(pass_fds),
        )
    if on_start is not None:
        on_start()
    pgid = proc.pid  # start_new_session makes the child its group leader
    result = ProcessResult(None, OutputBuffer(limit), OutputBuffer(limit))
    assert proc.stdout is not None and proc.stderr is not None
    pumps = asyncio.gather(_pump(proc.stdout, result.stdout, on_output), _pump(proc.stderr, result.stderr, on_output))
    feeder = asyncio.ensure_future(_feed(proc, stdin)) if stdin is not None else None
    try:
        try:
            await within(_exited(proc), timeout)
        except asyncio.TimeoutError:
            result.timed_out = True
            await _kill_group(proc, pgid)
        try:
            await within(asyncio.shield(pumps), DRAIN_GRACE_S)
        except asyncio.TimeoutError:
            # The child is done but something it started still holds the pipes.
            result.notes.append("(background processes still held the output after the command ended; they were stopped)")
            await _kill_group(proc, pgid)
            try:
                await within(pumps, TERM_GRACE_S)
            except asyncio.TimeoutError:
                pumps.cancel()
    except asyncio.CancelledError:
        await asyncio.shield(_kill_group(proc, pgid))
        pumps.cancel()
        raise
    finally:
        if feeder is not None and not feeder.done():
            feeder.cancel()
    result.returncode = proc.returncode
    return result
