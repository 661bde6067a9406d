"""notebook_history: the recent cells, what each one output, and the last exception.

Each cell is headed with the kinds of its outputs (``stdout``, ``image/png``, ``table``,
``error ZeroDivisionError``...) so the model knows which cell to read with read_cell_output.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from pydantic import BaseModel, Field

from .errors import AGENT_CELL, last_error
from .namespace import KernelAccess
from .recall import cell_kinds
from .values import clip, safe_call


class NotebookHistoryArgs(BaseModel):
    """Parameters of notebook_history."""

    cells: int = Field(default=10, ge=1, le=100, description="How many recent cells to show (default 10).")
    include_outputs: bool = Field(default=True, description="Show each cell's result value when it had one.")


def notebook_history_text(access: KernelAccess, args: NotebookHistoryArgs) -> str:
    shell = access.shell
    ns = access.user_ns
    inputs = list(getattr(getattr(shell, "history_manager", None), "input_hist_raw", None) or ns.get("In") or [])
    out = ns.get("Out")
    outputs: dict[Any, Any] = out if isinstance(out, dict) else {}
    numbered = [(n, text) for n, text in enumerate(inputs) if text and text.strip()]
    parts = []
    for number, text in numbered[-args.cells :]:
        if AGENT_CELL.match(text):
            first = text.strip().splitlines()[0]
            parts.append(f"In [{number}]: (agent cell) {first[:200]}")
            continue
        kinds = cell_kinds(shell, number) if shell is not None else []
        shown = f" (outputs: {', '.join(kinds)})" if kinds else ""
        parts.append(f"In [{number}]{shown}:\n{clip(text.rstrip(), 2000)}")
        if args.include_outputs and number in outputs:
            parts.append(f"Out[{number}]: {clip(safe_call(partial(repr, outputs[number]), '<repr failed>'), 500)}")
    if not parts:
        parts.append("No cells have run yet.")
    error = last_error(shell)
    if error is not None:
        where = f" in cell [{error.execution_count}]" if error.execution_count else ""
        parts.append(f"\nLast exception{where}: {error.error}\n{error.traceback.rstrip()}")
    else:
        parts.append("\nNo exception so far.")
    return "\n".join(parts)
