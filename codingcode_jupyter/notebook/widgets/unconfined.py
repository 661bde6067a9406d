"""The no-sandbox card: once per session, how commands that would run unconfined are handled.

Shown the first time a command the mode or a rule allowed would run without a sandbox (none
can start here); three buttons, the engine's answers (:mod:`...engine.approval.unconfined`).
Clicks resolve the answer future through the loop, as on the other cards (a click may arrive on
a kernel thread of its own).
"""

from __future__ import annotations

import asyncio
from typing import Literal, cast

from ...engine.approval.types import UNCONFINED_CHOICES, UnconfinedAnswer, UnconfinedRequest
from ._choice_card import ChoiceCard
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


UnconfinedSettled = UnconfinedAnswer | Literal["interrupted", "no_frontend"]


def unconfined_settled(answer: UnconfinedSettled, path: str = "") -> str:
    """One line saying what now applies (the settled card, the saved record)."""
    return {
        "ask_each": "No sandbox: every command that is not read-only is asked (Ask for each command).",
        "session": "No sandbox: ordinary commands run unconfined for this session, as the mode and rules say; what "
                   "cannot be judged is still asked.",
        "never": f"No sandbox: no command runs unconfined on this machine (sandbox.failIfUnavailable saved in {path}).",
        "interrupted": "Not answered (interrupted): commands are asked one by one.",
        "no_frontend": "Nobody could answer: commands are asked one by one.",
    }[answer]


class UnconfinedCard(ChoiceCard[UnconfinedAnswer]):
    """One question per session: no sandbox here, so how are commands run?"""

    def __init__(self, request: UnconfinedRequest, *, loop: asyncio.AbstractEventLoop | None = None) -> None:
        self.request = request
        header = (f"<b>No sandbox can confine commands here</b> ({h(request.why)}). Unconfined, a command runs with "
                  "all your access: your files, credentials and network. Read-only commands (ls, git status, ...) run "
                  "either way.")
        items = "".join(f"<li><b>{h(label)}</b>: {h(_EXPLAINED[answer].format(path=request.settings_path))}</li>"
                        for answer, label in UNCONFINED_CHOICES.items())
        body = (f"<div>The agent wants to run <code>{h(request.command)}</code>.</div>"
                f"<ul style=\"margin:2px 0 4px 1.2em;padding:0\">{items}</ul>")
        choices = {label: answer for answer, label in UNCONFINED_CHOICES.items()}
        super().__init__(header, body, choices, weighty="session", css_class="codingcode-unconfined", loop=loop)

    def settled_line(self, state: str, note: str) -> str:
        return unconfined_settled(cast(UnconfinedSettled, state), self.request.settings_path)
