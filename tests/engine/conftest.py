"""Fixtures engine tests share: an empty project, the events of a call, a tool context in it.

A test module that needs a furnished project overrides ``project``; ``ctx`` follows it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from codingcode_jupyter.engine.state import SessionState
from codingcode_jupyter.engine.tools.base import ToolContext
from tests.engine.helpers import Recorder, tool_context


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
