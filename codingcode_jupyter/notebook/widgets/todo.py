"""The live todo list: redrawn from each TodoUpdated event."""

from __future__ import annotations

from typing import Any

import ipywidgets as widgets

from ...engine.events import TodoItem
from ..record import todo_html

__all__ = ["TodoWidget"]


class TodoWidget(widgets.HTML):
    """The session's todo list, one line per step with its status."""

    def __init__(self, items: list[TodoItem] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.add_class("codingcode-todo")
        self.items: list[TodoItem] = []
        self.show(items or [])

    def show(self, items: list[TodoItem]) -> None:
        """Replace the list."""
        self.items = list(items)
        self.value = todo_html(self.items)
