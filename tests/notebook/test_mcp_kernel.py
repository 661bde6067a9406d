"""MCP in a real kernel: servers listed before the first cell, an MCP prompt as the request,
and a server's form answered with clicks over the wire (server-everything)."""

from __future__ import annotations

import json

import pytest

from tests.engine.mcp_real import EVERYTHING, NODE, needs
from tests.fakes.anthropic_server import Reply, text, tool_use
from tests.notebook.test_kernel import _button, _render, kernel  # noqa: F401 - the fixture

pytestmark = [pytest.mark.kernel, needs(EVERYTHING, "@modelcontextprotocol/server-everything")]


def _configure(kernel) -> None:
    (kernel.project / ".mcp.json").write_text(json.dumps(
        {"mcpServers": {"everything": {"command": NODE, "args": [str(EVERYTHING), "stdio"]}}}))


def _wait_running(kernel) -> None:
    # Servers start in the background; a scripted model that calls a tool at once must wait.
    def ready():
        msg_id = kernel.execute("%agent mcp")
        kernel.reply(msg_id)
        return "everything [stdio] running" in kernel.text_output(msg_id)

    kernel.wait_for(ready, 60, "server-everything running")


def test_servers_known_before_the_first_cell_and_a_prompt_as_the_request(kernel):
    _configure(kernel)
    msg_id = kernel.execute("%agent mcp")
    assert kernel.reply(msg_id)["status"] == "ok"
    assert "everything [stdio]" in kernel.text_output(msg_id)
    kernel.fake.add(Reply([text("Paris it is.")]))
    msg_id = kernel.execute("%%agent /everything:args-prompt city=Paris state='Île-de-France'")
    reply = kernel.reply(msg_id, timeout=60)
    assert reply["status"] == "ok", kernel.text_output(msg_id)
    sent = json.dumps(kernel.fake.requests[-1]["messages"][0], ensure_ascii=False)
    assert "Paris" in sent and "Île-de-France" in sent
    msg_id = kernel.execute("%%agent /everything:args-prompt state=NY")
    assert kernel.reply(msg_id)["status"] == "error" and "missing 'city'" in kernel.text_output(msg_id)


def test_a_servers_form_is_answered_in_the_cell(kernel):
    _configure(kernel)
    _wait_running(kernel)
    kernel.fake.add(
        Reply([tool_use("everything__trigger-elicitation-request", {}, id="toolu_e1")]),
        Reply([text("Thanks.")]),
    )
    msg_id = kernel.execute("%%agent --mode bypass\nAsk me for my details")
    _render(kernel, msg_id)
    name = kernel.wait_for(lambda: (kernel.find(_model_name="TextModel", description="String *") or [None])[0], 60,
                           "the form's name field")
    kernel.send_comm(name, {"method": "update", "state": {"value": "Ada Lovelace"}, "buffer_paths": []})
    kernel.click(_button(kernel, "Accept"))
    reply = kernel.reply(msg_id, timeout=60)
    assert reply["status"] == "ok", kernel.text_output(msg_id)
    result = json.dumps(kernel.fake.requests[1]["messages"][-1]["content"])
    assert "Name: Ada Lovelace" in result
