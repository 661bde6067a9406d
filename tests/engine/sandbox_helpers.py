"""Shared pieces of the sandbox tests: the skip condition, a runner, a fake home."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from codingcode_jupyter.engine.sandbox import CommandSandbox, probe_bwrap
from codingcode_jupyter.engine.settings import SandboxSettings

BWRAP = shutil.which("bwrap")
BWRAP_PROBLEM = "bwrap not on PATH" if BWRAP is None else probe_bwrap(BWRAP)
needs_bwrap = pytest.mark.skipif(BWRAP_PROBLEM is not None, reason=f"bubblewrap cannot run here: {BWRAP_PROBLEM}")
# The backend the policy tests run under: "auto" (bubblewrap where it can run, else Landlock, as a
# session chooses) unless set; the container test runs them where only Landlock can.
BACKEND = os.environ.get("CODINGCODE_TEST_SANDBOX_BACKEND", "auto")
_PROBE = CommandSandbox.create(Path("/"), SandboxSettings.model_validate({"backend": BACKEND}))
SANDBOX_PROBLEM = _PROBE.unavailable_reason
RUNNING_BACKEND = _PROBE.backend
needs_sandbox = pytest.mark.skipif(SANDBOX_PROBLEM is not None, reason=f"no sandbox backend here: {SANDBOX_PROBLEM}")

SECRET = "BEGIN-FAKE-PRIVATE-KEY-7f3a9c"


@dataclass
class Run:
    returncode: int
    out: str
    err: str
    # What the compare after the command said (execute_command's notes): files moved aside.
    notes: list[str] = field(default_factory=list)


async def run(sb: CommandSandbox, command: str, cwd: Path | None = None, timeout: float = 20.0,
              compared: bool = True) -> Run:
    """Run ``command`` through the sandbox the way execute_command does (own process group), and
    compare the host-executed files after it, with nobody to ask (what it left is moved aside).
    ``compared`` False: as a caller that does not compare (an MCP server): the stricter policy."""
    from codingcode_jupyter.engine.approval.host_files import settle_host_files

    watch = sb.watch_host() if compared else None
    with sb.command():
        result = await _run(sb, command, cwd, timeout, watch)
        if watch is not None:
            result.notes = await settle_host_files(watch, command, None)
    return result


async def _run(sb: CommandSandbox, command: str, cwd: Path | None, timeout: float, watch) -> Run:
    # As execute_command starts it: bwrap without the launcher, its descriptors passed; Landlock from
    # the launcher kept warm (the one-shot launcher when that cannot serve).
    spawn = sb.spawn_for(command, cwd or sb.project, None, watch=watch)
    proc = await spawn.start(False) if spawn.start is not None else None
    try:
        if proc is None:
            proc = await asyncio.create_subprocess_exec(
                *spawn.argv,
                env=spawn.env,
                pass_fds=spawn.pass_fds,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                start_new_session=True,
            )
    finally:
        spawn.close()
    try:
        out, err, _ = await asyncio.wait_for(asyncio.gather(proc.stdout.read(), proc.stderr.read(), proc.wait()),
                                             timeout)
    except TimeoutError:
        os.killpg(proc.pid, signal.SIGKILL)
        await proc.wait()
        raise
    return Run(proc.returncode, out.decode(errors="replace"), err.decode(errors="replace"))


def make_home(root: Path) -> Path:
    """A home directory holding the kinds of secrets the sandbox must hide."""
    home = root / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text(SECRET)
    (home / ".aws").mkdir()
    (home / ".aws" / "credentials").write_text(SECRET)
    (home / ".config" / "gcloud").mkdir(parents=True)
    (home / ".config" / "gcloud" / "token").write_text(SECRET)
    (home / ".gnupg").mkdir()
    (home / ".bashrc").write_text("# original\n")
    return home


def make_sandbox(project: Path, home: Path, **settings) -> CommandSandbox:
    settings.setdefault("backend", BACKEND)
    return CommandSandbox.create(project, SandboxSettings.model_validate(settings), home=home)
