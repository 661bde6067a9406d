"""The organisation's managed settings in a real kernel: the person sees the policy, cannot switch to a
mode it forbids, and a card about a call it asks about offers no "Always allow"."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from tests.fakes.anthropic_server import Reply, text, tool_use
from tests.notebook.kernel_harness import agent_kernel

pytestmark = pytest.mark.kernel

POLICY = {"permissions": {"ask": ["Bash(pytest:*)"], "deny": ["Bash(curl:*)"],
                          "disableBypassPermissionsMode": "disable"},
          "availableModels": ["claude-test"]}


@pytest.fixture
def policy() -> Path:
    path = Path(os.environ["CODINGCODE_MANAGED_DIR"]) / "managed-settings.json"
    path.write_text(json.dumps(POLICY))
    return path


def test_the_policy_shows_holds_the_mode_and_offers_no_always(tmp_path, policy):
    with agent_kernel(sys.executable, tmp_path) as k:
        # The project would allow pytest; the policy asks about it every time.
        (k.project / ".codingcode").mkdir()
        (k.project / ".codingcode" / "settings.json").write_text(json.dumps(
            {"permissions": {"allow": ["execute_command(pytest *)"]}}))
        out = k.ok("%agent mode bypass")["output"]
        assert "The mode stays default" in out and "disableBypassPermissionsMode" in out
        assert len(out.strip().splitlines()) == 1, out
        status = k.ok("%agent status")["output"]
        assert "policy" in status and str(policy) in status
        doctor = k.ok("%agent doctor")["output"]
        assert "Managed policy" in doctor and "allowManaged" not in doctor.split("Managed policy")[0]

        k.fake.add(Reply([tool_use("execute_command", {"command": "pytest -q"})]), Reply([text("Left it.")]))
        cell = k.execute("%%agent\nrun the tests")
        allow = k.wait_for(lambda: (k.find(_model_name="ButtonModel", description="Allow", disabled=False) or [None])[-1],
                           60, "the card's Allow button")
        # The card makes all four buttons (their models arrive one by one) and shows two.
        always = k.wait_for(lambda: k.find(_model_name="ButtonModel", description="Always allow"), 30, "Always allow")
        # The card's row of buttons (its model may arrive just after the buttons').
        row = k.wait_for(lambda: next((state for state in k.widgets.values()
                                       if f"IPY_MODEL_{allow}" in (state.get("children") or [])), None), 30, "the row")
        assert always and not any(f"IPY_MODEL_{cid}" in row["children"] for cid in always)
        k.click(k.find(_model_name="ButtonModel", description="Deny", disabled=False)[-1])
        assert k.reply(cell, 60)["status"] == "ok"

        # A model the policy does not list is not sent to.
        cell = k.execute("%%agent --model claude-opus-4-5\nhello")
        k.reply(cell, 60)
        assert "availableModels" in k.text_output(cell)
        assert all(request["model"] != "claude-opus-4-5" for request in k.fake.requests)


def test_a_server_the_policy_refuses_is_said_in_one_line_where_the_person_looks(tmp_path):
    fake = str(Path(__file__).resolve().parents[1] / "fakes" / "mcp_server.py")
    policy = Path(os.environ["CODINGCODE_CLAUDE_MANAGED_DIR"]) / "managed-settings.json"
    policy.write_text(json.dumps({"deniedMcpServers": [{"serverName": "blocked"}, {"serverName": "added"}]}))
    with agent_kernel(sys.executable, tmp_path) as k:
        server = {"command": sys.executable, "args": [fake, "stdio"]}
        (k.project / ".mcp.json").write_text(json.dumps({"mcpServers": {"blocked": server, "ok": server}}))
        refused = "not started: refused by your organisation's policy (deniedMcpServers in"
        listing = k.ok("%agent mcp")["output"]
        assert f"blocked {refused}" in listing and "ok [stdio]" in listing, listing
        assert [line for line in listing.splitlines() if "blocked" in line] == [
            f"blocked {refused} {policy}: serverName blocked)"]
        status = k.ok("%agent status")["output"]
        assert f"blocked {refused}" in status and "ok (" in status, status
        added = k.execute(f"%agent mcp add added {sys.executable} {fake} stdio")
        k.reply(added, 60)
        assert "cannot add MCP server 'added': refused by your organisation's policy" in k.text_output(added)
