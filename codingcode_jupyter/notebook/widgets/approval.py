"""The approval card: what will happen, why it is asked, and four buttons.

A click may arrive on a kernel thread other than the event loop's (ipykernel 7 subshells),
so the answer future is resolved through ``loop.call_soon_threadsafe``. After the first
answer the buttons are disabled and the card collapses to one line with its decision.
"""

from __future__ import annotations

import asyncio
from typing import Any, Literal

import ipywidgets as widgets

from ...engine.approval.types import Answer, ApprovalRequest
from ._text import h, pretty_json, short

__all__ = ["ApprovalCard", "BUTTONS", "CardState"]

# Labels exactly as the issue specifies; tests and the browser find buttons by them.
BUTTONS: dict[str, Answer] = {"Allow": "allow", "Deny": "deny", "Always allow": "always", "Never allow": "never"}
_STYLES = {"Allow": "success", "Deny": "danger", "Always allow": "", "Never allow": "warning"}

CardState = Literal["pending", "allow", "deny", "always", "never", "timeout", "interrupted", "no_frontend"]

_VERDICTS = {
    "allow": ("✔ Allowed", "#1a7f37"),
    "always": ("✔ Always allowed", "#1a7f37"),
    "deny": ("✖ Denied", "#cf222e"),
    "never": ("✖ Never allowed", "#cf222e"),
    "timeout": ("⌛ Timed out — denied", "#9a6700"),
    "interrupted": ("◼ Interrupted", "#6e7781"),
    "no_frontend": ("✖ Denied — nobody could answer", "#9a6700"),
}


def _preview_html(request: ApprovalRequest) -> str:
    if not request.preview:
        return f"<pre>{h(pretty_json(request.input))}</pre>"
    lines = []
    for line in request.preview.splitlines():
        colour = ""
        if line.startswith("+") and not line.startswith("+++"):
            colour = "background:#e6ffec"
        elif line.startswith("-") and not line.startswith("---"):
            colour = "background:#ffebe9"
        elif line.startswith("@@"):
            colour = "color:#0969da"
        lines.append(f'<span style="{colour}">{h(line)}</span>')
    return '<pre style="max-height:24em;overflow:auto">' + "\n".join(lines) + "</pre>"


def _why_html(request: ApprovalRequest) -> str:
    parts = []
    if request.layer:
        parts.append(f"layer <code>{h(request.layer)}</code>")
    if request.rule:
        parts.append(f"rule <code>{h(request.rule)}</code>")
    why = "Asked because " + ", ".join(parts) if parts else "Asked"
    if request.reason:
        why += f": {h(request.reason)}"
    extra = []
    if request.sandboxed is not None:
        extra.append("runs in the sandbox" if request.sandboxed else "<b>runs without a sandbox</b>")
    if request.annotations:
        extra.append("annotations <code>" + h(pretty_json(request.annotations)) + "</code>")
    return f"<div>{why}</div>" + (f"<div>{' · '.join(extra)}</div>" if extra else "")


class ApprovalCard(widgets.VBox):
    """One pending tool call awaiting a person's answer."""

    def __init__(self, request: ApprovalRequest, *, loop: asyncio.AbstractEventLoop | None = None) -> None:
        self.request = request
        self.state: CardState = "pending"
        self.by = ""
        self._loop = loop or asyncio.get_event_loop()
        self.answer: asyncio.Future[Answer] = self._loop.create_future()
        agent = f" <small>({h(request.agent)})</small>" if request.agent != "main" else ""
        self.header = widgets.HTML(
            f"<b>Approve</b> <code>{h(request.tool)}</code>{agent}?",
        )
        self.why = widgets.HTML(_why_html(request))
        self.preview = widgets.HTML(_preview_html(request))
        self.buttons = {label: widgets.Button(description=label, button_style=_STYLES[label]) for label in BUTTONS}
        for label, button in self.buttons.items():
            button.on_click(lambda _b, label=label: self._clicked(label))
        self.row = widgets.HBox(list(self.buttons.values()))
        super().__init__(
            [self.header, self.why, self.preview, self.row],
            layout=widgets.Layout(border="1px solid #d0d7de", padding="4px 8px", margin="4px 0"),
        )
        self.add_class("codingcode-approval")

    # -- answering -----------------------------------------------------------------------

    def click(self, label: str) -> None:
        """Press a button from Python, as a person would (tests, scripts)."""
        self.buttons[label].click()

    def _clicked(self, label: str) -> None:
        answer = BUTTONS[label]
        if self.state != "pending":
            return
        self.settle(answer, by="user")

        def resolve() -> None:
            if not self.answer.done():
                self.answer.set_result(answer)

        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self._loop:
            resolve()
        else:
            self._loop.call_soon_threadsafe(resolve)

    def settle(self, state: CardState, *, by: str = "", note: str = "") -> None:
        """Show the final state: buttons disabled, details collapsed to one line."""
        # The first answer stands; only a timeout may relabel a wait first seen as cancelled
        # (the pipeline's timer cancels the wait, then reports why).
        if self.state != "pending" and not (self.state == "interrupted" and state == "timeout"):
            return
        self.state = state
        self.by = by
        for button in self.buttons.values():
            button.disabled = True
        verdict, colour = _VERDICTS.get(state, (state, "#6e7781"))
        who = f" by {h(by)}" if by and by != "user" else ""
        note_html = f" <small>{h(note)}</small>" if note else ""
        self.header.value = (
            f'<span class="approval-verdict" style="color:{colour}"><b>{verdict}</b>{who}</span>: '
            f"<code>{h(self.request.tool)}</code> {h(short(self.request.key or '', 60))}{note_html}"
        )
        self.why.layout.display = "none"
        self.preview.layout.display = "none"
        self.row.layout.display = "none"

    def details(self) -> dict[str, Any]:
        """What the card shows, as data (for text fallbacks and tests)."""
        return {"tool": self.request.tool, "preview": self.request.preview, "state": self.state}
