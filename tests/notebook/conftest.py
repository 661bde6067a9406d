"""Fixtures the kernel-tool tests share: the kernel tools of the module's shell ``ip``, and a tool context.

Each module builds its own ``ip`` (an IPython shell prepared for what it checks).
"""

from __future__ import annotations

import pytest

from codingcode_jupyter.engine.tools.base import ToolContext
from codingcode_jupyter.engine.tools.registry import ToolRegistry
from codingcode_jupyter.notebook.kernel.tools import register_kernel_tools


@pytest.fixture
def tools(ip):
    # As the extension does it: the tools, and the recorders of the cells' errors and outputs.
    registry = ToolRegistry()
    register_kernel_tools(registry, ip)
    return registry


@pytest.fixture
def ctx(tmp_path):
    return ToolContext.standalone(tmp_path, session_id="s", turn_id=1)
