"""The guard's sandbox rows (tests/data/attacks/guard.yaml, ``sandbox: read / write``), run for real.

A read row's target holds a marker unique to its path; the command runs in the real sandbox
(bubblewrap, or Landlock where only that can run) and its output must not show the marker. A
write row's command tries to put PLANTED into its target (a file the host runs later); the
target must not hold it afterwards. Each row's control is the same command aimed at a harmless
file (an allowlisted cache of the home, an ordinary project file): it must print that file's
marker / write PLANTED there, so a sandbox that breaks every command, or a check that never
looks, fails here. A row with ``gap`` is a known gap (xfail, strict); ``gap: "bwrap: ..."`` is one of that backend only.
"""

from __future__ import annotations

import asyncio
import hashlib
import subprocess
import time
from pathlib import Path

import pytest

from tests.data.attacks.corpus import GuardRow, guard_rows, make_guard_home, make_guard_project

from .sandbox_helpers import RUNNING_BACKEND, make_sandbox, needs_sandbox, run

# Each run is a sandbox start (~0.3-1 s under load): about 100 of them, so only in the full run (CI).
pytestmark = pytest.mark.slow

_HOME = "/home/guard-corpus-placeholder"
ROWS = [row for row in guard_rows(_HOME) if row.sandbox is not None]
PAYLOAD = "PLANTED"


def marker(target: str) -> str:
    """The marker planted in ``target``: unique per path, so a leak names the file it came from."""
    return "MARK-" + hashlib.sha256(target.encode()).hexdigest()[:12]


def _path(target: str, project: Path, home: Path) -> Path:
    where, rel = target.split(":", 1)
    return (home if where == "home" else project) / rel


def _fill(command: str, home: Path) -> str:
    return command.replace(_HOME, str(home))


def _run(sandbox, command: str) -> str:
    """Run ``command`` as execute_command does with nobody to ask: what it creates that the host
    runs (and no mount could hold, the name being new) is moved out of the project after it."""

    done = asyncio.run(run(sandbox, command, timeout=30.0))  # compared after it, as execute_command does
    return done.out + done.err + "\n".join(done.notes)


@pytest.fixture(scope="module")
def place(tmp_path_factory):
    root = tmp_path_factory.mktemp("guard-sandbox")
    home, project = make_guard_home(root), make_guard_project(root)
    subprocess.run(["git", "init", "-q", str(project / "sub")], check=True, capture_output=True)
    for row in ROWS:
        if row.sandbox == "read":
            for target in (row.target, row.control_target):
                path = _path(target, project, home)
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(marker(target) + "\n")
    sandbox = make_sandbox(project, home)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HOME", str(home))  # what `~` and $HOME mean to the sandboxed shell
        yield project, home, sandbox
    asyncio.run(sandbox.aclose())


def _param(row: GuardRow, gap: str | None):
    # "bwrap: ..." is a gap of that backend only (Landlock refuses the same write).
    if gap and gap.split(":", 1)[0] in ("bwrap", "landlock") and gap.split(":", 1)[0] != RUNNING_BACKEND:
        gap = None
    marks = [pytest.mark.xfail(strict=True, reason=gap)] if gap else []
    return pytest.param(row, id=f"{row.cls}:{row.input['command'][:60]}", marks=marks)


@needs_sandbox
@pytest.mark.parametrize("row", [_param(row, row.gap) for row in ROWS if row.sandbox == "read"])
def test_no_read_leaks(place, row: GuardRow) -> None:
    project, home, sandbox = place
    out = _run(sandbox, _fill(row.input["command"], home))
    assert marker(row.target) not in out, f"{row.why}: the sandboxed command printed {row.target}"


@needs_sandbox
@pytest.mark.parametrize("row", [_param(row, row.control_gap) for row in ROWS if row.sandbox == "read"])
def test_read_control_is_read(place, row: GuardRow) -> None:
    project, home, sandbox = place
    out = _run(sandbox, _fill(row.control_input["command"], home))
    assert marker(row.control_target) in out, f"control of {row.why}: {out[-400:]!r}"


def _planted(path: Path) -> bool:
    return path.is_file() and PAYLOAD in path.read_text(errors="replace")


def _attempt(place, command: str, target: str, wait: float = 0.0) -> bool:
    """Run ``command``; whether ``target`` then holds the payload (looked at ``wait`` seconds after the
    command: a process it left running may write later). The target is put back as it was."""
    project, home, sandbox = place
    path = _path(target, project, home)
    before = path.read_bytes() if path.is_file() else None
    _run(sandbox, _fill(command, home))
    time.sleep(wait)
    planted = _planted(path)
    if before is not None:
        path.write_bytes(before)
    elif path.is_file():
        path.unlink()
    return planted


@needs_sandbox
@pytest.mark.parametrize("row", [_param(row, row.gap) for row in ROWS if row.sandbox == "write"])
def test_no_write_plants(place, row: GuardRow) -> None:
    assert not _attempt(place, row.input["command"], row.target, row.wait), f"{row.why}: {row.target} was written"


@needs_sandbox
@pytest.mark.parametrize("row", [_param(row, row.control_gap) for row in ROWS if row.sandbox == "write"])
def test_write_control_is_written(place, row: GuardRow) -> None:
    assert _attempt(place, row.control_input["command"], row.control_target, row.wait), f"control of {row.why}"
