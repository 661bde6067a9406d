"""The kernel tools: only an agent living in the kernel can have them."""

from __future__ import annotations

from typing import Any, MutableMapping

from ...engine.tools.access import ToolAccess
from ...engine.tools.base import ToolContext, ToolDefinition, ToolResult
from ...engine.tools.registry import ToolRegistry
from . import insert_cell, run_python
from .errors import install_error_recorder
from .history import NotebookHistoryArgs, notebook_history_text
from .insert_cell import InsertCellArgs
from .namespace import KernelAccess
from .run_python import RunPythonArgs
from .values import (
    InspectVariableArgs,
    ListVariablesArgs,
    inspect_text,
    list_variables_text,
    lookup,
)

__all__ = ["kernel_tools", "register_kernel_tools"]


def kernel_tools(shell: Any = None, namespace: MutableMapping[str, Any] | None = None) -> list[ToolDefinition]:
    """The five kernel tools bound to ``shell`` (or, for tests and scripts, a namespace dict)."""
    access = KernelAccess(shell, namespace)

    async def list_variables(args: ListVariablesArgs, ctx: ToolContext) -> str:
        return list_variables_text(access, args)

    async def inspect_variable(args: InspectVariableArgs, ctx: ToolContext) -> str:
        return inspect_text(lookup(access, args.name), args.name, args.rows)

    async def notebook_history(args: NotebookHistoryArgs, ctx: ToolContext) -> str:
        return notebook_history_text(access, args)

    async def run_code(args: RunPythonArgs, ctx: ToolContext) -> ToolResult:
        return await run_python.run_python(access, args, ctx)

    async def propose_cell(args: InsertCellArgs, ctx: ToolContext) -> str:
        return insert_cell.insert_cell(access, args)

    return [
        ToolDefinition(
            name="list_variables",
            description=(
                "List the live variables in the user's notebook kernel: type, shape or length, memory size and "
                "a short value. Modules, private names and (unless asked) functions and classes are left out."
            ),
            parameters=ListVariablesArgs, execute=list_variables, source="kernel",
            access=ToolAccess(key="pattern", read_only=True),
        ),
        ToolDefinition(
            name="inspect_variable",
            description=(
                "Look closely at one live variable of the notebook: a DataFrame's columns, head and describe(); an "
                "array's shape, dtype and stats; a function's signature and source; an object's attributes and doc."
            ),
            parameters=InspectVariableArgs, execute=inspect_variable, source="kernel",
            access=ToolAccess(key="name", read_only=True),
        ),
        ToolDefinition(
            name="notebook_history",
            description=(
                "The notebook's recent cells (inputs and result values) and the last exception with its traceback."
            ),
            parameters=NotebookHistoryArgs, execute=notebook_history, source="kernel",
            access=ToolAccess(read_only=True),
        ),
        ToolDefinition(
            name="run_python",
            description=(
                "Run Python code in the user's live notebook namespace (it can read and change their variables). "
                "Returns printed output, the value of a final expression, and any exception with its traceback. "
                "Needs the user's approval. Prefer insert_cell for code the user should keep."
            ),
            parameters=RunPythonArgs, execute=run_code, preview=run_python.run_python_preview, source="kernel",
            # Arbitrary code in the kernel, never sandboxed: it can reach whatever its code names.
            access=ToolAccess(code="code", opaque=True),
        ),
        ToolDefinition(
            name="insert_cell",
            description=(
                "Propose a new code cell below the current one (it is inserted, not run, once this agent cell "
                "finishes). Needs the user's approval."
            ),
            parameters=InsertCellArgs, execute=propose_cell, preview=insert_cell.insert_cell_preview, source="kernel",
            access=ToolAccess(key="code"),
        ),
    ]


def register_kernel_tools(registry: ToolRegistry, shell: Any) -> list[ToolDefinition]:
    """Register the kernel tools for ``shell`` in ``registry`` and start recording cell errors."""
    install_error_recorder(shell)
    tools = kernel_tools(shell)
    for tool in tools:
        registry.register(tool)
    return tools
