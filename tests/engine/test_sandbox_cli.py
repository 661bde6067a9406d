"""`codingcode sandbox check` and `codingcode sandbox run`, as a person runs them (a subprocess)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.engine.sandbox_helpers import needs_sandbox


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "codingcode_jupyter", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=120)


@pytest.mark.slow
@needs_sandbox
def test_check_names_the_backend_why_and_limits(tmp_path: Path) -> None:
    done = _cli("sandbox", "check", "--json", "--project", str(tmp_path), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["state"] == "on" and report["backend"] in ("bwrap", "landlock") and report["why"]
    assert any(line.startswith("writes:") for line in report["confines"]) and report["limits"]
    text = _cli("sandbox", "check", "--project", str(tmp_path), cwd=tmp_path)
    assert text.stdout.startswith(f"{report['backend']}: on — ") and "does not cover:" in text.stdout


@pytest.mark.slow
@needs_sandbox
def test_run_confines_and_returns_the_exit_status(tmp_path: Path) -> None:
    outside = tmp_path.parent / f"{tmp_path.name}-outside.txt"
    done = _cli("sandbox", "run", "--project", str(tmp_path), "--", f"echo in > inside.txt; echo out > {outside}; "
                "echo $PAGER; exit 7", cwd=tmp_path)
    assert done.returncode == 7, done.stderr
    assert (tmp_path / "inside.txt").read_text() == "in\n"  # control: the project is written
    assert not outside.exists()
    assert done.stdout == "cat\n"  # the environment execute_command gives
    words = _cli("sandbox", "run", "--project", str(tmp_path), "--", "printf", "%s|", "a b", "c", cwd=tmp_path)
    assert words.stdout == "a b|c|"


@pytest.mark.slow
def test_run_refuses_without_a_sandbox_and_runs_nothing(tmp_path: Path) -> None:
    (tmp_path / ".codingcode").mkdir()
    (tmp_path / ".codingcode" / "settings.json").write_text('{"sandbox": {"enabled": false}}')
    done = _cli("sandbox", "run", "--project", str(tmp_path), "--", "touch ran", cwd=tmp_path)
    assert done.returncode == 3 and "not run" in done.stderr and not (tmp_path / "ran").exists()
    check = _cli("sandbox", "check", "--project", str(tmp_path), cwd=tmp_path)
    assert check.returncode == 3 and check.stdout.startswith("off:")
