"""A server's request for input, as a form in the cell: Accept / Decline / Cancel.

Built from the engine's :class:`FormField` s: text fields, number fields, a checkbox, a
drop-down for a choice of one and a multi-select for a choice of several. Accept checks
the answer against the same fields (:func:`check_answer`) and shows what is wrong instead
of sending it. URL mode shows the link to open; Accept then means "I opened it".
Like the approval card, clicks may arrive on another thread, so the answer is resolved
on the event loop's, and :meth:`click` presses a button from Python (tests).
"""

from __future__ import annotations

import asyncio
from typing import Any, Literal

import ipywidgets as widgets

from ...engine.mcp.elicitation import (
    ElicitationRequest,
    ElicitationResponse,
    FormField,
    check_answer,
)
from ._answers import answer_from_click
from ._text import h

__all__ = ["ElicitationForm", "FORM_BUTTONS"]

FORM_BUTTONS = ("Accept", "Decline", "Cancel")
FormState = Literal["pending", "accept", "decline", "cancel", "interrupted", "no_frontend"]
_VERDICTS = {
    "accept": ("✔ Sent", "#1a7f37"),
    "decline": ("✖ Declined", "#cf222e"),
    "cancel": ("◼ Cancelled", "#6e7781"),
    "interrupted": ("◼ Interrupted", "#6e7781"),
    "no_frontend": ("✖ Declined — nobody could answer", "#9a6700"),
}

def _input(field: FormField) -> widgets.Widget:
    style = {"description_width": "initial"}
    label = field.title + (" *" if field.required else "")
    if field.kind == "boolean":
        return widgets.Checkbox(value=bool(field.default), description=label, indent=False)
    if field.kind == "choice":
        options: list[tuple[str, str | None]] = [(choice.label, choice.value) for choice in field.choices]
        if not field.required or field.default is None:
            options = [("—", None), *options]
        default = field.default if any(value == field.default for _, value in options) else None
        return widgets.Dropdown(options=options, value=default, description=label, style=style)
    if field.kind == "choices":
        options = [(choice.label, choice.value) for choice in field.choices]
        default = tuple(v for v in (field.default or []) if any(v == value for _, value in options))
        return widgets.SelectMultiple(options=options, value=default, description=label, style=style)
    if field.kind in ("number", "integer") and isinstance(field.default, (int, float)) and not isinstance(field.default, bool):
        cls = widgets.IntText if field.kind == "integer" else widgets.FloatText
        return cls(value=field.default, description=label, style=style)
    # Text, and numbers without a default: a text box may stay empty, a number box cannot.
    placeholder = field.format or ("a number" if field.kind in ("number", "integer") else "")
    default = field.default if isinstance(field.default, str) else ("" if field.default is None else str(field.default))
    return widgets.Text(value=default, placeholder=placeholder, description=label, style=style)


class ElicitationForm(widgets.VBox):
    """One request for input, waiting for the person's answer."""

    def __init__(self, request: ElicitationRequest, *, loop: asyncio.AbstractEventLoop | None = None) -> None:
        self.request = request
        self.state: FormState = "pending"
        self._loop = loop or asyncio.get_event_loop()
        self.answer: asyncio.Future[ElicitationResponse] = self._loop.create_future()
        self.header = widgets.HTML(f"<b>MCP server <code>{h(request.server)}</code> asks</b>: {h(request.message)}")
        self.inputs: dict[str, widgets.Widget] = {f.name: _input(f) for f in request.fields}
        # Optional booleans and numbers have no "empty": they count only once touched.
        self._touched: set[str] = set()
        for name, box in self.inputs.items():
            box.observe(lambda _change, name=name: self._touched.add(name), names="value")
        rows: list[widgets.Widget] = []
        for f in request.fields:
            rows.append(self.inputs[f.name])
            if f.description:
                rows.append(widgets.HTML(f'<div style="opacity:.7;margin:-4px 0 4px 0"><small>{h(f.description)}</small></div>'))
        if request.mode == "url" and request.url:
            rows.append(widgets.HTML(
                f'<div>Open <a href="{h(request.url)}" target="_blank" rel="noopener noreferrer">{h(request.url)}</a>'
                " — then Accept to tell the server you did.</div>"))
        self.fields_box = widgets.VBox(rows)
        self.errors = widgets.HTML()
        self.buttons = {
            label: widgets.Button(description=label, button_style=style)
            for label, style in zip(FORM_BUTTONS, ("success", "danger", ""))
        }
        for label, button in self.buttons.items():
            button.on_click(lambda _b, label=label: self._clicked(label))
        self.row = widgets.HBox(list(self.buttons.values()))
        super().__init__(
            [self.header, self.fields_box, self.errors, self.row],
            layout=widgets.Layout(border="1px solid #d0d7de", padding="4px 8px", margin="4px 0"),
        )
        self.add_class("codingcode-elicitation")

    # -- answering -------------------------------------------------------------------------

    def click(self, label: str) -> None:
        """Press a button from Python, as a person would (tests, scripts)."""
        self.buttons[label].click()

    def values(self) -> dict[str, Any]:
        """What the form holds now, as the server's fields (unset optional fields left out)."""
        out: dict[str, Any] = {}
        for f in self.request.fields:
            box = self.inputs[f.name]
            value = box.value
            if f.kind == "choices":
                value = list(value)
            if f.kind in ("boolean", "number", "integer") and not isinstance(box, widgets.Text):
                if not f.required and f.default is None and f.name not in self._touched:
                    continue
            out[f.name] = value
        return out

    def _clicked(self, label: str) -> None:
        if self.state != "pending":
            return
        if label == "Accept":
            if self.request.mode == "url":
                response = ElicitationResponse.accept()
            else:
                content, problems = check_answer(self.request.fields, self.values())
                if problems:
                    self.errors.value = '<div style="color:#cf222e">' + "<br>".join(h(p) for p in problems) + "</div>"
                    return
                response = ElicitationResponse.accept(content)
        elif label == "Decline":
            response = ElicitationResponse.decline()
        else:
            response = ElicitationResponse.cancel()
        self.settle(response.action)
        self._resolve(response)

    def _resolve(self, response: ElicitationResponse) -> None:
        answer_from_click(self._loop, self.answer, response)

    def settle(self, state: FormState, *, note: str = "") -> None:
        """Show the final state: buttons disabled, the form collapsed to one line."""
        if self.state != "pending":
            return
        self.state = state
        for button in self.buttons.values():
            button.disabled = True
        verdict, colour = _VERDICTS.get(state, (state, "#6e7781"))
        note_html = f" <small>{h(note)}</small>" if note else ""
        self.header.value = (f'<span class="elicitation-verdict" style="color:{colour}"><b>{verdict}</b></span>: '
                             f"input for <code>{h(self.request.server)}</code>{note_html}")
        for part in (self.fields_box, self.errors, self.row):
            part.layout.display = "none"
