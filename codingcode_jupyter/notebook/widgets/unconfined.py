"""The no-sandbox card: once per session, how commands that would run unconfined are handled.

Shown the first time a command the mode or a rule allowed would run without a sandbox (none
can start here); three buttons, the engine's answers (:mod:`...engine.approval.unconfined`).
Clicks resolve the answer future through the loop, as on the other cards (a click may arrive on
a kernel thread of its own).
"""

from __future__ import annotations

import asyncio
from typing import Literal

import ipywidgets as widgets

from ...engine.approval.unconfined import UNCONFINED_CHOICES, UnconfinedAnswer, UnconfinedRequest
from ._answers import answer_from_click
from ._text import h, reveal

__all__ = ["UnconfinedCard", "unconfined_lines", "unconfined_settled"]

# What each answer does, in the words of the card and the terminal.
_EXPLAINED: dict[UnconfinedAnswer, str] = {
    "ask_each": "you are asked about every command that is not read-only (as until now)",
    "session": "commands the judge can follow run as the mode and your rules say, without confinement; what it "
               "cannot follow is still asked",
    "never": "saves sandbox.failIfUnavailable: true in {path}: no command runs unconfined (read-only ones still do); "
             "remove it to be asked again",
}


def unconfined_lines(request: UnconfinedRequest) -> list[str]:
    """The card as plain text (terminals, records): why, the command, and what each answer does."""
    lines = [f"No sandbox can confine commands here ({reveal(request.why)}).",
             f"The agent wants to run: {reveal(request.command)}",
             "Unconfined, a command runs with all your access: your files, credentials and network. Read-only "
             "commands (ls, git status, ...) run either way."]
    for answer, label in UNCONFINED_CHOICES.items():
        lines.append(f"  - {label}: {_EXPLAINED[answer].format(path=request.settings_path)}")
    return lines


def unconfined_settled(answer: UnconfinedAnswer | Literal["interrupted", "no_frontend"], path: str = "") -> str:
    """One line saying what now applies (the settled card, the saved record)."""
    return {
        "ask_each": "No sandbox: every command that is not read-only is asked (Ask for each command).",
        "session": "No sandbox: ordinary commands run unconfined for this session, as the mode and rules say; what "
                   "cannot be judged is still asked.",
        "never": f"No sandbox: no command runs unconfined on this machine (sandbox.failIfUnavailable saved in {path}).",
        "interrupted": "Not answered (interrupted): commands are asked one by one.",
        "no_frontend": "Nobody could answer: commands are asked one by one.",
    }[answer]


class UnconfinedCard(widgets.VBox):
    """One question per session: no sandbox here, so how are commands run?"""

    def __init__(self, request: UnconfinedRequest, *, loop: asyncio.AbstractEventLoop | None = None) -> None:
        self.request = request
        self.state: UnconfinedAnswer | Literal["pending", "interrupted", "no_frontend"] = "pending"
        self._loop = loop or asyncio.get_event_loop()
        self.answer: asyncio.Future[UnconfinedAnswer] = self._loop.create_future()
        self.header = widgets.HTML(
            f"<b>No sandbox can confine commands here</b> ({h(request.why)}). Unconfined, a command runs with all "
            "your access: your files, credentials and network. Read-only commands (ls, git status, ...) run either way.")
        items = "".join(f"<li><b>{h(label)}</b>: {h(_EXPLAINED[answer].format(path=request.settings_path))}</li>"
                        for answer, label in UNCONFINED_CHOICES.items())
        self.body = widgets.HTML(f"<div>The agent wants to run <code>{h(request.command)}</code>.</div>"
                                 f"<ul style=\"margin:2px 0 4px 1.2em;padding:0\">{items}</ul>")
        self.buttons = {label: widgets.Button(description=label, button_style="warning" if answer == "session" else "")
                        for answer, label in UNCONFINED_CHOICES.items()}
        for label, button in self.buttons.items():
            button.layout.width = "auto"
            button.on_click(lambda _b, label=label: self._clicked(label))
        self.row = widgets.HBox(list(self.buttons.values()))
        super().__init__([self.header, self.body, self.row],
                         layout=widgets.Layout(border="1px solid var(--jp-border-color1, #d0d7de)",
                                               padding="4px 8px", margin="4px 0"))
        self.add_class("codingcode-unconfined")

    def click(self, label: str) -> None:
        """Press a button from Python, as a person would (tests, scripts)."""
        self.buttons[label].click()

    def _clicked(self, label: str) -> None:
        if self.state != "pending":
            return
        answer = next(answer for answer, text in UNCONFINED_CHOICES.items() if text == label)
        self.settle(answer)
        answer_from_click(self._loop, self.answer, answer)

    def settle(self, state: UnconfinedAnswer | Literal["interrupted", "no_frontend"]) -> None:
        """Show the answer: buttons gone, one line saying what now applies."""
        if self.state != "pending":
            return
        self.state = state
        for button in self.buttons.values():
            button.disabled = True
        self.row.layout.display = "none"
        self.header.value = f"<b>{h(unconfined_settled(state, self.request.settings_path))}</b>"
