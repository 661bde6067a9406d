"""run_cells: run cells of the open notebook and put their outputs in them.

The kernel is busy with the ``%%agent`` cell while the agent works, so asking the page to
execute a cell would queue it behind the agent's own cell. The code runs here instead, in the
user's namespace, exactly as run_python runs code (and is judged as run_python is); what it
printed and displayed, its value and its traceback are written into the cell through the
page, and come back to the model.
"""

from __future__ import annotations

import base64
import contextlib
import sys
from typing import Any, Iterator, Literal

from pydantic import BaseModel, Field, model_validator

from ...engine.tools.base import ContentBlock, ToolContext, ToolError, ToolResult, text_block
from ...engine.tools.images import image_block
from ..kernel.errors import format_exception
from ..kernel.namespace import KernelAccess
from ..kernel.run_python import DEFAULT_TIMEOUT, MAX_TIMEOUT, Execution, execute, execution_text
from .channel import NotebookUnavailable, PageError, channel_for

__all__ = ["CellCode", "RunCellsArgs", "cells_to_run", "resolve_run_cells", "run_cells", "run_cells_preview"]

MAX_IMAGES = 4


class CellCode(BaseModel):
    """A cell's code as it was when the call was judged (filled in by the kernel, not the model)."""

    id: str
    index: int = 0
    source: str


class RunCellsArgs(BaseModel):
    """Parameters of run_cells."""

    cell_id: str | None = Field(default=None, description="The cell (an id from read_notebook); none with which='all'.")
    which: Literal["cell", "above", "all"] = Field(
        default="cell", description="'cell': that cell; 'above': the code cells above it; 'all': every code cell."
    )
    timeout: float = Field(default=DEFAULT_TIMEOUT, gt=0, le=MAX_TIMEOUT, description="Seconds per cell.")
    # Filled in from the live notebook before the call is judged (see resolve_run_cells):
    # whatever the model put here is replaced, so the code judged is the code that runs.
    cells: list[CellCode] | None = Field(default=None, description="(Filled in by the notebook; leave out.)")
    code: str | None = Field(default=None, description="(Filled in by the notebook; leave out.)")

    @model_validator(mode="after")
    def _target(self) -> "RunCellsArgs":
        if self.which != "all" and not self.cell_id:
            raise ValueError(f"which={self.which!r} needs cell_id")
        return self


def _is_agent_cell(source: str) -> bool:
    return source.lstrip().startswith("%%agent")


def cells_to_run(cells: list[dict[str, Any]], args: RunCellsArgs) -> list[dict[str, Any]]:
    """The code cells ``args`` names, in notebook order; agent cells are never run again."""
    ids = [cell.get("id") for cell in cells]
    if args.cell_id is not None and args.cell_id not in ids:
        raise ToolError(f"There is no cell {args.cell_id!r} in the open notebook: call read_notebook for the ids.")
    if args.which == "cell":
        chosen = [cells[ids.index(args.cell_id)]]
    elif args.which == "above":
        chosen = cells[: ids.index(args.cell_id)]
    else:
        chosen = list(cells)
    code = [cell for cell in chosen if cell.get("cell_type") == "code" and str(cell.get("source", "")).strip()]
    if args.which == "cell" and code and _is_agent_cell(str(code[0].get("source", ""))):
        raise ToolError("That is an %%agent cell: the agent does not run agent cells.")
    return [cell for cell in code if not _is_agent_cell(str(cell.get("source", "")))]


def _outputs(shell: Any, result: Execution, displays: list[Any]) -> list[dict[str, Any]]:
    """The cell's outputs in the notebook format."""
    outputs: list[dict[str, Any]] = []
    if result.stdout:
        outputs.append({"output_type": "stream", "name": "stdout", "text": result.stdout})
    if result.stderr:
        outputs.append({"output_type": "stream", "name": "stderr", "text": result.stderr})
    for shown in displays:
        outputs.append({"output_type": "display_data", "data": dict(shown.data), "metadata": dict(shown.metadata or {})})
    if result.has_value and shell is not None:
        with contextlib.suppress(Exception):
            data, metadata = shell.display_formatter.format(result.value)
            outputs.append({"output_type": "execute_result", "data": data, "metadata": metadata, "execution_count": None})
    if result.compile_error is not None:
        outputs.append({"output_type": "error", "ename": "SyntaxError", "evalue": "", "traceback": result.compile_error.splitlines()})
    elif result.failure is not None:
        error = result.failure
        outputs.append({
            "output_type": "error", "ename": type(error).__name__, "evalue": str(error),
            "traceback": format_exception(error).splitlines(),
        })
    return outputs


@contextlib.contextmanager
def _capturing_displays(shell: Any) -> Iterator[list[Any]]:
    """Collect what the code displays (plots included) instead of showing it in the agent's cell."""
    if shell is None:
        yield []
        return
    from IPython.utils.capture import capture_output

    with capture_output(stdout=False, stderr=False, display=True) as captured:
        shown: list[Any] = captured.outputs
        yield shown
        # The inline backend shows new figures after a cell; this code is not a cell.
        backend = sys.modules.get("matplotlib_inline.backend_inline")
        if backend is not None:
            with contextlib.suppress(Exception):
                backend.flush_figures()


async def resolve_run_cells(shell: Any, args: RunCellsArgs) -> dict[str, Any]:
    """The call's input with the cells' code read from the page, for the judge and the run."""
    try:
        live = await channel_for(shell).request("read")
    except NotebookUnavailable as error:
        raise ToolError(f"Cannot run notebook cells: {error}. run_python runs code without a cell.") from None
    cells = [
        CellCode(id=str(cell["id"]), index=int(cell.get("index", 0)), source=str(cell.get("source", "")))
        for cell in cells_to_run(list(live.get("cells", [])), args)
    ]
    if not cells:
        raise ToolError("There is no code cell to run there.")
    resolved = args.model_dump(exclude_none=True)
    resolved["cells"] = [cell.model_dump() for cell in cells]
    # One text of all the code, which the approval judges as it judges run_python's.
    resolved["code"] = "\n\n".join(cell.source for cell in cells)
    return resolved


async def run_cells(access: KernelAccess, args: RunCellsArgs, ctx: ToolContext) -> ToolResult:
    """The tool: run the judged cells, write their outputs into them, return what each did."""
    if not args.cells:
        raise ToolError("run_cells was called without its cells resolved (nothing was run).")
    channel = channel_for(access.shell)
    blocks: list[ContentBlock] = []
    images = 0
    failed = False
    for cell in args.cells:
        # A cell is IPython, not plain Python: magics and `!` lines become the calls they stand for.
        transform = getattr(access.shell, "transform_cell", None)
        code = transform(cell.source) if callable(transform) else cell.source
        with _capturing_displays(access.shell) as displays:
            result = await execute(access, code, args.timeout, ctx)
        outputs = _outputs(access.shell, result, list(displays))
        try:
            await channel.request("set_outputs", cell_id=cell.id, outputs=outputs, execution_count=None)
            placed = ""
        except (NotebookUnavailable, PageError) as error:
            placed = f" (its outputs could not be shown in the cell: {error})"
        channel.last_read[cell.id] = cell.source
        blocks.append(text_block(f"--- cell {cell.index + 1} (id {cell.id}){placed}\n" + execution_text(result, args.timeout)))
        for shown in displays:
            png = shown.data.get("image/png") if hasattr(shown, "data") else None
            if isinstance(png, str) and images < MAX_IMAGES:
                with contextlib.suppress(Exception):
                    blocks.append(image_block(base64.b64decode(png), "image/png"))
                    images += 1
        if result.compile_error is not None or result.failure is not None:
            failed = True
            blocks.append(text_block("Stopped at this cell: it raised (the cells after it did not run)."))
            break
    return ToolResult(blocks, is_error=failed)


async def run_cells_preview(args: RunCellsArgs, ctx: ToolContext) -> str:
    """The code that will run, cell by cell, for the card."""
    return "\n\n".join(f"# cell {cell.index + 1} (id {cell.id})\n{cell.source}" for cell in args.cells or [])
