"""The kernel tools: only an agent living in the kernel can have them."""

from __future__ import annotations

from typing import Any, MutableMapping

from ...engine.tools.access import ToolAccess
from ...engine.tools.base import ToolContext, ToolDefinition, ToolResult
from ...engine.tools.registry import ToolRegistry
from ..live.edits import EditNotebookArgs, edit_notebook, edit_notebook_preview
from ..live.reading import live_cells
from ..live.run_cells import RunCellsArgs, resolve_run_cells, run_cells, run_cells_preview
from . import insert_cell, run_python
from .cell_output import ReadCellOutputArgs, read_cell_output
from .confined import run_confined
from .errors import install_error_recorder
from .history import NotebookHistoryArgs, notebook_history_text
from .insert_cell import InsertCellArgs
from .namespace import KernelAccess
from .notebook_file import ReadNotebookArgs, read_notebook
from .outputs import install_output_recorder
from .run_python import RunPythonArgs
from .undo_names import DEFAULT_BUDGET_MB, journal_for
from .values import (
    InspectVariableArgs,
    ListVariablesArgs,
    inspect_text,
    list_variables_text,
    lookup,
)

__all__ = ["kernel_tools", "register_kernel_tools"]


def kernel_tools(shell: Any = None, namespace: MutableMapping[str, Any] | None = None) -> list[ToolDefinition]:
    """The kernel tools bound to ``shell`` (or, for tests and scripts, a namespace dict)."""
    access = KernelAccess(shell, namespace)

    async def list_variables(args: ListVariablesArgs, ctx: ToolContext) -> str:
        return list_variables_text(access, args)

    async def inspect_variable(args: InspectVariableArgs, ctx: ToolContext) -> str:
        return inspect_text(lookup(access, args.name), args.name, args.rows)

    async def notebook_history(args: NotebookHistoryArgs, ctx: ToolContext) -> str:
        return notebook_history_text(access, args)

    async def cell_output(args: ReadCellOutputArgs, ctx: ToolContext) -> ToolResult:
        return read_cell_output(access.shell, args)

    async def notebook(args: ReadNotebookArgs, ctx: ToolContext) -> str:
        return read_notebook(access.shell, access.user_ns, args)

    async def run_code(args: RunPythonArgs, ctx: ToolContext) -> ToolResult:
        if run_python.confined_plan(access, args.code, ctx) is not None:
            # The fork changes the kernel only through the names it keeps.
            remember_names(access, ctx, args.code, only=args.keep)
            return await run_confined(access, args, ctx)
        remember_names(access, ctx, args.code)
        return await run_python.run_python(access, args, ctx)

    def runs_confined(raw: dict[str, Any], ctx: ToolContext) -> bool:
        code = raw.get("code")
        return isinstance(code, str) and run_python.confined_plan(access, code, ctx) is not None

    async def propose_cell(args: InsertCellArgs, ctx: ToolContext) -> str:
        return insert_cell.insert_cell(access, args)

    async def notebook_live(args: ReadNotebookArgs, ctx: ToolContext) -> str:
        live = await live_cells(access.shell)
        return read_notebook(access.shell, access.user_ns, args, live=live)

    async def edit_cells(args: EditNotebookArgs, ctx: ToolContext) -> str:
        return await edit_notebook(access.shell, args, ctx, review=ctx.ask_in_place)

    async def edit_cells_preview(args: EditNotebookArgs, ctx: ToolContext) -> str:
        return await edit_notebook_preview(args, ctx, access.shell)

    async def run_notebook_cells(args: RunCellsArgs, ctx: ToolContext) -> ToolResult:
        remember_names(access, ctx, args.code or "")
        return await run_cells(access, args, ctx)

    async def resolve_cells(args: RunCellsArgs, ctx: ToolContext) -> dict[str, Any]:
        return await resolve_run_cells(access.shell, args)

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
                "The notebook's recent cells: inputs, result values, the kinds of output each showed (stdout, "
                "image/png, table, error...) and the last exception with its traceback."
            ),
            parameters=NotebookHistoryArgs, execute=notebook_history, source="kernel",
            access=ToolAccess(read_only=True),
        ),
        ToolDefinition(
            name="read_cell_output",
            description=(
                "What a cell showed the user: its source and outputs — plots and images as images you can see, "
                "HTML tables (DataFrames) as Markdown tables, printed text, the traceback. cell is an execution "
                "count, 'last' or 'last_error'."
            ),
            parameters=ReadCellOutputArgs, execute=cell_output, source="kernel",
            access=ToolAccess(key="cell", read_only=True),
        ),
        ToolDefinition(
            name="read_notebook",
            description=(
                "The notebook this kernel belongs to: every cell in order (markdown and code, run or not) with its id, "
                "execution count, output kinds and which cell is running you. Read live from the open page when the "
                "codingcode-jupyter extension is there (unsaved edits included), else from the saved file. Paged."
            ),
            parameters=ReadNotebookArgs, execute=notebook_live, source="kernel",
            access=ToolAccess(key="start", read_only=True),
        ),
        ToolDefinition(
            name="run_python",
            description=(
                "Run Python code in the user's live notebook namespace (it can read and change their variables). "
                "Returns printed output, the value of a final expression, and any exception with its traceback. "
                "Needs the user's approval. Prefer insert_cell for code the user should keep."
            ),
            parameters=RunPythonArgs, execute=run_code, preview=run_python.run_python_preview, source="kernel",
            # Arbitrary code: judged as able to reach whatever it names; where it runs in a confined
            # fork (runs_confined), judged as a sandboxed command is.
            access=ToolAccess(code="code", opaque=True, names=access.live_name), runs_confined=runs_confined,
        ),
        ToolDefinition(
            name="insert_cell",
            description=(
                "Propose new cells (code or markdown, one or several) below this agent cell: they are inserted, "
                "not run, once it finishes, and the user runs them. Needs the user's approval."
            ),
            parameters=InsertCellArgs, execute=propose_cell, preview=insert_cell.insert_cell_preview, source="kernel",
            # The cells' code is judged as run_cells' is; the person runs it, so a denial is asked.
            access=ToolAccess(key="cells", code="code", cells="cells", ipython=True, proposes=True),
        ),
        ToolDefinition(
            name="edit_notebook",
            description=(
                "Change the open notebook: replace a cell's source, insert cells, delete or move cells (cell ids from "
                "read_notebook). The person reviews each change on its cell (Accept / Reject) unless their rules allow "
                "edits outright; the result says what was accepted. Needs JupyterLab 4 or Notebook 7 with the "
                "codingcode-jupyter extension; elsewhere use insert_cell."
            ),
            parameters=EditNotebookArgs, execute=edit_cells, preview=edit_cells_preview, source="kernel",
            access=ToolAccess(), asks_in_place=True,
        ),
        ToolDefinition(
            name="run_cells",
            description=(
                "Run cells of the open notebook in the kernel (one cell, the cells above it, or all; %%agent cells are "
                "skipped) and put their outputs in the cells; returns what each printed, displayed or raised. Stops at "
                "the first cell that raises. Judged like run_python. Needs the codingcode-jupyter extension."
            ),
            parameters=RunCellsArgs, execute=run_notebook_cells, preview=run_cells_preview, source="kernel",
            resolve_input=resolve_cells,
            # Arbitrary code in the kernel, never sandboxed, as run_python.
            access=ToolAccess(code="code", key="cell_id", opaque=True, ipython=True, names=access.live_name),
        ),
    ]


def remember_names(access: KernelAccess, ctx: ToolContext, code: str, *, only: list[str] | None = None) -> None:
    """Before code runs in the kernel: what undo needs of the variables it may change (see undo_names)."""
    try:
        budget = ctx.deps.settings.current().merged.undo.namespaceMemoryMB
    except Exception:  # noqa: BLE001 -- unreadable settings: the pipeline has said so; undo keeps the default
        budget = DEFAULT_BUDGET_MB
    namespace = access.user_ns
    try:
        journal_for(namespace).before_code(namespace, ctx.session_id, ctx.turn_id, hidden=access.hidden(), code=code,
                                           only=only, budget_mb=budget)
    except Exception as error:  # noqa: BLE001 -- undo's record must never stop the code the person allowed
        ctx.progress(f"the variables could not be recorded for undo: {type(error).__name__}: {error}")


def register_kernel_tools(registry: ToolRegistry, shell: Any) -> list[ToolDefinition]:
    """Register the kernel tools for ``shell`` in ``registry`` and start recording cells' errors and outputs."""
    install_error_recorder(shell)
    install_output_recorder(shell)
    tools = kernel_tools(shell)
    for tool in tools:
        registry.register(tool)
    return tools
