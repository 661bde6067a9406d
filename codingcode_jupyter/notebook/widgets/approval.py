"""The approval card: what will happen, why it is asked, what each button does.

A click may arrive on a kernel thread other than the event loop's (ipykernel 7 subshells),
so the answer future is resolved through ``loop.call_soon_threadsafe``. After the first
answer the buttons are disabled and the card says its decision; the view then puts the
call's row back in its place (one row per action).
"""

from __future__ import annotations

import asyncio
from typing import Any, Literal

import ipywidgets as widgets

from ...engine.approval.types import Answer, ApprovalRequest
from .. import theme, words
from ..record import is_diff
from ..rendering import diff_html, pre
from ._answers import answer_from_click
from ._text import h, pretty_json, short
from .preview import PreviewPanel

__all__ = ["ApprovalCard", "BUTTONS", "CardState"]

# Labels exactly as the issue specifies; tests and the browser find buttons by them.
BUTTONS: dict[str, Answer] = {"Allow": "allow", "Deny": "deny", "Always allow": "always", "Never allow": "never"}
_STYLES = {"Allow": "success", "Deny": "danger", "Always allow": "", "Never allow": "warning"}

CardState = Literal["pending", "allow", "deny", "always", "never", "timeout", "interrupted", "no_frontend"]

_VERDICTS = {
    "allow": ("check", "ok", "Allowed"),
    "always": ("check", "ok", "Always allowed"),
    "deny": ("cross", "bad", "Denied"),
    "never": ("cross", "bad", "Never allowed"),
    "timeout": ("clock", "warn", "Timed out — denied"),
    "interrupted": ("stop", "muted", "Interrupted"),
    "no_frontend": ("cross", "warn", "Denied — nobody could answer"),
}


def _preview_html(request: ApprovalRequest, project: Any) -> str:
    preview = request.preview or ""
    if is_diff(preview):
        return diff_html(preview)
    if not preview:
        return pre(h(pretty_json(request.input)))
    return pre(h(words.relative(preview, project)), extra="max-height:24em")


def _why_html(request: ApprovalRequest, project: Any) -> str:
    why = words.why_asked(request.layer, request.rule, request.reason, project)
    extra = []
    if request.sandboxed is not None:
        extra.append("It runs in the sandbox: no network, writes only inside the project." if request.sandboxed
                     else "<b>It runs without a sandbox.</b>")
    if request.annotations:
        extra.append("The server describes it as <code>" + h(pretty_json(request.annotations)) + "</code> (not checked).")
    return f'<div style="color:{theme.MUTED};line-height:1.45;margin:2px 0">{words.code_html(why)} {" ".join(extra)}</div>'


class ApprovalCard(widgets.VBox):
    """One pending tool call awaiting a person's answer."""

    def __init__(self, request: ApprovalRequest, *, loop: asyncio.AbstractEventLoop | None = None,
                 project: Any = None) -> None:
        self.request = request
        self.project = project
        self.state: CardState = "pending"
        self.by = ""
        self._loop = loop or asyncio.get_event_loop()
        self.answer: asyncio.Future[Answer] = self._loop.create_future()
        # The sentence names what happens; the tool's internal name is jargon (it stays in the tooltip).
        agent = f' <span style="color:{theme.MUTED}">(sub-agent {h(request.agent)})</span>' if request.agent != "main" else ""
        sentence = words.action(request.tool, request.input, key=request.key, preview=request.preview, project=project)
        self.header = widgets.HTML(
            f'<span title="{h(request.tool)}">{theme.icon("question", "warn")} '
            f"<b>Allow the agent to {words.code_html(sentence)}?</b></span>{agent}"
        )
        self.why = widgets.HTML(_why_html(request, project))
        self.preview = widgets.HTML(_preview_html(request, project))
        self.buttons = {label: widgets.Button(description=label, button_style=_STYLES[label]) for label in BUTTONS}
        for label, button in self.buttons.items():
            button.on_click(lambda _b, label=label: self._clicked(label))
        # A command that does more than read: Preview runs it first in a throwaway copy of the project.
        self.dry_run = PreviewPanel(request, self._loop) if request.dry_run is not None else None
        extra = [self.dry_run.button] if self.dry_run is not None else []
        # What the organisation's policy holds is answered once: no rule to save is offered.
        shown = [b for label, b in self.buttons.items() if not (request.policy and label in ("Always allow", "Never allow"))]
        self.row = widgets.HBox([*shown, *extra])
        self.consequences = widgets.HTML()
        # Several rules may fit "Always allow" (this exact call, the program, the directory...):
        # the narrowest is chosen; the person may pick a broader one the pipeline offered.
        # Each choice in words, as the title says what happens; the rule as the settings file gets it is
        # the tooltip, and the note after the words below.
        self.choice = widgets.Dropdown(
            options=[(words.plain(words.rules_words(rules)) + " from now on", index)
                     for index, rules in enumerate(request.allow_choices)],
            value=0 if request.allow_choices else None, description="Always allow:",
            style={"description_width": "initial"}, layout=widgets.Layout(width="auto", max_width="100%"),
        )
        if len(request.allow_choices) < 2 or request.forced or request.policy:
            self.choice.layout.display = "none"
        self.choice.observe(lambda _change: self._explain(), names="value")
        self._explain()
        super().__init__(
            [self.header, self.why, self.preview, self.row, *([self.dry_run.view] if self.dry_run else []),
             self.choice, self.consequences],
            layout=widgets.Layout(border=f"1px solid {theme.var('border-color1', '#bdbdbd')}", padding="4px 8px",
                                  margin="4px 0"),
        )
        self.add_class("codingcode-approval")

    def rules_for(self, answer: str) -> list[str] | None:
        """The rules "Always allow" (as picked) or "Never allow" will save; None when none is offered."""
        if answer == "always" and self.request.allow_choices and not self.request.forced:
            return list(self.request.allow_choices[self.choice.value or 0])
        if answer == "never" and self.request.deny_choices:
            return list(self.request.deny_choices[0])
        return None

    def _explain(self) -> None:
        request = self.request
        chosen = self.rules_for("always")
        self.choice.tooltip = ", ".join(chosen or [])
        self.consequences.value = (
            f'<div class="cc-consequences" style="color:{theme.MUTED};font-size:.92em;line-height:1.45;margin:2px 0">'
            f"{words.code_html(request.policy or words.consequences(request.allow_choices, request.deny_choices, request.forced, chosen))}</div>"
        )

    # -- answering -----------------------------------------------------------------------

    def click(self, label: str) -> None:
        """Press a button from Python, as a person would (tests, scripts)."""
        self.buttons[label].click()

    def _clicked(self, label: str) -> None:
        answer = BUTTONS[label]
        if self.state != "pending":
            return
        self.settle(answer, by="user")

        answer_from_click(self._loop, self.answer, answer)

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
        name, role, verdict = _VERDICTS.get(state, ("dot", "muted", state))
        who = f" by {h(by)}" if by and by not in ("user", "timeout") else ""
        note_html = f" <small>{h(note)}</small>" if note else ""
        self.header.value = (
            f'<span class="approval-verdict" style="color:{theme.ROLE[role]}">{theme.icon(name)} <b>{verdict}</b>{who}</span>: '
            f"<code>{h(self.request.tool)}</code> {h(short(words.relative(self.request.key or '', self.project), 60))}{note_html}"
        )
        for part in (self.why, self.preview, self.row, self.choice, self.consequences):
            part.layout.display = "none"
        if self.dry_run is not None:
            self.dry_run.hide()

    def details(self) -> dict[str, Any]:
        """What the card shows, as data (for text fallbacks and tests)."""
        shown: dict[str, Any] = {"tool": self.request.tool, "preview": self.request.preview, "state": self.state}
        if self.dry_run is not None:
            shown["dry_run"] = self.dry_run.details()
        return shown
