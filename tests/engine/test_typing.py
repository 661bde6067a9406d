"""A type checker follows a `%%agent` cell from the magic to the tool that runs.

The modules on that path (the magic's runner and session registry, the session, the loop,
the tool context and declarations, the approval pipeline, the settings, the wiring) are
checked with mypy; a string-keyed dict or an ``Any`` slipping back in at a boundary shows
up here as an error.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
WIRING = [
    "codingcode_jupyter/__main__.py",
    "codingcode_jupyter/notebook/agent_cell.py",
    "codingcode_jupyter/notebook/sessions.py",
    "codingcode_jupyter/notebook/subcommands.py",
    "codingcode_jupyter/engine/runtime.py",
    "codingcode_jupyter/engine/deps.py",
    "codingcode_jupyter/engine/session.py",
    "codingcode_jupyter/engine/modes.py",
    "codingcode_jupyter/engine/project_settings.py",
    "codingcode_jupyter/engine/agent.py",
    "codingcode_jupyter/engine/tools/base.py",
    "codingcode_jupyter/engine/tools/access.py",
    "codingcode_jupyter/engine/approval/pipeline.py",
    "codingcode_jupyter/engine/approval/subject.py",
    "codingcode_jupyter/engine/agents/dispatch.py",
    "codingcode_jupyter/engine/context",
]


def test_the_path_of_a_cell_type_checks():
    pytest.importorskip("mypy")
    # `--config-file=`: mypy's default options, as this test has always used, not pyproject's strict set.
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file=", "--ignore-missing-imports", "--follow-imports=silent", "--no-error-summary",
         *WIRING],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
