"""Ordinary developer work gives the same exit codes and output unsandboxed and in each backend.

The corpus (tests/engine/parity_corpus.py) runs unsandboxed, under bubblewrap, under Landlock, and
under Landlock in a container that refuses user namespaces (``auto`` must choose Landlock there).
Every difference must be listed below with its reason, and every listed difference must still
happen: a fix shows as a failure until its row is removed, so this list and docs/sandbox.md
("Where the sandbox differs from your shell") stay true. The controls: each backend's run shows
the differences the limits say it has (a harness that compared nothing, or ran nothing sandboxed,
would find none under Landlock with a hidden file in the project).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from codingcode_jupyter.engine.sandbox import landlock
from tests.engine.parity_corpus import differences
from tests.engine.sandbox_helpers import BWRAP_PROBLEM

pytestmark = pytest.mark.slow

# Landlock grants by hierarchy: a directory above a hidden file (config/.env) has no read right of its
# own, and the project's top level is above every hidden file. What a command creates there is written
# but read only from the next command on (docs/sandbox.md).
ABOVE_A_HIDDEN_FILE = "Landlock: created at the top level, above config/.env, and read back in the same command"
LANDLOCK_WITH_SECRET = {
    ("git", 0): ABOVE_A_HIDDEN_FILE,  # git init then add: .git/HEAD.lock is opened for reading and writing
    ("git", 1): ABOVE_A_HIDDEN_FILE + " (no repository: the first step failed)",
    ("git", 2): ABOVE_A_HIDDEN_FILE + " (no repository: the first step failed)",
    ("mkdir", 0): ABOVE_A_HIDDEN_FILE,
    ("heredoc", 0): ABOVE_A_HIDDEN_FILE,
    ("redirect", 0): ABOVE_A_HIDDEN_FILE,
    ("venv", 0): ABOVE_A_HIDDEN_FILE + " (.venv/bin/python is executed)",
    ("pip-editable", 0): ABOVE_A_HIDDEN_FILE + " (.venv/bin/python is executed)",
    ("pip-editable", 1): ABOVE_A_HIDDEN_FILE + " (no package: the first step failed)",
    ("npm", 0): ABOVE_A_HIDDEN_FILE + " (package.json read by node)",
    ("make", 0): ABOVE_A_HIDDEN_FILE,
    ("formatters", 0): ABOVE_A_HIDDEN_FILE + " (ruff's .ruff_cache)",
    ("archives", 0): ABOVE_A_HIDDEN_FILE + " (tar opens src.tgz)",
    ("archives", 1): ABOVE_A_HIDDEN_FILE + " (zip reads its temporary file)",
    ("search", 1): "Landlock: a hidden file is listed and unreadable, so grep -r says Permission denied for it",
}
# The home is hidden but for its allowlist, read-only: pip says it disabled its cache.
LANDLOCK_NO_SECRET = {("pip-editable", 0): "Landlock: the home is not writable (pip's cache is disabled, it says so)"}
BWRAP = {}


def _rows(found: list[dict]) -> dict[tuple[str, int], dict]:
    return {(d["bare"]["scenario"], d["bare"]["step"]): d for d in found}


def _check(found: list[dict], expected: dict[tuple[str, int], str]) -> None:
    rows = _rows(found)
    unlisted = {f"{name} step {step}": rows[(name, step)] for name, step in rows.keys() - expected.keys()}
    assert not unlisted, "differences not listed as a limit:\n" + json.dumps(unlisted, indent=1)[:6000]
    fixed = sorted(expected.keys() - rows.keys())
    assert not fixed, f"listed differences that no longer happen (remove them here and in docs/sandbox.md): {fixed}"


@pytest.mark.skipif(BWRAP_PROBLEM is not None, reason=f"no bubblewrap: {BWRAP_PROBLEM}")
async def test_bubblewrap_does_ordinary_work_as_the_shell_does(tmp_path: Path) -> None:
    _check(await differences("bwrap", tmp_path), BWRAP)


@pytest.mark.skipif(landlock.landlock_abi() < 1, reason="no Landlock here")
async def test_landlock_differs_only_where_its_limits_say(tmp_path: Path) -> None:
    _check(await differences("landlock", tmp_path), LANDLOCK_WITH_SECRET)


@pytest.mark.skipif(landlock.landlock_abi() < 1, reason="no Landlock here")
async def test_landlock_top_level_work_in_a_project_without_hidden_files(tmp_path: Path) -> None:
    _check(await differences("landlock", tmp_path, secret=False), LANDLOCK_NO_SECRET)


def test_landlock_in_a_container_without_user_namespaces(tmp_path: Path) -> None:
    from tests.engine.test_sandbox_container import PROBLEM, in_container

    if PROBLEM is not None:
        pytest.skip(PROBLEM)
    repo = Path(__file__).resolve().parents[2]
    done = in_container([sys.executable, "-m", "tests.engine.parity_corpus", "auto"], repo,
                        env={"PARITY_DIR": str(tmp_path)}, timeout=1500)
    assert done.returncode == 0, done.stderr[-3000:]
    _check(json.loads(done.stdout), LANDLOCK_WITH_SECRET)
