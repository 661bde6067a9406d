"""insert_cell: a new cell proposed below the agent's cell."""

from __future__ import annotations

import weakref
from typing import Any

from pydantic import BaseModel, Field

from ...engine.tools.base import ToolContext, ToolError
from .namespace import KernelAccess

MAX_CODE_CHARS = 200_000


class InsertCellArgs(BaseModel):
    """Parameters of insert_cell."""

    code: str = Field(min_length=1, max_length=MAX_CODE_CHARS, description="The source of the new cell.")


# Per shell: (execution count of the agent cell, cells proposed during it).
_PROPOSED: "weakref.WeakKeyDictionary[Any, tuple[Any, list[str]]]" = weakref.WeakKeyDictionary()


def insert_cell(access: KernelAccess, args: InsertCellArgs) -> str:
    shell = access.shell
    if shell is None or not hasattr(shell, "set_next_input"):
        raise ToolError("insert_cell needs a notebook: there is no IPython shell here.")
    count = getattr(shell, "execution_count", None)
    previous = _PROPOSED.get(shell)
    codes = previous[1] if previous is not None and previous[0] == count else []
    codes.append(args.code.rstrip("\n"))
    _PROPOSED[shell] = (count, codes)
    # A frontend inserts one cell per run (the payload is single), so proposals of one
    # agent cell are joined into that one cell.
    shell.set_next_input("\n\n".join(codes), replace=False)
    joined = f" It was joined with {len(codes) - 1} earlier proposal(s) of this cell into one." if len(codes) > 1 else ""
    return (
        "Proposed a new cell below the current one; it appears, not run, when this %%agent cell "
        f"finishes (the user runs it).{joined}"
    )


async def insert_cell_preview(args: InsertCellArgs, ctx: ToolContext) -> str:
    return args.code
