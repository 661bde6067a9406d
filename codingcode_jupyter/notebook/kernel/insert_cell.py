"""insert_cell: new cells proposed below the agent's cell, markdown or code, one or several.

The kernel cannot add cells itself. ``shell.set_next_input(text, replace=False)`` attaches a
``set_next_input`` payload to the ``%%agent`` cell's execute_reply, and the frontend makes a
new, unrun *code* cell of it below that cell once it finishes without an error. JupyterLab
and Notebook 7 read only the first such payload of a reply and VS Code inserts one code cell
too, so every proposal of one agent cell travels as a single cell:

- one code cell: as it is;
- one markdown cell: as a ``%%markdown`` cell, which renders when run;
- several cells: joined in the percent format (``# %%`` / ``# %% [markdown]`` markers, the
  markdown lines commented), which runs as one code cell, and which VS Code and Jupytext read as
  separate cells; in JupyterLab, Split Cell (Ctrl+Shift+-) at each marker separates them.

In a terminal IPython the same call prefills the next prompt. Where the cells go is an
argument (``after``) that today has one value, the agent's own cell: placing cells
elsewhere or changing existing ones needs a frontend extension, and would take a cell id
from read_notebook there.
"""

from __future__ import annotations

import weakref
from typing import Any, Literal

from pydantic import BaseModel, Field, model_validator

from ...engine.tools.base import ToolContext, ToolError
from .namespace import KernelAccess

MAX_CODE_CHARS = 200_000
MAX_CELLS = 20


class NewCell(BaseModel):
    """One cell to insert."""

    cell_type: Literal["code", "markdown"] = Field(default="code", description="'code' or 'markdown'.")
    source: str = Field(min_length=1, max_length=MAX_CODE_CHARS, description="The cell's text.")


class InsertCellArgs(BaseModel):
    """Parameters of insert_cell."""

    cells: list[NewCell] = Field(
        default_factory=list, max_length=MAX_CELLS,
        description="The cells to insert, in order (markdown or code).",
    )
    code: str | None = Field(
        default=None, min_length=1, max_length=MAX_CODE_CHARS,
        description="Shorthand for one code cell (instead of cells).",
    )
    after: Literal["agent_cell"] = Field(
        default="agent_cell",
        description="Where the cells go: below the agent's own cell (the only place a kernel can put them).",
    )

    @model_validator(mode="after")
    def _some_cell(self) -> "InsertCellArgs":
        if self.code is not None:
            self.cells = [*self.cells, NewCell(cell_type="code", source=self.code)]
            self.code = None
        if not self.cells:
            raise ValueError("give cells (a list of {cell_type, source}) or code")
        return self


# Per shell: (execution count of the agent cell, cells proposed during it).
_PROPOSED: "weakref.WeakKeyDictionary[Any, tuple[Any, list[NewCell]]]" = weakref.WeakKeyDictionary()


def cells_text(cells: list[NewCell]) -> str:
    """The text of the one frontend cell that carries ``cells`` (see the module docstring)."""
    if len(cells) == 1:
        cell = cells[0]
        text = cell.source.rstrip("\n")
        return f"%%markdown\n{text}" if cell.cell_type == "markdown" else text
    parts = []
    for cell in cells:
        text = cell.source.rstrip("\n")
        if cell.cell_type == "markdown":
            commented = "\n".join(f"# {line}" if line else "#" for line in text.splitlines())
            parts.append(f"# %% [markdown]\n{commented}")
        else:
            parts.append(f"# %%\n{text}")
    return "\n\n".join(parts)


def _landing(shell: Any, cells: list[NewCell]) -> str:
    """Where the proposal lands, said for the frontend at hand."""
    if type(shell).__name__ == "TerminalInteractiveShell":
        return "It prefills the next prompt of this terminal IPython."
    when = "it appears, not run, when this %%agent cell finishes without an error (the user runs it)"
    if len(cells) == 1:
        markdown = " As a markdown cell it comes as a %%markdown cell, which renders when run." if cells[0].cell_type == "markdown" else ""
        return f"Proposed a new cell below this %%agent cell: {when}.{markdown}"
    return (
        f"Proposed {len(cells)} cells below this %%agent cell, carried as one code cell (JupyterLab, Notebook 7 and "
        f"VS Code insert one cell per agent cell): {when}. The cells are separated by '# %%' lines (markdown as "
        "'# %% [markdown]' comments); VS Code and Jupytext read them as cells, and in JupyterLab Split Cell "
        "(Ctrl+Shift+-) at each marker separates them."
    )


def insert_cell(access: KernelAccess, args: InsertCellArgs) -> str:
    shell = access.shell
    if shell is None or not hasattr(shell, "set_next_input"):
        raise ToolError("insert_cell needs a notebook: there is no IPython shell here.")
    count = getattr(shell, "execution_count", None)
    previous = _PROPOSED.get(shell)
    cells = previous[1] if previous is not None and previous[0] == count else []
    earlier = len(cells)
    cells.extend(args.cells)
    _PROPOSED[shell] = (count, cells)
    shell.set_next_input(cells_text(cells), replace=False)
    joined = f" This includes {earlier} cell(s) proposed earlier in this agent cell." if earlier else ""
    return _landing(shell, cells) + joined


async def insert_cell_preview(args: InsertCellArgs, ctx: ToolContext) -> str:
    return cells_text(args.cells)
