"""Sandbox cost per command: start-up on a large project, and finding its dotenv files.

    python benchmarks/bench_sandbox.py            # 100 runs each; projects of 20,000 and 200,000 files
    python benchmarks/bench_sandbox.py --quick    # 15 runs each; the 20,000-file project only, for CI

Rows, each measured side by side in one run (medians):

- start-up of `true` in a 20,000-file project as execute_command starts it (the host watch's
  walk, the plan, reused while nothing changed, bwrap started directly with the filtered
  environment and the seccomp pipe) against bare `bash -c true`, and against the launcher path
  MCP servers still take (a Python launcher in front of bwrap): what the launcher cost;
- each backend (bubblewrap, Landlock) starting `true` as execute_command does against bare
  `true` (targets: bubblewrap under 15 ms extra, Landlock under 10 ms);
- the walk that finds every dotenv file (node_modules included), warm, against
  `rg --files --hidden --no-ignore -g '.env*'` over the same tree; the first, uncached walk
  of a session is reported with it;
- the compare of host-executed files around each command (sandbox/host_watch.py: two more warm
  walks and a stat of each host-executed file) against the one warm walk argv_for makes.

The projects live in /dev/shm when there is one: building 200,000 files on a slow disk takes
minutes, and the walk reads directory metadata from memory either way once the tree is
cached. Prints a markdown table; asserts nothing. ``measure`` is what ``benchmarks/run.py`` calls.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from common import Row, spread  # noqa: E402

from codingcode_jupyter.engine.processes import Spawn  # noqa: E402
from codingcode_jupyter.engine.sandbox import CommandSandbox, SandboxUnavailable  # noqa: E402
from codingcode_jupyter.engine.sandbox.host_watch import HostWatch  # noqa: E402
from codingcode_jupyter.engine.settings import SandboxSettings  # noqa: E402
from codingcode_jupyter.engine.tools.search import find_rg  # noqa: E402

TARGET_MS = 15.0
FILES_PER_DIR = 10
FANOUT = 8
ENV_FILES = 10


def make_project(root: Path, files: int) -> Path:
    """A tree of ``files`` files, 10 per directory, 8 subdirectories each (one of them named
    node_modules), with ``ENV_FILES`` dotenv files spread through it."""
    dirs = [root]
    root.mkdir(parents=True, exist_ok=True)
    for index in range(1, files // FILES_PER_DIR):
        parent = dirs[(index - 1) // FANOUT]
        directory = parent / ("node_modules" if index % FANOUT == 1 else f"d{index}")
        directory.mkdir()
        dirs.append(directory)
    for directory in dirs:
        for number in range(FILES_PER_DIR):
            os.close(os.open(directory / f"f{number}.js", os.O_CREAT | os.O_WRONLY, 0o644))
    step = max(1, len(dirs) // ENV_FILES)
    for directory in dirs[::step][:ENV_FILES]:
        (directory / ".env").write_text("KEY=value\n")
    return root


def _scratch() -> str | None:
    return "/dev/shm" if os.access("/dev/shm", os.W_OK) else None


async def _once(made: list[str] | Spawn) -> None:
    spawn = made if isinstance(made, Spawn) else Spawn(made)
    if spawn.start is not None:
        # As run_process starts it: the launcher kept warm, the argv only when that cannot serve.
        started = await spawn.start(False)
        if started is not None:
            await started.wait()
            return
    try:
        proc = await asyncio.create_subprocess_exec(
            *spawn.argv, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL, start_new_session=True, env=spawn.env, pass_fds=spawn.pass_fds,
        )  # fmt: skip
    finally:
        spawn.close()
    await proc.wait()


async def _interleaved(variants: list[Callable[[], list[str] | Spawn]], runs: int) -> list[list[float]]:
    """Wall time of each variant, one run of each in turn, so load on the machine hits all alike."""
    for make_argv in variants:
        await _once(make_argv())  # warm caches
    samples: list[list[float]] = [[] for _ in variants]
    for _ in range(runs):
        for make_argv, times in zip(variants, samples):
            start = time.perf_counter()
            await _once(make_argv())  # building the mount plan is part of the cost
            times.append(time.perf_counter() - start)
    return samples


def _as_shell_tool(sandbox: CommandSandbox, project: Path) -> Spawn:
    """What execute_command does before its command runs: the host watch (a walk of the project),
    then the spawn built from that walk (the compare after the command is not start-up)."""
    return sandbox.spawn_for("true", project, dict(os.environ), watch=sandbox.watch_host())


async def _startup_rows(project: Path, files: int, runs: int) -> list[Row]:
    name = f"sandbox start-up (`true`), {files} files"
    sandbox = CommandSandbox.create(project, SandboxSettings())
    if not sandbox.active or sandbox.bwrap is None:
        return [Row(name, "—", "—", f"skipped: {sandbox.unavailable_reason}", f"< {TARGET_MS:.0f} ms extra",
                    None, "bubblewrap unavailable")]  # fmt: skip
    try:
        plain, confined, launched = await _interleaved(
            [
                lambda: ["bash", "-c", "true"],
                lambda: _as_shell_tool(sandbox, project),
                lambda: sandbox.argv_for("true", project, watch=sandbox.watch_host()),
            ],
            runs,
        )
    finally:
        await sandbox.aclose()
    ours, bare, old = (statistics.median(s) for s in (confined, plain, launched))
    return [
        Row(
            name=name,
            ours=spread(confined),
            baseline=f"{spread(plain)} bash -c true",
            result=f"+{(ours - bare) * 1000:.1f} ms ({ours / bare:.1f}x)",
            target=f"< {TARGET_MS:.0f} ms extra",
            met=(ours - bare) * 1000 < TARGET_MS,
            method=f"median of {runs} runs: watch_host (walk) + spawn_for (plan, reused while nothing changed) + "
            f"bwrap started directly ... bash -c true vs bash -c true, own session, in a {files}-file project "
            f"with {ENV_FILES} .env files",
        ),
        Row(
            name=f"launcher in front of bwrap (MCP servers' path), {files} files",
            ours=spread(launched),
            baseline=f"{spread(confined)} bwrap started directly, as execute_command",
            result=f"+{(old - ours) * 1000:.1f} ms ({old / ours:.2f}x)",
            target="— (reported)",
            met=None,
            method="the same watch and plan, bwrap behind the Python launcher (argv_for, which stdio MCP "
            "servers need: their clients pass no descriptors) vs started directly (spawn_for), side by side",
        ),
    ]


LANDLOCK_TARGET_MS = 10.0


async def _backend_rows(project: Path, files: int, runs: int) -> list[Row]:
    """Each backend's start-up of `true` against bare `true` (the issue's comparison), side by side."""
    boxes = {name: CommandSandbox.create(project, SandboxSettings(backend=name)) for name in ("bwrap", "landlock")}
    live = {name: box for name, box in boxes.items() if box.active}
    rows = [Row(f"{name} start-up (`true`), {files} files", "—", "—", f"skipped: {box.unavailable_reason}",
                "—", None, f"{name} unavailable here") for name, box in boxes.items() if not box.active]
    try:
        names = list(live)
        samples = await _interleaved([lambda: ["true"], *[(lambda b=live[n]: _as_shell_tool(b, project)) for n in names]],
                                     runs)
    finally:
        for box in boxes.values():
            await box.aclose()
    bare = statistics.median(samples[0])
    for name, times in zip(names, samples[1:]):
        extra = (statistics.median(times) - bare) * 1000
        landlock_row = name == "landlock"
        target = LANDLOCK_TARGET_MS if landlock_row else TARGET_MS
        rows.append(Row(
            name=f"{name} start-up (`true`) vs bare `true`, {files} files",
            ours=spread(times), baseline=f"{spread(samples[0])} true",
            result=f"+{extra:.1f} ms ({statistics.median(times) / bare:.1f}x)",
            target=f"< {target:.0f} ms extra",
            met=extra < target,
            method=f"median of {runs} runs taken in turn, as execute_command: watch_host (walk) + spawn_for (plan, "
                   f"reused while nothing changed) + "
                   f"{'a launcher forked by the one the kernel keeps warm (the ruleset made once per plan) + Landlock, seccomp, no_new_privs' if landlock_row else 'bwrap, no launcher'}"
                   " + bash -c true, vs `true` itself; the walk asks inotify which directories changed",
            note=("the launcher forked per command stays the command's subreaper; sandbox.warmLauncher false "
                  "starts a Python launcher per command instead (about +20 ms more)")
                if landlock_row else "",
        ))
    return rows


def _rg_env_files(rg: str, project: Path) -> list[str]:
    done = subprocess.run(
        [rg, "--files", "--hidden", "--no-ignore", "--no-messages", "-g", ".env*", str(project)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    return done.stdout.splitlines()


def _scan_row(project: Path, files: int, runs: int) -> Row:
    name = f"dotenv walk per command, {files} files / {files // FILES_PER_DIR} dirs"
    rg = find_rg()
    if rg is None:
        return Row(name, "—", "—", "rg not found", "— (reported)", None, "ripgrep unavailable")
    # The walk alone, as argv_for runs it before every command (a private method, on purpose).
    sandbox = CommandSandbox(project, SandboxSettings(), bwrap=None, unavailable_reason=None)
    start = time.perf_counter()
    found = sandbox._env_files()
    first = time.perf_counter() - start
    listed = _rg_env_files(rg, project)
    assert len(listed) == len(found) == ENV_FILES, (len(listed), len(found))
    warm, ripgrep = [], []
    for _ in range(runs):
        for work, times in ((sandbox._env_files, warm), (lambda: _rg_env_files(rg, project), ripgrep)):
            start = time.perf_counter()
            work()
            times.append(time.perf_counter() - start)
    ratio = statistics.median(warm) / statistics.median(ripgrep)
    return Row(
        name=name,
        ours=f"{spread(warm)}; first walk {first * 1000:.0f} ms",
        baseline=f"{spread(ripgrep)} rg --files --hidden --no-ignore -g '.env*'",
        result=f"{ratio:.2f}x",
        target="— (reported)",
        met=None,
        method=f"median of {runs} walks, taken in turn with rg: the inotify queue read (sandbox/dir_watch.py), "
        "os.scandir of the directories whose stamp changed, none stat'ed when no event came (the stat of each "
        "directory where inotify cannot serve: sandbox.watchDirectories false, a network filesystem), vs ripgrep "
        "listing the whole tree each time",
    )


def _watch_row(project: Path, files: int, runs: int) -> Row:
    """What execute_command adds around each sandboxed command since the host watch: the project's
    host-executed entries listed before and compared after (sandbox/host_watch.py), warm, against
    the walk argv_for makes anyway."""
    name = f"host-executed compare around a command, {files} files / {files // FILES_PER_DIR} dirs"
    sandbox = CommandSandbox(project, SandboxSettings(), bwrap=None, unavailable_reason=None)
    sandbox._env_files()

    def argv_walk(watch: HostWatch | None = None) -> None:
        # argv_for walks first (or takes the watch's walk), then finds no bwrap here: the walk is what is measured.
        try:
            sandbox.argv_for("true", project, watch=watch)
        except SandboxUnavailable:
            pass

    watch, walk = [], []
    for _ in range(runs):
        start = time.perf_counter()
        # As execute_command: the watch, then the argv (which reuses the watch's walk), then the compare.
        watched = sandbox.watch_host()
        argv_walk(watched)
        watched.changes()
        watch.append(time.perf_counter() - start)
        start = time.perf_counter()
        argv_walk()
        walk.append(time.perf_counter() - start)
    extra = (statistics.median(watch) - statistics.median(walk)) * 1000
    return Row(
        name=name,
        ours=spread(watch),
        baseline=f"{spread(walk)} the warm walk argv_for makes per command",
        result=f"{statistics.median(watch) / statistics.median(walk):.2f}x (+{extra:.1f} ms)",
        target="— (reported)",
        met=None,
        method=f"median of {runs}: watch_host(), argv_for (which reuses the watch's walk), changes() (one more "
        "warm walk, each host-executed file's stat; the walks read the inotify queue), taken in turn with argv_for's own walk; nothing changed between",
    )


def measure(quick: bool) -> list[Row]:
    """Rows for benchmarks/run.py."""
    runs = 15 if quick else 100
    rows: list[Row] = []
    for files in [20_000] if quick else [20_000, 200_000]:
        with tempfile.TemporaryDirectory(dir=_scratch(), prefix="codingcode-bench-") as tmp:
            project = make_project(Path(tmp) / "project", files)
            if files == 20_000:
                rows += asyncio.run(_startup_rows(project, files, runs))
                rows += asyncio.run(_backend_rows(project, files, runs))
            rows.append(_scan_row(project, files, runs))
            rows.append(_watch_row(project, files, runs))
    return rows


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="15 runs, the 20,000-file project only")
    options = parser.parse_args()
    print(Row.table(measure(options.quick)))
