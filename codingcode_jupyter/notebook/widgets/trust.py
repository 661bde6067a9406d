"""The trust card: what a project's own files ask for, item by item, and two buttons.

Shown in the first ``%%agent`` cell of a project whose files ask for anything that loosens
the agent (and by ``%agent trust``). Each item is shown exactly as it would run, with the
file it comes from; ``Trust this project`` applies them (remembered per content), ``Not
now`` runs the turn without them. Clicks resolve the answer future through the loop, as
on the approval card (a click may arrive on a kernel thread of its own).
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from pathlib import Path
from typing import Literal

import ipywidgets as widgets

from ...engine.front import TrustAnswer
from ...engine.trust.items import TrustItem
from ._answers import answer_from_click
from ._text import h

__all__ = ["TrustCard", "TrustAnswer", "TRUST_BUTTONS", "trust_lines"]

TRUST_BUTTONS: dict[str, TrustAnswer] = {"Trust this project": "trust", "Not now": "not_now"}


def _where(item: TrustItem, project: Path) -> str:
    try:
        return str(item.path.relative_to(project))
    except ValueError:
        return str(item.path)


def trust_lines(items: list[TrustItem], project: Path) -> list[str]:
    """The items as plain text, grouped by the file they come from (for terminals and records)."""
    groups: dict[str, list[TrustItem]] = defaultdict(list)
    for item in items:
        groups[_where(item, project)].append(item)
    lines = []
    for where, group in groups.items():
        lines.append(f"{where}:")
        lines.extend(f"  - {item.summary}" for item in group)
    return lines


class TrustCard(widgets.VBox):
    """One question: trust what this project asks for?"""

    def __init__(self, items: list[TrustItem], project: Path, *, loop: asyncio.AbstractEventLoop | None = None) -> None:
        self.items = items
        self.project = project
        self.state: TrustAnswer | Literal["pending", "interrupted", "no_frontend", "timeout"] = "pending"
        self._loop = loop or asyncio.get_event_loop()
        self.answer: asyncio.Future[TrustAnswer] = self._loop.create_future()
        groups: dict[str, list[TrustItem]] = defaultdict(list)
        for item in items:
            groups[_where(item, project)].append(item)
        body = "".join(
            f"<div><code>{h(where)}</code><ul style=\"margin:2px 0 4px 1.2em;padding:0\">"
            + "".join(f"<li>{h(item.summary)}</li>" for item in group) + "</ul></div>"
            for where, group in groups.items()
        )
        self.header = widgets.HTML(
            f"<b>This project's files ask for {len(items)} thing{'s' if len(items) != 1 else ''} that loosen the "
            "agent.</b> Until you trust the project they are ignored; rules that only restrict apply already."
        )
        self.body = widgets.HTML(body)
        self.buttons = {label: widgets.Button(description=label, button_style="warning" if value == "trust" else "")
                        for label, value in TRUST_BUTTONS.items()}
        for label, button in self.buttons.items():
            button.layout.width = "auto"
            button.on_click(lambda _b, label=label: self._clicked(label))
        self.row = widgets.HBox(list(self.buttons.values()))
        super().__init__([self.header, self.body, self.row],
                         layout=widgets.Layout(border="1px solid var(--jp-border-color1, #d0d7de)",
                                               padding="4px 8px", margin="4px 0"))
        self.add_class("codingcode-trust")

    def click(self, label: str) -> None:
        """Press a button from Python, as a person would (tests, scripts)."""
        self.buttons[label].click()

    def _clicked(self, label: str) -> None:
        if self.state != "pending":
            return
        answer = TRUST_BUTTONS[label]
        self.settle(answer)

        answer_from_click(self._loop, self.answer, answer)

    def settle(self, state: TrustAnswer | Literal["interrupted", "no_frontend", "timeout"], note: str = "") -> None:
        """Show the answer: buttons gone, one line saying what now applies."""
        if self.state != "pending":
            return
        self.state = state
        for button in self.buttons.values():
            button.disabled = True
        self.row.layout.display = "none"
        count = len(self.items)
        verdicts = {
            "trust": f"Trusted: the {count} item{'s' if count != 1 else ''} below now apply (%agent trust --revoke forgets it).",
            "not_now": "Not trusted for now: this session runs without them (%agent trust asks again).",
            "interrupted": "Not answered (interrupted): the project stays untrusted.",
            "no_frontend": "Nobody could answer: the project stays untrusted.",
            "timeout": f"Not answered ({note or 'timed out'}): the project stays untrusted.",
        }
        self.header.value = f"<b>{h(verdicts[state])}</b>"
