"""The live todo list: redrawn from each TodoUpdated event."""

from __future__ import annotations

import ipywidgets as widgets

from ...engine.events import TodoItem
from ._text import h

__all__ = ["TodoWidget"]

_MARKS = {"pending": "☐", "in_progress": "▶", "completed": "☑"}


class TodoWidget(widgets.HTML):
    """The session's todo list, one line per step with its status."""

    def __init__(self, items: list[TodoItem] | None = None, **kwargs) -> None:
        super().__init__(**kwargs)
        self.add_class("codingcode-todo")
        self.items: list[TodoItem] = []
        self.show(items or [])

    def show(self, items: list[TodoItem]) -> None:
        """Replace the list."""
        self.items = list(items)
        if not self.items:
            self.value = "<b>Todo</b><div><i>no steps yet</i></div>"
            return
        rows = []
        for item in self.items:
            style = "text-decoration:line-through;opacity:.6" if item.status == "completed" else (
                "font-weight:bold" if item.status == "in_progress" else ""
            )
            rows.append(
                f'<div class="todo-item todo-{item.status}" style="{style}">{_MARKS[item.status]} {h(item.step)}</div>'
            )
        done = sum(1 for item in self.items if item.status == "completed")
        self.value = f"<b>Todo</b> ({done}/{len(self.items)})" + "".join(rows)
