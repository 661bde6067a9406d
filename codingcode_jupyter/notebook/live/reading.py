"""The live notebook as the page holds it, when a page with the extension answers."""

from __future__ import annotations

from typing import Any

from .channel import NotebookUnavailable, PageError, channel_for

__all__ = ["live_cells"]


async def live_cells(shell: Any) -> dict[str, Any] | None:
    """The page's cells (unsaved edits included), or None where no page answers.

    What is read is remembered per cell, so an edit made from it can tell when the person
    changed the cell since.
    """
    channel = channel_for(shell)
    try:
        live = await channel.request("read")
    except (NotebookUnavailable, PageError):
        return None
    if not isinstance(live, dict):
        return None
    for cell in live.get("cells", []):
        if isinstance(cell, dict) and cell.get("id"):
            channel.last_read[str(cell["id"])] = str(cell.get("source", ""))
    return live
