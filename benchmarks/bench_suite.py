"""The test suite's own wall time on this machine, against the targets (tests never assert timings).

Three figures, each where it can be had. ``scripts/test.sh`` runs the suite in two pytest passes
(the unit, kernel and sandbox tests on four workers, then the browser tests one at a time), each
writing a JUnit file (``/tmp/codingcode-test-junit.xml`` and ``…-junit-browser.xml``); their
``testsuite`` elements' ``time`` (pytest's session wall time) and counts are read back when less
than a day old. The script also writes its own wall time, installs and checks included
(``/tmp/codingcode-test-seconds``, bash's ``$SECONDS``): that is the figure the 20-minute target is
about. And, in a full run only, ``pytest tests/engine -q -p no:cacheprovider`` timed here with
``time.perf_counter()`` around the subprocess (this venv, default markers and workers, so the slow
tests are left out), against the one-minute target.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from common import Row

ROOT = Path(__file__).resolve().parent.parent
JUNITS = [Path("/tmp/codingcode-test-junit.xml"), Path("/tmp/codingcode-test-junit-browser.xml")]
SCRIPT_SECONDS = Path("/tmp/codingcode-test-seconds")
MAX_AGE_S = 24 * 3600
WHOLE_TARGET_S = 20 * 60
ENGINE_TARGET_S = 60


@dataclass
class Pass:
    seconds: float
    tests: int
    skipped: int
    failed: int


def _recent(path: Path) -> bool:
    return path.is_file() and time.time() - path.stat().st_mtime < MAX_AGE_S


def _read_junit(path: Path) -> Pass | None:
    if not _recent(path):
        return None
    root = ElementTree.parse(path).getroot()
    suite = root if root.tag == "testsuite" else root.find("testsuite")
    if suite is None:
        return None
    count = lambda name: int(suite.get(name, "0"))  # noqa: E731
    return Pass(float(suite.get("time", "0")), count("tests"), count("skipped"), count("failures") + count("errors"))


def _when(path: Path) -> str:
    return datetime.fromtimestamp(path.stat().st_mtime, timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def _engine_suite() -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "pytest", "tests/engine", "-q", "-p", "no:cacheprovider"],
                          cwd=ROOT, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    summary = next((line for line in reversed(done.stdout.splitlines()) if re.search(r"\d+ (passed|failed)", line)), "")
    return seconds, summary.strip("= ").strip() or f"exit status {done.returncode}"


def _whole_rows(method: str) -> list[Row]:
    passes = [(path, p) for path in JUNITS if (p := _read_junit(path)) is not None]
    if not passes:
        return []
    tests = sum(p.tests for _, p in passes)
    skipped = sum(p.skipped for _, p in passes)
    failed = sum(p.failed for _, p in passes)
    pytest_s = sum(p.seconds for _, p in passes)
    parts = " + ".join(f"{p.seconds:.0f} s" for _, p in passes)
    counts = f"{tests - skipped - failed} passed, {skipped} skipped, {failed} failed; run {_when(passes[0][0])}"
    script_s = float(SCRIPT_SECONDS.read_text().strip()) if _recent(SCRIPT_SECONDS) else None
    cores = os.cpu_count()
    if script_s is None:
        return [Row(name=f"whole test suite wall time, {cores} cores (pytest passes of scripts/test.sh)",
                    ours=f"{pytest_s:.1f} s ({parts}; {counts})", baseline="—", result=f"{pytest_s:.0f} s",
                    target=f"under {WHOLE_TARGET_S} s", met=pytest_s < WHOLE_TARGET_S, method=method)]
    return [Row(name=f"whole test suite wall time, {cores} cores (scripts/test.sh, installs and checks included)",
                ours=f"{script_s:.0f} s (pytest passes {parts}; {counts})", baseline="—", result=f"{script_s:.0f} s",
                target=f"under {WHOLE_TARGET_S} s", met=script_s < WHOLE_TARGET_S, method=method)]


def measure(quick: bool) -> list[Row]:
    method = __doc__.strip().replace("\n", " ")
    rows = _whole_rows(method)
    if not quick:
        seconds, what = _engine_suite()
        rows.append(Row(name=f"pytest tests/engine wall time, {os.cpu_count()} cores",
                        ours=f"{seconds:.1f} s ({what})", baseline="—", result=f"{seconds:.0f} s",
                        target=f"under {ENGINE_TARGET_S} s", met=seconds < ENGINE_TARGET_S, method=method))
    if not rows:
        rows.append(Row(name="test suite wall time", ours="not measured: quick mode and no recent timing file",
                        baseline="—", result="—", target="— (reported)", met=None, method=method))
    return rows
