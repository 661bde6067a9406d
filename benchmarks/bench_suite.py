"""The test suite's own wall time on this machine, reported (tests never assert timings).

Two figures, each where it can be had. The whole suite as the test command ran it:
``scripts/test.sh`` passes ``--junitxml`` to pytest, and the ``testsuite`` element's ``time``
(pytest's session wall time) and counts are read back from that file
(``$CODINGCODE_TEST_JUNIT``, default ``/tmp/codingcode-test-junit.xml``) when it is less than
a day old. And, in a full run only, ``pytest tests/engine -q -p no:cacheprovider`` timed here
with ``time.perf_counter()`` around the subprocess (this venv, default markers, so the slow
tests are left out), its pass/fail counts taken from its summary line.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
import xml.etree.ElementTree as ElementTree
from datetime import datetime, timezone
from pathlib import Path

from common import Row

ROOT = Path(__file__).resolve().parent.parent
JUNIT = Path(os.environ.get("CODINGCODE_TEST_JUNIT", "/tmp/codingcode-test-junit.xml"))
MAX_AGE_S = 24 * 3600


def _from_junit() -> tuple[float, str] | None:
    """(seconds, description) of the last whole-suite run, if its file is there and recent."""
    if not JUNIT.is_file() or time.time() - JUNIT.stat().st_mtime > MAX_AGE_S:
        return None
    root = ElementTree.parse(JUNIT).getroot()
    suite = root if root.tag == "testsuite" else root.find("testsuite")
    if suite is None:
        return None
    count = lambda name: int(suite.get(name, "0"))  # noqa: E731
    when = datetime.fromtimestamp(JUNIT.stat().st_mtime, timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    failed = count("failures") + count("errors")
    return float(suite.get("time", "0")), (
        f"{count('tests') - count('skipped') - failed} passed, {count('skipped')} skipped, {failed} failed; run {when}"
    )


def _engine_suite() -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "pytest", "tests/engine", "-q", "-p", "no:cacheprovider"],
                          cwd=ROOT, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    summary = next((line for line in reversed(done.stdout.splitlines()) if re.search(r"\d+ (passed|failed)", line)), "")
    return seconds, summary.strip("= ").strip() or f"exit status {done.returncode}"


def measure(quick: bool) -> list[Row]:
    rows = []
    method = __doc__.strip().replace("\n", " ")
    whole = _from_junit()
    if whole is not None:
        seconds, what = whole
        rows.append(Row(name=f"whole test suite wall time, {os.cpu_count()} cores (scripts/test.sh)",
                        ours=f"{seconds:.1f} s ({what})", baseline="—", result=f"{seconds:.0f} s",
                        target="— (reported)", met=None, method=method))
    if not quick:
        seconds, what = _engine_suite()
        rows.append(Row(name=f"pytest tests/engine wall time, {os.cpu_count()} cores",
                        ours=f"{seconds:.1f} s ({what})", baseline="—", result=f"{seconds:.0f} s",
                        target="— (reported)", met=None, method=method))
    if not rows:
        rows.append(Row(name="test suite wall time", ours="not measured: quick mode and no recent timing file",
                        baseline="—", result="—", target="— (reported)", met=None, method=method))
    return rows
