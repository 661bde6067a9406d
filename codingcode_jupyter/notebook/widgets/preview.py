"""The card's Preview: a button that runs the command in a throwaway copy of the project, and what it found.

The engine offers it (``ApprovalRequest.dry_run``) and runs it (``request.run_preview()``); this
shows it. The button is disabled, with the reason as its tooltip and in words below, where the
engine said a preview would not be faithful. The run goes on the cell's event loop (a click may
arrive on another thread); while it runs the card's other buttons still answer, and Allow runs
the command for real whatever the preview showed.
"""

from __future__ import annotations

import asyncio
import html
from typing import Any

import ipywidgets as widgets

from ...engine.approval.types import ApprovalRequest
from ...engine.command_preview import CommandPreview
from .. import theme
from ..rendering import diff_html, pre

__all__ = ["PreviewPanel", "preview_html"]

_ICONS = {"created": "+", "modified": "~", "deleted": "−"}


def preview_html(result: CommandPreview) -> str:
    """What the throwaway run would change: a summary line, each file (created, modified, deleted) with its
    diff, then the output's tail."""
    head = (
        f'<div style="margin:4px 0"><b>Preview</b> <span style="color:{theme.MUTED}">(run in a throwaway '
        f"{html.escape(result.method or 'copy')} of the project, no network; the project is untouched until you "
        f"allow it)</span>: {html.escape(result.summary())}</div>"
    )
    if result.error is not None:
        return f'<div class="codingcode-preview">{head}</div>'
    rows = "".join(
        f"<li><code>{_ICONS[f.change]}</code> {html.escape(f.change)} <code>{html.escape(f.path)}</code></li>"
        for f in result.files
    )
    more = f"<li>… and {result.more_files} more</li>" if result.more_files else ""
    files = f'<ul style="margin:2px 0">{rows}{more}</ul>' if rows else ""
    diffs = "".join(diff_html(f.diff, max_height="16em") for f in result.files if f.diff and f.diff.startswith("---"))
    others = "".join(pre(html.escape(f.diff)) for f in result.files if f.diff and not f.diff.startswith("---"))
    tail = (
        f'<div style="color:{theme.MUTED}">Output (its end):</div>'
        + pre(html.escape(result.output_tail), extra="max-height:12em")
        if result.output_tail
        else ""
    )
    return f'<div class="codingcode-preview">{head}{files}{diffs}{others}{tail}</div>'


class PreviewPanel:
    """The Preview button and where its result shows, for one card."""

    def __init__(self, request: ApprovalRequest, loop: asyncio.AbstractEventLoop) -> None:
        offer = request.dry_run
        assert offer is not None
        self.request = request
        self.loop = loop
        self.task: asyncio.Task[None] | None = None
        self.result: CommandPreview | None = None
        self.button = widgets.Button(
            description="Preview", button_style="info", disabled=not offer.available, tooltip=offer.reason, icon="eye"
        )
        self.button.on_click(lambda _b: self._clicked())
        note = (
            ""
            if offer.available
            else (
                f'<div class="cc-preview-unavailable" style="color:{theme.MUTED};'
                f'font-size:.92em">Preview unavailable: {html.escape(offer.reason)}</div>'
            )
        )
        self.view = widgets.HTML(note)
        self.view.add_class("codingcode-preview-view")

    def _clicked(self) -> None:
        if self.button.disabled:
            return
        self.button.disabled = True
        self.button.description = "Previewing…"
        self.loop.call_soon_threadsafe(self._start)

    def _start(self) -> None:
        self.task = self.loop.create_task(self._run())

    async def _run(self) -> None:
        try:
            result = await self.request.run_preview()
        except asyncio.CancelledError:
            raise
        except Exception as error:  # noqa: BLE001 -- the card stays answerable whatever the preview does
            result = CommandPreview(error=f"{type(error).__name__}: {error}")
        self.result = result
        self.view.value = preview_html(result)
        self.button.description = "Preview again"
        self.button.disabled = False

    def hide(self) -> None:
        """The card was answered: a preview still running has nothing left to show."""
        self.button.disabled = True
        self.view.layout.display = "none"
        task = self.task
        if task is not None and not task.done():
            self.loop.call_soon_threadsafe(task.cancel)

    def details(self) -> dict[str, Any]:
        return {
            "offered": self.request.dry_run.model_dump() if self.request.dry_run else None,
            "result": self.result.model_dump() if self.result else None,
        }
