"""One tool call as a compact line (tool, key argument, status, duration), expandable."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import ipywidgets as widgets

from ._text import h, pretty_json, short

__all__ = ["ToolLine"]

_ICONS = {"running": "⏳", "ok": "✔", "error": "✖", "denied": "⛔", "interrupted": "◼", "waiting": "❓"}
_RESULT_LIMIT = 20_000
# A command printing fast must not flood the browser: its output line updates at most this often.
PROGRESS_INTERVAL = 0.2


class ToolLine(widgets.HTML):
    """A tool call; click the line to see its full input and result.

    ``key`` is the argument that says what the call is about, as its tool declares it.
    """

    def __init__(self, tool: str, tool_input: dict[str, Any], key: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.add_class("codingcode-tool")
        self.tool = tool
        self.input = tool_input
        self.key = key or ""
        self.status = "running"
        self.result = ""
        self.images: list[dict[str, str]] = []
        self.progress: list[str] = []
        self.duration_ms: float | None = None
        self._pending: asyncio.TimerHandle | None = None
        self._last_render = 0.0
        self._render()

    def set_progress(self, text: str) -> None:
        """New output of the running call; rendered at most every ``PROGRESS_INTERVAL`` seconds."""
        self.progress.append(text)
        self.progress = self.progress[-20:]
        if self._pending is not None:
            return  # a render is already scheduled and will show this too
        wait = self._last_render + PROGRESS_INTERVAL - time.monotonic()
        if wait <= 0:
            self._render()
            return
        try:
            self._pending = asyncio.get_running_loop().call_later(wait, self._render)
        except RuntimeError:  # no loop (a test calling it directly): render now
            self._render()

    def set_status(self, status: str) -> None:
        self.status = status
        self._render()

    def finish(self, status: str, result: str, duration_ms: float, images: list[dict[str, str]] = ()) -> None:
        """The call ended (ok, error, denied, interrupted); images in its result are shown under it."""
        self.status, self.result, self.duration_ms = status, result, duration_ms
        self.images = list(images)
        self._render()

    def _render(self) -> None:
        if self._pending is not None:
            self._pending.cancel()
            self._pending = None
        self._last_render = time.monotonic()
        duration = f" · {self.duration_ms / 1000:.2f} s" if self.duration_ms is not None else ""
        key = short(self.key, 70)
        summary = (
            f"{_ICONS.get(self.status, '•')} <code>{h(self.tool)}</code> {h(key)} "
            f'<span class="tool-status" style="opacity:.7">{h(self.status)}{duration}</span>'
        )
        body = f"<div><b>input</b><pre>{h(pretty_json(self.input))}</pre></div>"
        live = ""
        if self.progress and self.status == "running":
            # A running command's latest output shows without expanding the line.
            tail = "\n".join(self.progress).splitlines()[-6:]
            live = f'<pre class="tool-progress" style="margin:2px 0 2px 1.5em;opacity:.8">{h(chr(10).join(tail))}</pre>'
        if self.result:
            result = self.result if len(self.result) <= _RESULT_LIMIT else self.result[:_RESULT_LIMIT] + "\n…"
            body += f"<div><b>result</b><pre>{h(result)}</pre></div>"
        pictures = "".join(
            # The engine passes raster types only; the media type is still escaped into the URL.
            f'<img src="data:{h(image["media_type"])};base64,{h(image["data"])}" '
            'style="max-width:100%;max-height:24em;display:block;margin:4px 0">'
            for image in self.images
        )
        self.value = f'<details><summary style="cursor:pointer">{summary}</summary>{body}</details>{live}{pictures}'
