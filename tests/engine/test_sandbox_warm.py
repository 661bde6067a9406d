"""The Landlock launcher kept warm (sandbox/warm.py): commands started from it behave as those the
one-shot launcher starts, the confinement is the same, and when it cannot serve the one-shot
launcher runs the command instead."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path

import pytest

from codingcode_jupyter.engine.processes import run_process
from codingcode_jupyter.engine.sandbox import CommandSandbox, landlock
from codingcode_jupyter.engine.sandbox.warm import WarmLauncher
from tests.engine.sandbox_helpers import SECRET, make_sandbox

pytestmark = pytest.mark.skipif(landlock.landlock_abi() < 1, reason="the kernel offers no Landlock")


@pytest.fixture
def furnished(project: Path) -> Path:
    (project / ".env").write_text(f"KEY={SECRET}\n")
    (project / "src").mkdir()
    (project / "src" / "a.txt").write_text("visible\n")
    return project


@pytest.fixture
async def warm_box(furnished: Path, home: Path):
    box = make_sandbox(furnished, home, backend="landlock")
    assert box.active, box.unavailable_reason
    yield box
    await box.aclose()


@pytest.fixture
async def cold_box(furnished: Path, home: Path):
    box = make_sandbox(furnished, home, backend="landlock", warmLauncher=False)
    yield box
    await box.aclose()


async def _execute(box: CommandSandbox, command: str, *, stdin: bytes | None = None, timeout: float = 20.0):
    """As execute_command runs it: the host watch, spawn_for, run_process with the spawn's start."""
    watch = box.watch_host()
    with box.command():
        spawn = box.spawn_for(command, box.project, dict(os.environ), watch=watch)
        try:
            return await run_process(spawn.argv, cwd=box.project, env=spawn.env, timeout=timeout, stdin=stdin,
                                     pass_fds=spawn.pass_fds, on_start=spawn.close, start=spawn.start)
        finally:
            spawn.close()


def _warm(box: CommandSandbox) -> WarmLauncher:
    warm = box._warm
    assert warm is not None, "no command went through the warm launcher"
    return warm


def _server_pid(box: CommandSandbox) -> int:
    proc = _warm(box)._proc
    assert proc is not None and proc.poll() is None
    return proc.pid


def _parent_of(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        return int(next(line for line in status if line.startswith("PPid:")).split()[1])


CASES = [
    ("echo out; echo err >&2; exit 3", None),
    ("kill -TERM $$", None),
    ("read line; echo got $line", b"typed\n"),
    ("cat .env; cat src/a.txt", None),
    ("echo made > src/made.txt && cat src/made.txt && rm src/made.txt", None),
    ("cat /etc/shadow; ls ~/.ssh", None),
    ("(sleep 0.2; echo late) & echo early", None),
    ("echo $TMPDIR | grep -c codingcode-sandbox; env | grep -c '^ANTHROPIC' ; true", None),
]


@pytest.mark.parametrize(("command", "stdin"), CASES, ids=[c for c, _ in CASES])
async def test_a_warm_start_runs_a_command_as_the_one_shot_launcher_does(
    warm_box: CommandSandbox, cold_box: CommandSandbox, command: str, stdin: bytes | None, monkeypatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-kept-from-commands")
    warm = await _execute(warm_box, command, stdin=stdin)
    cold = await _execute(cold_box, command, stdin=stdin)
    assert cold_box._warm is None  # the control: it really ran the one-shot launcher
    assert _server_pid(warm_box) > 0
    private = (str(warm_box.private_dir()), str(cold_box.private_dir()))
    assert (warm.returncode, warm.stdout.render(), warm.stderr.render().replace(*private)) == (
        cold.returncode, cold.stdout.render(), cold.stderr.render())  # fmt: skip
    assert SECRET not in warm.stdout.render() and "sk-ant-kept" not in warm.stdout.render()


async def test_the_launcher_is_a_child_of_the_warm_process_and_leads_its_own_group(warm_box: CommandSandbox) -> None:
    spawn = warm_box.spawn_for("sleep 0.5", warm_box.project, dict(os.environ), watch=warm_box.watch_host())
    assert spawn.start is not None
    started = await spawn.start(False)
    assert started is not None
    try:
        assert _parent_of(started.pid) == _server_pid(warm_box)
        assert os.getpgid(started.pid) == started.pid  # what run_process kills on a timeout
        assert os.getsid(started.pid) == started.pid
    finally:
        assert await started.wait() == 0


async def test_commands_get_the_default_sigpipe(warm_box: CommandSandbox, cold_box: CommandSandbox) -> None:
    # Python ignores SIGPIPE and an ignored signal stays ignored across exec: `yes` then complains.
    for box in (warm_box, cold_box):
        done = await _execute(box, "yes | head -1")
        assert (done.returncode, done.stdout.render(), done.stderr.render()) == (0, "y\n", "")


async def test_a_timeout_kills_the_command_and_what_it_left(warm_box: CommandSandbox) -> None:
    marker = "31.4159"
    start = time.monotonic()
    done = await _execute(warm_box, f"sleep {marker} & sleep {marker}", timeout=0.5)
    assert done.timed_out
    assert time.monotonic() - start < 5
    await asyncio.sleep(0.2)
    left = [pid for pid in os.listdir("/proc") if pid.isdigit() and _cmdline(pid).endswith(marker)]
    assert left == []


async def test_a_cancelled_command_is_killed_with_what_it_left(warm_box: CommandSandbox) -> None:
    marker = "27.1828"
    task = asyncio.ensure_future(_execute(warm_box, f"sleep {marker} & sleep {marker}"))
    for _ in range(100):
        await asyncio.sleep(0.05)
        if any(_cmdline(pid).endswith(marker) for pid in os.listdir("/proc") if pid.isdigit()):
            break
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.sleep(0.3)
    assert not any(_cmdline(pid).endswith(marker) for pid in os.listdir("/proc") if pid.isdigit())


def _cmdline(pid: str) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return handle.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""


async def test_commands_run_at_once(warm_box: CommandSandbox) -> None:
    first, second = await asyncio.gather(_execute(warm_box, "sleep 0.3; echo one"),
                                         _execute(warm_box, "sleep 0.3; echo two"))
    assert (first.stdout.render(), second.stdout.render()) == ("one\n", "two\n")


async def test_a_dead_warm_process_is_started_again(warm_box: CommandSandbox) -> None:
    assert (await _execute(warm_box, "echo first")).stdout.render() == "first\n"
    old = _server_pid(warm_box)
    os.kill(old, signal.SIGKILL)
    await asyncio.sleep(0.1)
    done = await _execute(warm_box, "echo second")
    assert (done.returncode, done.stdout.render()) == (0, "second\n")
    assert _server_pid(warm_box) != old


async def test_when_the_warm_process_refuses_the_one_shot_launcher_runs_the_command(
    warm_box: CommandSandbox, monkeypatch
) -> None:
    await _execute(warm_box, "true")
    warm = _warm(warm_box)
    # The kernel believes the warm process holds a plan it does not: it refuses, and nothing starts.
    spawn = warm_box.spawn_for("echo fallback", warm_box.project, dict(os.environ), watch=warm_box.watch_host())
    request = spawn.start.args[0]  # type: ignore[union-attr]
    warm._drop()
    warm._channel()  # a fresh warm process, which holds no ruleset yet
    warm._known.append(request.token)
    assert await spawn.start(False) is None  # type: ignore[misc]
    assert request.token not in warm._known  # sent with its rules next time
    done = await run_process(spawn.argv, cwd=warm_box.project, env=spawn.env, timeout=20)
    assert (done.returncode, done.stdout.render()) == (0, "fallback\n")
    # And a warm process that cannot be reached at all: every command through the one-shot launcher.
    monkeypatch.setattr(WarmLauncher, "_channel", lambda self: (_ for _ in ()).throw(OSError("no fork here")))
    warm._drop()
    done = await _execute(warm_box, "echo still")
    assert (done.returncode, done.stdout.render()) == (0, "still\n")
    assert warm.failed is not None


async def test_the_ruleset_is_made_once_per_plan_and_again_when_the_project_changes(
    warm_box: CommandSandbox,
) -> None:
    def token() -> str:
        spawn = warm_box.spawn_for("true", warm_box.project, dict(os.environ), watch=warm_box.watch_host())
        return spawn.start.args[0].token  # type: ignore[union-attr]

    await _execute(warm_box, "true")
    first = token()
    assert token() == first  # nothing changed: the same plan, the ruleset kept by the warm process
    # A directory replaced under the same name: the ruleset made for the old one would not reach
    # the new one (Landlock rules hold inodes), so the plan and its ruleset are made again.
    done = await _execute(warm_box, "mv src src.old && mkdir src && echo new > src/b.txt")
    assert done.returncode == 0, done.stderr.render()
    assert token() != first
    done = await _execute(warm_box, "cat src/b.txt && echo more >> src/b.txt && cat src.old/a.txt")
    assert (done.returncode, done.stdout.render()) == (0, "new\nvisible\n"), done.stderr.render()
    # A secret the person adds between commands is hidden from the next one.
    (warm_box.project / "src" / ".env.local").write_text(f"KEY={SECRET}\n")
    done = await _execute(warm_box, "cat src/.env.local")
    assert done.returncode != 0 and SECRET not in done.stdout.render()


async def test_another_process_never_uses_the_kernel_s_warm_process(warm_box: CommandSandbox, monkeypatch) -> None:
    await _execute(warm_box, "true")
    warm = _warm(warm_box)
    kernels = warm._control
    # As a fork of the kernel sees it: the same object, another pid. It starts its own.
    real = os.getpid()
    monkeypatch.setattr("codingcode_jupyter.engine.sandbox.warm.os.getpid", lambda: real + 1)
    theirs = warm._channel()
    assert theirs is not kernels
    assert kernels is not None and kernels.fileno() >= 0  # the kernel's end left open, not closed
    monkeypatch.undo()
    theirs.close()


def test_the_setting_turns_it_off(furnished: Path, home: Path) -> None:
    box = make_sandbox(furnished, home, backend="landlock", warmLauncher=False)
    spawn = box.spawn_for("true", furnished, dict(os.environ), watch=box.watch_host())
    assert spawn.start is None and spawn.argv[1:4] == ["-I", "-S", "-c"]
    on = make_sandbox(furnished, home, backend="landlock")
    assert on.spawn_for("true", furnished, dict(os.environ), watch=on.watch_host()).start is not None


async def test_a_stopped_warm_process_does_not_hold_the_command(warm_box: CommandSandbox, monkeypatch) -> None:
    # Before Landlock ABI 6 a command can stop it (signals are not scoped); it must not wedge the kernel.
    monkeypatch.setattr("codingcode_jupyter.engine.sandbox.warm._ANSWER_S", 1.0)
    await _execute(warm_box, "true")
    stopped = _server_pid(warm_box)
    os.kill(stopped, signal.SIGSTOP)
    try:
        start = time.monotonic()
        done = await _execute(warm_box, "echo through the one-shot launcher")
        assert (done.returncode, done.stdout.render()) == (0, "through the one-shot launcher\n")
        assert time.monotonic() - start < 8
        again = await _execute(warm_box, "echo warm again")
        assert again.stdout.render() == "warm again\n"
        assert _server_pid(warm_box) != stopped
    finally:
        try:
            os.kill(stopped, signal.SIGCONT)
        except ProcessLookupError:
            pass
