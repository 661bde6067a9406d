"""The kernel tools' names, which the notebook declares to the engine before it reads any settings.

A permission rule may name a kernel tool (``run_python``, ``insert_cell``...) before the tool is
registered; the engine knows only its own tools' names, so the front says which are its own
(``engine.claude.names.declare_front_tools``) and a misspelt one gets a "did you mean". A test
checks this list against :func:`.tools.kernel_tools`.
"""

from __future__ import annotations

__all__ = ["KERNEL_TOOL_NAMES", "declare_kernel_tools"]

KERNEL_TOOL_NAMES: tuple[str, ...] = (
    "list_variables",
    "inspect_variable",
    "notebook_history",
    "read_cell_output",
    "read_notebook",
    "run_python",
    "insert_cell",
    "edit_notebook",
    "run_cells",
)


def declare_kernel_tools() -> None:
    """Tell the engine the kernel tools' names (imports the engine's small names module only)."""
    from ...engine.claude.names import declare_front_tools

    declare_front_tools(KERNEL_TOOL_NAMES)
