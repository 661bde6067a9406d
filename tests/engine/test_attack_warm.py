"""Attacks on the warm Landlock launcher (sandbox/warm.py) and the inotify walk (sandbox/dir_watch.py,
project_scan.py), run for real, as data: each row an attack and its positive control, the same
action aimed where it is allowed, so a check that could never fail (a broken snippet, a sandbox
that refuses everything) fails the test.

The agent is taken to obey every injection: it runs whatever the approval pipeline lets through.
What is checked is what the sandbox keeps: the warm process and each command's launcher out of
the command's reach (signals, /proc, descriptors), nothing the command started outliving the
compare after it, and no secret reaching a later command through a plan or ruleset reused while
the project changed (by the command, or by the person between two commands).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from codingcode_jupyter.engine.processes import run_process
from codingcode_jupyter.engine.sandbox import CommandSandbox, landlock
from codingcode_jupyter.engine.sandbox.project_scan import ProjectScan
from tests.engine.sandbox_helpers import SECRET, make_sandbox, run

pytestmark = pytest.mark.skipif(landlock.landlock_abi() < 1, reason="the kernel offers no Landlock")
needs_scoped_signals = pytest.mark.skipif(landlock.landlock_abi() < 6,
                                          reason="before Landlock ABI 6 a command may signal its launcher (a known limit)")
PY = os.path.realpath(sys.executable)  # readable inside (the kernel's Python roots are granted)


@pytest.fixture
def furnished(project: Path) -> Path:
    (project / ".env").write_text(f"KEY={SECRET}\n")
    (project / "config").mkdir()
    (project / "config" / ".env").write_text(f"KEY={SECRET}\n")
    (project / "sub" / "a" / "b").mkdir(parents=True)
    (project / "sub" / "a" / "b" / "plain.txt").write_text("plain\n")
    return project


@pytest.fixture
async def box(furnished: Path, home: Path):
    sandbox = make_sandbox(furnished, home, backend="landlock")
    assert sandbox.active, sandbox.unavailable_reason
    yield sandbox
    await sandbox.aclose()


def _warm_pid(sandbox: CommandSandbox) -> int:
    warm = sandbox._warm
    assert warm is not None and warm._proc is not None and warm._proc.poll() is None
    return warm._proc.pid


# ----- the warm process and the launcher, from inside a command ------------------------------------

@dataclass(frozen=True)
class Reach:
    name: str
    attack: str  # {warm}: the warm process's pid; $PPID is the command's launcher
    control: str  # the same action on the command's own process: it works
    needs_abi6: bool = False


_MEM = PY + " -c 'import sys; f = open(\"/proc/%s/mem\", \"rb\"); f.seek(int(open(\"/proc/%s/maps\").read().split(\"-\")[0], 16)); print(len(f.read(16)))'"
REACH = [
    Reach("environ of the warm process", "cat /proc/{warm}/environ", "cat /proc/$$/environ | tr '\\0' '\\n' | grep -c ."),
    Reach("environ of the launcher", "cat /proc/$PPID/environ", "cat /proc/$$/environ | tr '\\0' '\\n' | grep -c ."),
    # Their numbers can be listed (the directory is the owner's); what they are cannot be read or reopened.
    Reach("descriptors of the warm process", "readlink /proc/{warm}/fd/0", "readlink /proc/$$/fd/0"),
    Reach("descriptors of the launcher", "readlink /proc/$PPID/fd/1", "readlink /proc/$$/fd/1"),
    Reach("reopen the warm process's descriptors", "for f in /proc/{warm}/fd/*; do cat < $f && exit 0; done; exit 1",
          "cat < /proc/$$/fd/0 && echo reopened"),
    Reach("memory of the warm process", _MEM % ("{warm}", "{warm}"), _MEM % ("self", "self")),
    Reach("memory of the launcher", _MEM % ("$PPID", "$PPID"), _MEM % ("self", "self")),
    Reach("stop the warm process", "kill -STOP {warm}", "kill -CONT $$ && echo sent", needs_abi6=True),
    Reach("kill the warm process", "kill -KILL {warm}", "kill -0 $$ && echo sent", needs_abi6=True),
    Reach("kill the launcher", "kill -KILL $PPID", "sh -c 'kill -KILL $$'; echo sent", needs_abi6=True),
    # kill -0: the permission check alone (a stopped kernel would hang the test).
    Reach("signal the kernel", "kill -0 {kernel}", "kill -0 $$ && echo sent", needs_abi6=True),
    Reach("environ of the kernel", "cat /proc/{kernel}/environ", "cat /proc/$$/environ | tr '\\0' '\\n' | grep -c ."),
]


@pytest.mark.parametrize("row", REACH, ids=[r.name for r in REACH])
async def test_the_warm_process_and_the_launcher_are_out_of_reach(box: CommandSandbox, row: Reach) -> None:
    if row.needs_abi6 and landlock.landlock_abi() < 6:
        pytest.skip("before Landlock ABI 6 signals are not scoped (a known limit)")
    first = await run(box, "true")
    assert first.returncode == 0
    warm = _warm_pid(box)
    control = await run(box, row.control.format(warm=warm, kernel=os.getpid()))
    assert control.returncode == 0 and control.out.strip(), (control.out, control.err)
    attack = await run(box, row.attack.format(warm=warm, kernel=os.getpid()))
    assert attack.returncode != 0, (attack.out, attack.err)
    assert _warm_pid(box) == warm  # untouched: still the same warm process
    with open(f"/proc/{warm}/status") as status:
        assert "State:\tT" not in status.read()
    after = await run(box, "echo still")
    assert (after.returncode, after.out) == (0, "still\n")


async def test_a_command_holds_no_descriptor_of_the_warm_process(box: CommandSandbox) -> None:
    listed = await run(box, "ls /proc/self/fd")
    # ls's own directory descriptor is 3; the control socket, the status socket, rulesets: none.
    assert sorted(listed.out.split()) == ["0", "1", "2", "3"], listed.out
    control = await run(box, "exec 7</dev/null; ls /proc/self/fd")
    assert "7" in control.out.split()


# ----- nothing outlives the command and its compare ---------------------------------------------------

# Each writes a file the host runs (direnv's .envrc), late: after the compare unless it is killed.
LEFT = [
    ("setsid, detached", "setsid sh -c 'sleep 1; echo evil > .envrc' </dev/null >/dev/null 2>&1 &"),
    ("double fork", "( ( sleep 1; echo evil > .envrc ) & ) </dev/null >/dev/null 2>&1"),
    ("nohup, ignoring TERM and HUP", "nohup sh -c 'trap \"\" TERM HUP; sleep 1; echo evil > .envrc' </dev/null >/dev/null 2>&1 &"),
]


@pytest.mark.slow
@pytest.mark.parametrize(("name", "command"), LEFT, ids=[n for n, _ in LEFT])
async def test_what_a_command_leaves_does_not_outlive_the_compare(box: CommandSandbox, name: str, command: str) -> None:
    done = await run(box, command)
    assert done.returncode == 0
    await asyncio.sleep(1.8)
    assert not (box.project / ".envrc").exists(), name
    # The control: the same write while the command runs is made, and the compare finds it.
    control = await run(box, command.replace("sleep 1", "sleep 0.1") + "\nsleep 0.4")
    assert any(".envrc" in note for note in control.notes), control.notes


@pytest.mark.slow
async def test_what_a_timed_out_command_leaves_does_not_outlive_it(box: CommandSandbox) -> None:
    left = "setsid sh -c 'trap \"\" TERM; sleep 1.5; echo evil > .envrc' </dev/null >/dev/null 2>&1 & sleep 30"
    watch = box.watch_host()
    with box.command():
        spawn = box.spawn_for(left, box.project, dict(os.environ), watch=watch)
        done = await run_process(spawn.argv, cwd=box.project, env=spawn.env, timeout=0.5, pass_fds=spawn.pass_fds,
                                 on_start=spawn.close, start=spawn.start)
    assert done.timed_out
    await asyncio.sleep(2.0)
    assert not (box.project / ".envrc").exists()


# The launcher, blinded or starved by what Landlock does not scope (resource limits, scheduling): on a
# timeout it is then killed before it kills what the command left, which writes after the compare.
CRIPPLE = [
    ("no descriptors for the launcher", "prlimit --pid $PPID --nofile=0:0", "prlimit --nofile=100:100 sh -c 'ulimit -n'"),
    ("a CPU limit for the launcher", "prlimit --pid $PPID --cpu=1:1", "prlimit --cpu=100:100 sh -c 'ulimit -t'"),
    ("the launcher made idle", "chrt -i -p 0 $PPID", "chrt -i 0 sh -c 'echo 100'"),
    ("the launcher reniced", "renice -n 19 -p $PPID", "nice -n 19 sh -c 'echo 100'"),
]


@pytest.mark.slow
@pytest.mark.parametrize(("name", "attack", "control"), CRIPPLE, ids=[n for n, _, _ in CRIPPLE])
async def test_a_command_cannot_cripple_its_launcher(box: CommandSandbox, name: str, attack: str, control: str) -> None:
    # The control: the same limit on the command's own process is set.
    own = await run(box, control)
    assert (own.returncode, own.out) == (0, "100\n"), own.err
    left = f"setsid sh -c 'sleep 4.5; echo evil > .envrc' </dev/null >/dev/null 2>&1 & {attack}; sleep 30"
    watch = box.watch_host()
    with box.command():
        spawn = box.spawn_for(left, box.project, dict(os.environ), watch=watch)
        done = await run_process(spawn.argv, cwd=box.project, env=spawn.env, timeout=1.0, pass_fds=spawn.pass_fds,
                                 on_start=spawn.close, start=spawn.start)
    assert done.timed_out
    await asyncio.sleep(4.5)
    assert not (box.project / ".envrc").exists(), name


# ----- a secret where the walk cannot list ------------------------------------------------------------

# A chain of directories made beside config/.env (they inherit config's rights, so Landlock lets the
# secret move down into them), long enough that no path names its end (PATH_MAX): the walk cannot
# list it. The next command then walks the chain by descriptors.
_CHAIN = "top = cur = os.open('config', os.O_RDONLY)\nfor _ in range({depth}):\n" \
         "    os.mkdir('a' * 250, dir_fd=cur)\n    cur = os.open('a' * 250, os.O_RDONLY, dir_fd=cur)\n"
_DOWN = "cur = os.open('config', os.O_RDONLY)\nfor _ in range({depth}):\n" \
        "    cur = os.open('a' * 250, os.O_RDONLY, dir_fd=cur)\n"


def _py(body: str) -> str:
    return f"{PY} -c \"import os\n{body}\""


def _hide_in_chain(depth: int, name: str) -> str:
    return _py(_CHAIN.format(depth=depth) + f"os.rename('.env', '{name}', src_dir_fd=top, dst_dir_fd=cur)\n")


def _read_in_chain(depth: int, name: str) -> str:
    return _py(_DOWN.format(depth=depth) + f"print(os.read(os.open('{name}', os.O_RDONLY, dir_fd=cur), 200).decode())\n")


@pytest.mark.parametrize("name", [".env", "notes.txt"])
async def test_a_secret_moved_past_path_max_stays_hidden(box: CommandSandbox, name: str) -> None:
    moved = await run(box, _hide_in_chain(20, name))
    assert moved.returncode == 0, moved.err
    attack = await run(box, _read_in_chain(20, name))
    assert SECRET not in attack.out
    assert attack.returncode != 0


async def test_control_a_file_at_the_end_of_a_short_chain_is_read(box: CommandSandbox) -> None:
    # The same steps where the walk lists every directory: a file of the command's own is read back.
    made = await run(box, _py(_CHAIN.format(depth=2) + "os.write(os.open('mine', os.O_CREAT | os.O_WRONLY, 0o644, dir_fd=cur), b'own')\n"))
    assert made.returncode == 0, made.err
    read = await run(box, _read_in_chain(2, "mine"))
    assert (read.returncode, read.out) == (0, "own\n"), read.err


def test_the_walk_hides_a_directory_it_cannot_list(project: Path, monkeypatch) -> None:
    # What chmod 000 does to a walk not run as root (root lists anyway): the directory goes whole.
    (project / "locked").mkdir()
    (project / "locked" / ".env").write_text(SECRET)
    (project / "open").mkdir()
    (project / "open" / "a.txt").write_text("a")
    real = os.scandir

    def scandir(path: str):  # type: ignore[no-untyped-def]
        if str(path).endswith("/locked"):
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)

    scan = ProjectScan(project, [], watch_directories=False)
    assert scan.env_files() == [project / "locked" / ".env"]  # the control: listed, found by name
    (project / "locked" / "later").mkdir()  # moves its stamp: listed again
    monkeypatch.setattr(os, "scandir", scandir)
    assert project / "locked" in scan.env_files()
    assert project / "open" not in scan.env_files()
    monkeypatch.setattr(os, "scandir", real)
    assert scan.env_files() == [project / "locked" / ".env"]  # listable again: no longer hidden whole


# ----- the person changes the project between two commands --------------------------------------------

@dataclass(frozen=True)
class Between:
    name: str
    change: str  # shell run by the person (outside the sandbox), in the project
    secret: str  # what the next command tries to read
    control: str  # what the same change made readable (not a secret)


BETWEEN = [
    Between("a new .env deep in a listed directory", f"echo {SECRET} > sub/a/b/.env; echo ok > sub/a/b/ok.txt",
            "sub/a/b/.env", "sub/a/b/ok.txt"),
    Between("a directory holding a .env moved in from outside",
            f"d=$(mktemp -d /var/tmp/rt.XXXXXX); mkdir $d/in; echo {SECRET} > $d/in/.env; echo ok > $d/in/ok.txt;"
            " mv $d/in sub/a/in; rmdir $d", "sub/a/in/.env", "sub/a/in/ok.txt"),
    Between("a hard link of .env into a granted directory", "ln .env sub/a/b/linked; echo ok > sub/a/b/ok.txt",
            "sub/a/b/linked", "sub/a/b/ok.txt"),
    Between("config/.env renamed into a granted directory", "mv config/.env sub/a/b/notes; echo ok > sub/a/b/ok.txt",
            "sub/a/b/notes", "sub/a/b/ok.txt"),
    Between("a granted directory swapped for one holding a .env",
            f"mv sub/a/b sub/a/old; mkdir sub/a/b; echo {SECRET} > sub/a/b/.env; echo ok > sub/a/b/ok.txt",
            "sub/a/b/.env", "sub/a/b/ok.txt"),
    # More events than inotify queues (16,384 by default): the .env's own event is dropped with the rest.
    Between("a .env made after the event queue overflowed",
            "for i in $(seq 9000); do : > sub/a/f$i; done; rm -f sub/a/f*;"
            f" echo {SECRET} > sub/a/b/.env; echo ok > sub/a/b/ok.txt", "sub/a/b/.env", "sub/a/b/ok.txt"),
    Between("two granted directories swapped", f"mv sub/a sub/x; mkdir sub/a; mv sub/x sub/a/b2; echo {SECRET} > sub/a/.env;"
            " echo ok > sub/a/ok.txt", "sub/a/.env", "sub/a/ok.txt"),
]


@pytest.mark.parametrize("row", BETWEEN, ids=[r.name for r in BETWEEN])
async def test_the_person_s_change_between_commands_reaches_the_next_plan(box: CommandSandbox, row: Between) -> None:
    # Twice first: the second reuses the plan and the warm ruleset (inodes, not paths).
    for _ in range(2):
        assert (await run(box, "cat sub/a/b/plain.txt")).out == "plain\n"
    shell = shutil.which("bash") or "/bin/bash"
    proc = await asyncio.create_subprocess_exec(shell, "-c", row.change, cwd=box.project)
    assert await proc.wait() == 0
    attack = await run(box, f"cat {row.secret}")
    assert SECRET not in attack.out and attack.returncode != 0, (attack.out, attack.err)
    control = await run(box, f"cat {row.control}")
    assert (control.returncode, control.out) == (0, "ok\n"), control.err


# ----- two commands at once ---------------------------------------------------------------------------

async def test_a_command_moving_secrets_while_another_starts(box: CommandSandbox) -> None:
    # One command churns the project (moves config/.env down into directories it makes, renames
    # them); others start meanwhile, each building or reusing a plan. None reads the secret.
    churn = "for i in $(seq 40); do mkdir -p config/d$i && mv config/.env config/d$i/.env 2>/dev/null; " \
            "mv config/d$i/.env config/.env 2>/dev/null; done; true"
    readers = [run(box, "cat config/.env config/d*/.env 2>/dev/null; true") for _ in range(6)]
    done = await asyncio.gather(run(box, churn), *readers)
    assert all(SECRET not in result.out for result in done)
    control = await run(box, "cat sub/a/b/plain.txt")
    assert control.out == "plain\n"


# ----- a secret renamed onto a dotenv name a rule lets through -----------------------------------------

ONTO_ALLOWED = [
    ("rename", "mv -f .env .env.example", ".env.example"),
    ("hard link", "ln -f .env .env.example", ".env.example"),
    ("rename in a subdirectory", "mv -f config/.env config/.env.example", "config/.env.example"),
    ("link then rename", "ln .env keep && mv -f keep .env.example", ".env.example"),
]


@pytest.mark.parametrize(("name", "attack", "target"), ONTO_ALLOWED, ids=[n for n, _, _ in ONTO_ALLOWED])
async def test_a_secret_renamed_onto_an_allowed_dotenv_name_stays_hidden(
    furnished: Path, home: Path, name: str, attack: str, target: str
) -> None:
    from codingcode_jupyter.engine.settings import SandboxSettings

    (furnished / ".env.example").write_text("KEY=\n")
    (furnished / "config" / ".env.example").write_text("KEY=\n")
    sandbox = CommandSandbox.create(furnished, SandboxSettings.model_validate({"backend": "landlock"}), home=home,
                                    allowed_env_files=[".env.example"])
    try:
        # The control: the rule lets the example file through, and it is read.
        control = await run(sandbox, f"cat {target}")
        assert (control.returncode, control.out) == (0, "KEY=\n"), control.err
        moved = await run(sandbox, attack)
        assert moved.returncode == 0, moved.err
        read = await run(sandbox, f"cat {target}")
        assert SECRET not in read.out and read.returncode != 0, (name, read.out)
    finally:
        await sandbox.aclose()


# ----- the person's kernel keyring ------------------------------------------------------------------------

_KEY_CALLS = {"x86_64": (248, 250), "aarch64": (217, 219)}  # add_key, keyctl
_KEY_READ = """
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
key = libc.syscall({keyctl}, 10, -4, b"user", b"{name}", 0)  # KEYCTL_SEARCH the user keyring
buf = ctypes.create_string_buffer(200)
size = libc.syscall({keyctl}, 11, key, buf, 200)  # KEYCTL_READ
print(buf.raw[:max(size, 0)].decode())
"""


@pytest.mark.skipif(os.uname().machine not in _KEY_CALLS, reason="system call numbers known for x86_64 and aarch64")
async def test_a_command_cannot_read_the_person_s_keyring(box: CommandSandbox) -> None:
    import ctypes

    add_key, keyctl = _KEY_CALLS[os.uname().machine]
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    name = f"codingcode-test-{os.getpid()}"
    key = libc.syscall(add_key, b"user", name.encode(), SECRET.encode(), len(SECRET), -4)  # the user keyring
    if key < 0:
        pytest.skip(f"no kernel keyring here (errno {ctypes.get_errno()})")
    try:
        snippet = _KEY_READ.format(keyctl=keyctl, name=name)
        # The control: any process of the person's reads it.
        host = await asyncio.create_subprocess_exec(PY, "-c", snippet, stdout=asyncio.subprocess.PIPE)
        assert SECRET in (await host.communicate())[0].decode()
        inside = await run(box, f"{PY} -c '{snippet}'")
        assert inside.returncode == 0, inside.err
        assert SECRET not in inside.out
    finally:
        libc.syscall(keyctl, 3, key)  # KEYCTL_REVOKE


# ----- the person's System V shared memory ------------------------------------------------------------------

_SHM_READ = """
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
at = libc.shmat({shmid}, None, 0o10000)  # SHM_RDONLY
print(ctypes.string_at(at, {size}).decode() if at not in (None, 2 ** 64 - 1, 2 ** 32 - 1) else "refused")
"""


async def test_a_command_cannot_attach_the_person_s_shared_memory(box: CommandSandbox) -> None:
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.shmat.restype = ctypes.c_void_p
    shmid = libc.shmget(0, 4096, 0o1600)  # IPC_PRIVATE, IPC_CREAT | 0600: only its id names it
    if shmid < 0:
        pytest.skip(f"no System V shared memory here (errno {ctypes.get_errno()})")
    try:
        at = libc.shmat(shmid, None, 0)
        ctypes.memmove(at, SECRET.encode(), len(SECRET))
        libc.shmdt(ctypes.c_void_p(at))
        snippet = _SHM_READ.format(shmid=shmid, size=len(SECRET))
        # The control: any process of the person's attaches it.
        host = await asyncio.create_subprocess_exec(PY, "-c", snippet, stdout=asyncio.subprocess.PIPE)
        assert SECRET in (await host.communicate())[0].decode()
        inside = await run(box, f"{PY} -c '{snippet}'")
        assert (inside.returncode, inside.out) == (0, "refused\n"), (inside.out, inside.err)
    finally:
        libc.shmctl(shmid, 0, None)  # IPC_RMID


# ----- the person's inotify watches ----------------------------------------------------------------------

def test_a_project_of_many_directories_does_not_take_every_watch_of_the_user(project: Path, monkeypatch) -> None:
    # A command making hundreds of thousands of directories would have the walk watch each, for the
    # sandbox's life, out of the user's limit that their editors share; a budget (a share of it,
    # here 3) leaves the rest to stats, and the walk stays right about what it did not watch.
    from codingcode_jupyter.engine.sandbox import dir_watch

    monkeypatch.setattr(dir_watch, "_watch_budget", lambda: 3)
    for index in range(8):
        (project / f"d{index}").mkdir()
    scan = ProjectScan(project, [])
    assert scan.env_files() == []
    watch = scan._watch
    assert watch is not None
    assert len(watch._wds) == 3  # the control: watches are made, up to the budget
    for index in range(8):
        (project / f"d{index}" / ".env").write_text(SECRET)
    assert sorted(scan.env_files()) == sorted(project / f"d{index}" / ".env" for index in range(8))
    assert len(watch._wds) == 3
    scan.close()


def test_the_watch_budget_is_a_share_of_the_user_s_limit() -> None:
    from codingcode_jupyter.engine.sandbox import dir_watch

    with open("/proc/sys/fs/inotify/max_user_watches") as limit:
        assert dir_watch._watch_budget() == max(256, int(limit.read()) // dir_watch.WATCH_SHARE)


# ----- writing a secret the command cannot read ------------------------------------------------------------

# Under Landlock a hidden file inherits its directory's own rights: unreadable, but the top level is
# writable. What programs on the host then load from it (dotenv-cli, direnv's dotenv, compose) runs there.
WRITE_SECRET = [
    ("append", "echo 'NODE_OPTIONS=--require ./x.js' >> .env"),
    ("overwrite", "echo 'NODE_OPTIONS=--require ./x.js' > .env"),
    ("remove", "rm .env"),
    ("replace by rename", "echo 'NODE_OPTIONS=--require ./x.js' > new && mv -f new .env"),
    ("append in a subdirectory", "echo 'NODE_OPTIONS=--require ./x.js' >> config/.env"),
]


@pytest.mark.parametrize(("name", "attack"), WRITE_SECRET, ids=[n for n, _ in WRITE_SECRET])
async def test_a_secret_written_by_a_command_is_put_back(box: CommandSandbox, name: str, attack: str) -> None:
    quiet = await run(box, "cat .env config/.env; ls -l .env >/dev/null")
    assert quiet.notes == []  # the control: reading it (refused) and listing it change nothing
    made = await run(box, attack + " && echo 'a=1' > notes.txt")
    assert made.returncode == 0, made.err
    assert (box.project / "notes.txt").read_text() == "a=1\n"  # the control: an ordinary write stays
    for path in (box.project / ".env", box.project / "config" / ".env"):
        assert path.read_text() == f"KEY={SECRET}\n", name
    assert any(".env" in note for note in made.notes), made.notes


# ----- the warm process going while a command runs ---------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("closed", [True, False], ids=["warm process closed", "control: left running"])
async def test_what_a_command_left_dies_with_its_launcher_when_the_warm_process_goes(
    box: CommandSandbox, closed: bool
) -> None:
    # The sandbox closing (changed settings) or the kernel ending takes the warm process, and each
    # launcher it forked with it: killed outright, what the command left in a session of its own
    # would write into the project later, with no compare after it.
    left = "setsid sh -c 'sleep 1.5; echo evil > .envrc' </dev/null >/dev/null 2>&1 & sleep 3"
    spawn = box.spawn_for(left, box.project, dict(os.environ), watch=box.watch_host())
    task = asyncio.ensure_future(run_process(spawn.argv, cwd=box.project, env=spawn.env, timeout=10,
                                             pass_fds=spawn.pass_fds, on_start=spawn.close, start=spawn.start))
    await asyncio.sleep(0.7)
    if closed:
        assert box._warm is not None
        box._warm.close()
    done = await task
    await asyncio.sleep(2.0)
    if closed:
        assert done.returncode != 0
        assert not (box.project / ".envrc").exists()
    else:
        assert done.returncode == 0
        assert (box.project / ".envrc").exists()  # written while the command ran: the compare's to find
