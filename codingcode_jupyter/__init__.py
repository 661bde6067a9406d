"""codingcode-jupyter: a coding agent that lives inside the Jupyter kernel.

``%load_ext codingcode_jupyter`` registers the ``%%agent`` and ``%agent`` magics. Public
names are imported lazily so ``import codingcode_jupyter`` stays fast (no anthropic, mcp or
ipywidgets until something needs them).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from . import import_guard as _import_guard

# Before anything else of the package runs: its imports never resolve from the project.
_import_guard.install()

__all__ = ["tool", "pre_tool_use", "on_approval", "Image", "ToolDefinition", "ToolContext", "ToolError", "load_ipython_extension", "unload_ipython_extension"]

_LAZY = {
    "tool": "codingcode_jupyter.engine.tools.custom",
    "pre_tool_use": "codingcode_jupyter.engine.tools.custom",
    "on_approval": "codingcode_jupyter.engine.tools.custom",
    "Image": "codingcode_jupyter.engine.tools.custom",
    "ToolDefinition": "codingcode_jupyter.engine.tools.base",
    "ToolContext": "codingcode_jupyter.engine.tools.base",
    "ToolError": "codingcode_jupyter.engine.tools.base",
}

if TYPE_CHECKING:
    from .engine.tools.base import ToolContext, ToolDefinition, ToolError
    from .engine.tools.custom import Image, on_approval, pre_tool_use, tool


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'codingcode_jupyter' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


def load_ipython_extension(ipython: Any) -> None:
    """Register ``%%agent`` / ``%agent`` and the cell transformer (``%load_ext codingcode_jupyter``)."""
    import os

    from .notebook.extension import load

    # The kernel's working directory is the project the agent writes in.
    _import_guard.install(os.getcwd())
    load(ipython)


def unload_ipython_extension(ipython: Any) -> None:
    """Undo :func:`load_ipython_extension` (``%unload_ext codingcode_jupyter``)."""
    from .notebook.extension import unload

    unload(ipython)
