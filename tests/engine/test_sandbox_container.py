"""A JupyterHub-shaped machine: user namespaces refused, no capability, Landlock still there.

A default container (Docker's seccomp profile, an unprivileged Kubernetes pod) refuses new
user namespaces, so bubblewrap cannot start. The fixture reproduces that with an outer
bubblewrap: ``--unshare-user --uid 1000 --disable-userns --cap-drop ALL`` around the command
line makes an inner bubblewrap fail with "Creating new namespace failed ... (ENOSPC)", while
Landlock (which needs no namespace) stays available. In it, `auto` must choose Landlock and
say why, ordinary commands must run, and the sandbox attack corpora (GTFOBins rows, the leak
tests, the Landlock tests) must pass with their positive controls.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from codingcode_jupyter.engine.sandbox import landlock

REPO = Path(__file__).resolve().parents[2]
BWRAP = shutil.which("bwrap")
OUTER = ["--dev-bind", "/", "/", "--unshare-user", "--uid", "1000", "--gid", "1000", "--disable-userns",
         "--cap-drop", "ALL", "--"]


def _container_problem() -> str | None:
    if BWRAP is None:
        return "bwrap is needed to build the container"
    if landlock.landlock_abi() < 1:
        return "the kernel offers no Landlock"
    done = subprocess.run([BWRAP, *OUTER, BWRAP, "--ro-bind", "/", "/", "--unshare-all", "--", "true"],
                          capture_output=True, text=True)
    if done.returncode == 0 or "namespace" not in done.stderr:
        return f"the outer bubblewrap does not refuse namespaces here: {done.stderr.strip()!r}"
    return None


PROBLEM = _container_problem()
pytestmark = pytest.mark.skipif(PROBLEM is not None, reason=str(PROBLEM))


def in_container(argv: list[str], cwd: Path, env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([BWRAP, *OUTER, *argv], cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "codingcode_jupyter", *args]


def test_the_outer_container_refuses_what_a_default_container_refuses(tmp_path: Path) -> None:
    # Control of the fixture itself: bubblewrap fails inside as in a pod, and works outside.
    inside = in_container([BWRAP, "--ro-bind", "/", "/", "--unshare-all", "--", "true"], tmp_path)
    assert inside.returncode != 0 and "Creating new namespace failed" in inside.stderr
    assert subprocess.run([BWRAP, "--ro-bind", "/", "/", "--unshare-all", "--", "true"]).returncode == 0


@pytest.mark.slow
def test_auto_chooses_landlock_and_says_why(tmp_path: Path) -> None:
    done = in_container(_cli("sandbox", "check", "--project", str(tmp_path), "--json"), tmp_path)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["state"] == "on" and report["backend"] == "landlock", report
    assert "Creating new namespace failed" in report["why"] and report["limits"], report


@pytest.mark.slow
def test_ordinary_commands_run_and_the_home_stays_hidden(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    (project / "src").mkdir(parents=True)
    (project / "src" / "app.py").write_text("def add(a, b):\n    return a + b\n")
    (project / "test_app.py").write_text("from src.app import add\n\ndef test_add():\n    assert add(1, 2) == 3\n")
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    subprocess.run(["git", "-C", str(project), "add", "."], check=True)
    line = (f"ls -la && git status --short && wc -l src/app.py && grep -rn add src && "
            f"{sys.executable} -c 'import src.app as m; print(m.add(2, 3))' && "
            f"{sys.executable} -m pytest -q -p no:cacheprovider test_app.py && echo made > src/out.txt && "
            f"cat ~/.bashrc 2>&1 | head -1")
    done = in_container(_cli("sandbox", "run", "--project", str(project), "--", line), project)
    assert done.returncode == 0, (done.stdout, done.stderr)
    assert "test_app.py" in done.stdout and "5\n" in done.stdout and "1 passed" in done.stdout
    assert (project / "src" / "out.txt").read_text() == "made\n"
    assert done.stdout.rstrip().endswith(".bashrc: Permission denied"), done.stdout  # the home, outside its allowlist


@pytest.mark.slow
def test_the_sandbox_attack_corpora_hold_under_landlock(tmp_path: Path) -> None:
    """The GTFOBins rows, the leak tests, the Landlock tests and the guard's sandbox rows, with their controls, in the container."""
    files = ["tests/engine/test_attack_sandbox.py", "tests/engine/test_sandbox_leaks.py",
             "tests/engine/test_sandbox_landlock.py", "tests/engine/test_guard_sandbox.py"]
    done = in_container([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
                         "-m", "slow or not slow", "-n", "2", "--basetemp", str(tmp_path / "t"), *files], REPO,
                        env={"CODINGCODE_TEST_SANDBOX_BACKEND": "auto", "TMPDIR": str(tmp_path)}, timeout=900)
    tail = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    passed = int(tail.split(" passed")[0].split()[-1])
    assert passed >= 30, tail  # they ran, not skipped for want of a sandbox
