"""The form a server's request for input becomes in the cell (no kernel needed)."""

from __future__ import annotations

import asyncio

import ipywidgets as widgets

from codingcode_jupyter.engine.events import McpLoginRequired
from codingcode_jupyter.engine.mcp.elicitation import ElicitationRequest, parse_form
from codingcode_jupyter.notebook.view import TextView, TurnView
from codingcode_jupyter.notebook.widgets.elicitation import ElicitationForm

SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "Your name", "description": "As on your passport", "minLength": 2},
        "age": {"type": "integer", "title": "Age", "minimum": 0, "maximum": 150},
        "ratio": {"type": "number", "title": "Ratio", "default": 0.5},
        "agree": {"type": "boolean", "title": "Agree"},
        "colour": {"type": "string", "title": "Colour", "oneOf": [{"const": "r", "title": "Red"}, {"const": "g", "title": "Green"}]},
        "tools": {"type": "array", "title": "Tools", "items": {"type": "string", "enum": ["saw", "drill"]}},
    },
    "required": ["name", "colour"],
}


def form_request(**over) -> ElicitationRequest:
    base = dict(server="everything", message="Tell me about you", fields=parse_form(SCHEMA), tool_use_id="t1")
    return ElicitationRequest(**{**base, **over})


async def test_fields_become_widgets_of_their_kind():
    form = ElicitationForm(form_request())
    inputs = form.inputs
    assert isinstance(inputs["name"], widgets.Text) and inputs["name"].description == "Your name *"
    assert isinstance(inputs["age"], widgets.Text)  # an optional number without default may stay empty
    assert isinstance(inputs["ratio"], widgets.FloatText) and inputs["ratio"].value == 0.5
    assert isinstance(inputs["agree"], widgets.Checkbox)
    assert isinstance(inputs["colour"], widgets.Dropdown) and ("Red", "r") in inputs["colour"].options
    assert isinstance(inputs["tools"], widgets.SelectMultiple)
    assert "As on your passport" in "".join(getattr(w, "value", "") for w in form.fields_box.children if isinstance(w, widgets.HTML))
    assert list(form.buttons) == ["Accept", "Decline", "Cancel"]


async def test_accept_checks_the_answer_and_sends_typed_values():
    form = ElicitationForm(form_request())
    form.inputs["name"].value = "A"  # too short, and the required colour is missing
    form.click("Accept")
    assert form.state == "pending" and not form.answer.done()
    assert "at least 2 characters" in form.errors.value and "Colour: required" in form.errors.value
    form.inputs["name"].value = "Ada"
    form.inputs["age"].value = "36"
    form.inputs["colour"].value = "g"
    form.inputs["tools"].value = ("drill",)
    form.click("Accept")
    response = await asyncio.wait_for(form.answer, 1)
    # An untouched optional checkbox is not sent as a "no" the person never gave.
    assert response.action == "accept"
    assert response.content == {"name": "Ada", "age": 36, "ratio": 0.5, "colour": "g", "tools": ["drill"]}
    assert form.state == "accept" and all(b.disabled for b in form.buttons.values()) and "Sent" in form.header.value
    form.click("Decline")  # a second answer changes nothing
    assert form.state == "accept"


async def test_decline_cancel_and_url_mode():
    declined = ElicitationForm(form_request())
    declined.click("Decline")
    assert (await declined.answer).action == "decline"
    cancelled = ElicitationForm(form_request())
    cancelled.click("Cancel")
    assert (await cancelled.answer).action == "cancel"
    url = ElicitationForm(ElicitationRequest(server="s", message="Pay", mode="url", url="https://pay.example/x?a=<b>"))
    link = "".join(w.value for w in url.fields_box.children)
    assert 'href="https://pay.example/x?a=&lt;b&gt;"' in link and 'target="_blank"' in link
    url.click("Accept")
    response = await url.answer
    assert response.action == "accept" and response.content is None


async def test_turn_view_shows_the_form_and_waits_for_the_click():
    view = TurnView(frontend_wait=0.5)
    view.root._view_count = 1  # a frontend rendered the cell
    task = asyncio.ensure_future(view.elicit(form_request()))
    await asyncio.sleep(0.05)
    [form] = view.forms
    assert form in view.main.children
    form.inputs["name"].value = "Grace"
    form.inputs["colour"].value = "r"
    form.click("Accept")
    response = await asyncio.wait_for(task, 2)
    assert response.action == "accept" and response.content["name"] == "Grace"


async def test_without_a_frontend_the_form_is_declined_and_said_so():
    view = TurnView(frontend_wait=0.1)
    response = await view.elicit(form_request())
    assert response.action == "decline" and view.forms[0].state == "no_frontend"
    assert any("Declined everything" in getattr(w, "value", "") and "no widget frontend" in w.value for w in view.main.children)
    text = []

    class Out:
        def write(self, s):
            text.append(s)

        def flush(self):
            pass

    assert (await TextView(out=Out()).elicit(form_request())).action == "decline"
    assert "Declined MCP server everything's request for input" in "".join(text)


async def test_login_notice_is_a_link():
    view = TurnView()
    view(McpLoginRequired(server="remote", url="https://auth.example/authorize?x=1&y=2", redirect_uri="http://127.0.0.1:1/callback",
                          text="log in"))
    html = view.main.children[-1].value
    assert 'href="https://auth.example/authorize?x=1&amp;y=2"' in html and "%agent mcp login remote ADDRESS" in html
