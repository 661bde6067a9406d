"""One tool call as one row (tool, key argument, who decided, outcome), expandable."""

from __future__ import annotations

import asyncio
import time
from typing import Any, Sequence

import ipywidgets as widgets

from ..record import ToolItem, tool_row_html

__all__ = ["ToolLine", "PROGRESS_INTERVAL"]

# A command printing fast must not flood the browser: its row updates at most this often.
PROGRESS_INTERVAL = 0.2


class ToolLine(widgets.HTML):
    """A tool call's row, rendered from its :class:`~..record.ToolItem`; click it for input and result."""

    value: str  # the HTML widget's trait (ipywidgets has no types to say so)

    def __init__(self, tool: str = "", tool_input: dict[str, Any] | None = None, key: str | None = None, *,
                 item: ToolItem | None = None, project: Any = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.add_class("codingcode-tool")
        self.item = item or ToolItem(agent="main", tool_use_id="", tool=tool, input=dict(tool_input or {}), key=key or "")
        self.project = project
        self._pending: asyncio.TimerHandle | None = None
        self._last_render = 0.0
        self.render()

    @property
    def status(self) -> str:
        return self.item.status

    def set_progress(self, text: str) -> None:
        """New output of the running call; rendered at most every ``PROGRESS_INTERVAL`` seconds."""
        if not self.item.tool_use_id:  # a line made on its own (tests): keep the output here
            self.item.progress = (self.item.progress + [text])[-20:]
        if self._pending is not None:
            return  # a render is already scheduled and will show this too
        wait = self._last_render + PROGRESS_INTERVAL - time.monotonic()
        if wait <= 0:
            self.render()
            return
        try:
            self._pending = asyncio.get_running_loop().call_later(wait, self.render)
        except RuntimeError:  # no loop (a test calling it directly): render now
            self.render()

    def set_status(self, status: str) -> None:
        self.item.status = status
        self.render()

    def finish(self, status: str, result: str, duration_ms: float, images: Sequence[dict[str, str]] = ()) -> None:
        """The call ended (ok, error, denied, interrupted); images in its result are shown under it."""
        self.item.status, self.item.result, self.item.duration_ms = status, result, duration_ms
        self.item.images = list(images)
        self.render()

    def render(self) -> None:
        if self._pending is not None:
            self._pending.cancel()
            self._pending = None
        self._last_render = time.monotonic()
        html = tool_row_html(self.item, self.project, live=True)
        if html != self.value:
            self.value = html
