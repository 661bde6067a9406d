"""Fixtures engine tests share: an empty project, the events of a call, a tool context in it,
and for sandbox tests a fake home holding secrets and the sandbox of the project.

A test module that needs a furnished project overrides ``project``; ``ctx`` follows it.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

from codingcode_jupyter.engine.state import SessionState
from codingcode_jupyter.engine.tools.base import ToolContext
from tests.engine.helpers import Recorder, tool_context
from tests.engine.sandbox_helpers import make_home, make_sandbox


@pytest.fixture(autouse=True)
def _judging_time(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests of what the judge decides get time enough on a machine shared by many test runs (a
    2 s budget ran out under a load of 30, and a read-only command became a question); the budget
    itself is tested with explicit ones, and the tests marked ``production_budget`` keep the default."""
    if request.node.get_closest_marker("production_budget") is None:
        from codingcode_jupyter.engine import budget

        monkeypatch.setattr(budget, "DEFAULT_SECONDS", 30.0)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    return root


@pytest.fixture
def events() -> Recorder:
    return Recorder()


@pytest.fixture
def ctx(project: Path, events: Recorder) -> ToolContext:
    return tool_context(project, events=events, state=SessionState())


@pytest.fixture
def home():
    """A fake home holding secrets (``make_home``), outside /tmp: the sandbox's private /tmp would hide it and prove nothing."""
    root = Path(tempfile.mkdtemp(dir="/var/tmp", prefix="codingcode-home-"))
    yield make_home(root)
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
async def sb(project: Path, home: Path):
    """The sandbox of the requesting test's ``project``, with the fake ``home``."""
    sandbox = make_sandbox(project, home)
    yield sandbox
    await sandbox.aclose()
