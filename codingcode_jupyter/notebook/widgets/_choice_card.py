"""A card asking one question of the session with a row of buttons (the trust card, the
no-sandbox card): the answer future, the clicks, and the settled line that replaces the buttons.

Clicks resolve the future through the loop, as on the approval card (a click may arrive on a
kernel thread of its own).
"""

from __future__ import annotations

import asyncio
from typing import Generic, TypeVar

import ipywidgets as widgets

from ._answers import answer_from_click
from ._text import h

__all__ = ["ChoiceCard"]

A = TypeVar("A", bound=str)


class ChoiceCard(widgets.VBox, Generic[A]):
    """``header`` and ``body`` (HTML) above one button per choice (label -> answer); the answer
    named ``weighty`` is the one that loosens the agent, so its button is coloured as a warning."""

    def __init__(self, header: str, body: str, choices: dict[str, A], *, weighty: A, css_class: str,
                 loop: asyncio.AbstractEventLoop | None = None) -> None:
        self.state: str = "pending"
        self._choices = choices
        self._loop = loop or asyncio.get_event_loop()
        self.answer: asyncio.Future[A] = self._loop.create_future()
        self.header = widgets.HTML(header)
        self.body = widgets.HTML(body)
        self.buttons = {label: widgets.Button(description=label, button_style="warning" if answer == weighty else "")
                        for label, answer in choices.items()}
        for label, button in self.buttons.items():
            button.layout.width = "auto"
            button.on_click(lambda _b, label=label: self._clicked(label))
        self.row = widgets.HBox(list(self.buttons.values()))
        super().__init__([self.header, self.body, self.row],
                         layout=widgets.Layout(border="1px solid var(--jp-border-color1, #d0d7de)",
                                               padding="4px 8px", margin="4px 0"))
        self.add_class(css_class)

    def click(self, label: str) -> None:
        """Press a button from Python, as a person would (tests, scripts)."""
        self.buttons[label].click()

    def _clicked(self, label: str) -> None:
        if self.state != "pending":
            return
        answer = self._choices[label]
        self.settle(answer)
        answer_from_click(self._loop, self.answer, answer)

    def settle(self, state: str, note: str = "") -> None:
        """Show the answer (or why there is none): buttons gone, one line saying what now applies."""
        if self.state != "pending":
            return
        self.state = state
        for button in self.buttons.values():
            button.disabled = True
        self.row.layout.display = "none"
        self.header.value = f"<b>{h(self.settled_line(state, note))}</b>"

    def settled_line(self, state: str, note: str) -> str:
        raise NotImplementedError
